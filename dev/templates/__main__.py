"""`python -m dev.templates KIND [--cloud CLOUD --new-cloud] --order N --part-order N` (dev/templates)."""

from __future__ import annotations

import argparse
from pathlib import Path

from dev.templates import Names, instantiate

ROOT = Path(__file__).resolve().parents[2]

parser = argparse.ArgumentParser(prog="python -m dev.templates", description=__doc__)
parser.add_argument("kind", help="snake_case name of the kind (lab_flavour)")
parser.add_argument("--cloud", default="kubernetes")
parser.add_argument("--new-cloud", action="store_true", help="also write program/clouds/<cloud>.py")
parser.add_argument("--order", type=int, required=True, help="its place in the table of kinds")
parser.add_argument("--part-order", type=int, required=True, help="its place among the library's parts")
opts = parser.parse_args()
for path in instantiate(ROOT, Names(opts.kind, opts.order, opts.part_order, opts.cloud), opts.new_cloud):
    print(f"wrote {path}")
