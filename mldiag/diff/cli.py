"""Offline diff of several stacks against a git ref, as one report (the offline-plan PR comment).

    mldiag diff [STACK ...] --base GITREF [--format table|json|markdown|dot] [--output FILE]

Without STACK, every `stacks/Pulumi.*.yaml` of the working tree. Each stack's section starts with its
headline (every costly replace or delete, the counts, whether it is blocked); a stack with nothing to review
is that one line. Markdown stays under GitHub's comment limit for all stacks together (the one-line stacks
first, the others share the rest equally; a stack's details are truncated first); it ends with the rollout
plan of each fleet file (fleet/*.yaml) the working tree changes, or whose environment stack file it changes.
Exit codes (mldiag/exit_codes.py): of several stacks the worst, 2 (a plan or git step failed) before 1 (a
mandatory policy violation) before 4 (Pulumi ESC environments not supplied, --esc-values) before 0.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from mldiag import esc
from mldiag.common import command_parser
from mldiag.diff import (
    EXIT_ERROR,
    GITHUB_COMMENT_LIMIT,
    ROOT,
    DiffError,
    diff_stacks,
    exit_code,
    render,
    render_markdown,
)
from mldiag.diff.headline import is_quiet
from mldiag.diff.render import FORMATS
from mldiag.diff.run import warn_unopened
from mldiag.exit_codes import worst

COMMENT_MARKER = "<!-- ml-diagnostics:offline-plan -->"


def all_stacks(project_dir: Path = ROOT) -> list[str]:
    """Stack names of `stacks/Pulumi.*.yaml`."""
    return sorted(
        p.name[len("Pulumi.") : -len(".yaml")] for p in (project_dir / "stacks").glob("Pulumi.*.yaml")
    )


def render_all(
    diffs: list[dict],
    fmt: str,
    base_ref: str,
    max_chars: int = GITHUB_COMMENT_LIMIT - 1536,
    fleets: str = "",
) -> str:
    """`fleets`: Markdown appended to the comment (the rollout plans of the fleet files the PR changes)."""
    if fmt == "json":
        return json.dumps(diffs, indent=2) + "\n"
    if fmt in ("table", "dot"):
        return "\n".join(render(d, fmt) for d in diffs)
    header = (
        f"{COMMENT_MARKER}\n## Offline plan: this pull request against `{base_ref}`\n\n"
        "Computed without cloud credentials (`mldiag plan STACK --diff-base REF`): replacements are "
        "shown only where the provider's rules make them certain; `pulumi preview` remains the authority.\n\n"
    )
    # A stack with nothing to review is one line: those first, then the others share what is left equally
    # (what one leaves goes to the next), each section starting with its headline.
    sections = {i: render_markdown(d) for i, d in enumerate(diffs) if is_quiet(d)}
    left = max_chars - len(header) - len(fleets) - sum(len(t) + 1 for t in sections.values())
    rest = [i for i in range(len(diffs)) if i not in sections]
    for n, i in enumerate(rest):
        sections[i] = render_markdown(diffs[i], max_chars=left // (len(rest) - n))
        left -= len(sections[i]) + 1
    return header + "".join(sections[i] + "\n" for i in range(len(diffs))) + fleets


def parser() -> argparse.ArgumentParser:
    p = command_parser("diff", __doc__)
    p.add_argument("stacks", nargs="*", help="stack names (default: every stacks/Pulumi.*.yaml)")
    p.add_argument(
        "--base", required=True, metavar="GITREF", help="git ref to compare against, e.g. origin/main"
    )
    p.add_argument("--format", choices=FORMATS, default="table")
    p.add_argument("--output", type=Path, help="write the report here instead of stdout")
    esc.add_argument(p)
    p.add_argument("--project-dir", type=Path, default=ROOT, help=argparse.SUPPRESS)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    stacks = args.stacks or all_stacks(args.project_dir)
    if not stacks:
        print("error: no stacks given and none found under stacks/", file=sys.stderr)
        return EXIT_ERROR
    try:
        diffs = diff_stacks(stacks, args.base, project_dir=args.project_dir, esc_values=args.esc_values)
    except DiffError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_ERROR
    for d in diffs:
        if "error" in d:
            print(f"error: stack {d['stack']}: {d['error']}", file=sys.stderr)
        warn_unopened(d)
    fleets = ""
    if args.format == "markdown":
        from mldiag.fleet.picture import comment_section

        fleets = comment_section(args.project_dir, args.base, max_chars=GITHUB_COMMENT_LIMIT // 4)
    text = render_all(diffs, args.format, args.base, fleets=fleets)
    if args.output:
        args.output.write_text(text)
    else:
        sys.stdout.write(text)
    return worst(*(exit_code(d) for d in diffs))


if __name__ == "__main__":
    sys.exit(main())
