"""The real program with a stack transformation that records every resource's declared options.

Run by `tools.import_file.run_with_options` under the offline plan's mock runtime; not a Pulumi program of
its own.
"""

import runpy

import pulumi

from tools import import_file
from tools.plan_runtime import ROOT

pulumi.runtime.register_stack_transformation(import_file.record)
runpy.run_path(str(ROOT / "__main__.py"), run_name="__main__")
