"""Offline diff: the offline plan of a stack at a git ref against the working tree.

    mldiag plan STACK --diff-base GITREF [--format table|json|markdown|dot]
    mldiag diff [STACK ...] --base GITREF [--format ...]      (several stacks, one report)

`run_diff` checks GITREF out into a clean temporary `git worktree` (run.py), runs
`mldiag plan STACK --format json` there and in the working tree, and compares the two plans
(compare.py): resources matched by URN (or by an alias, a rename) are added, imported, renamed, deleted,
replaced or updated (changed input paths with old and new values, secrets masked; inputs.py), plus the
policy findings that are new in the working tree. "replace" is reported only where the provider's own
rules make it certain (rules.py). The offline plan cannot see the live state, so the real
`pulumi preview` may still find more.

Every format starts with the headline (headline.py): each replace or delete of a costly resource (danger.py:
clusters, node pools, ML extensions, Model Development Clusters, the adopted-GKE flag, namespaces holding
workloads), the count of all replaces and deletes, and whether the plan is blocked; a stack with nothing to
review is that one line. A blocked plan's findings come before the graph and the tables. Values the offline
plan invented (mock answers, secret placeholders: mldiag/engine/invented.py) are marked `(offline: invented)`.

Exit codes: 1 if the working tree's plan has a mandatory policy violation, else 0; 2 on error.
"""

from mldiag.common import EXIT_ERROR, EXIT_MANDATORY, EXIT_OK, GITHUB_COMMENT_LIMIT, ROOT
from mldiag.diff.compare import compare_violations, diff_plans, exit_code
from mldiag.diff.danger import DANGEROUS
from mldiag.diff.headline import headline, is_quiet
from mldiag.diff.inputs import diff_inputs
from mldiag.diff.render import render, render_json, render_markdown, render_table
from mldiag.diff.rules import ProviderDiffRule, default_rules, discover_dynamic_rules, replace_reasons
from mldiag.diff.run import DiffError, diff_stacks, run_diff

__all__ = [
    "DANGEROUS",
    "EXIT_ERROR",
    "EXIT_MANDATORY",
    "EXIT_OK",
    "GITHUB_COMMENT_LIMIT",
    "ROOT",
    "DiffError",
    "ProviderDiffRule",
    "compare_violations",
    "default_rules",
    "diff_inputs",
    "diff_plans",
    "diff_stacks",
    "discover_dynamic_rules",
    "exit_code",
    "headline",
    "is_quiet",
    "render",
    "render_json",
    "render_markdown",
    "render_table",
    "replace_reasons",
    "run_diff",
]
