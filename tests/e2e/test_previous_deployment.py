"""The real engine answers the program's StackReference to its own stack (components/previous_deployment.py)
with what the last deployment exported: what the manual -> managed switch relies on. A scratch program on
the real CLI and a file backend; no control plane needed."""

from __future__ import annotations

from pathlib import Path

import pytest

from dev.e2e.harness import Project
from tests.fixtures.e2e import E2E_ENABLED, SKIP_REASON

pytestmark = pytest.mark.skipif(not E2E_ENABLED, reason=SKIP_REASON)

PROGRAM = """
import pulumi
from program.previous_deployment import PreviousDeployment

previous = PreviousDeployment()
pulumi.export("name", PreviousDeployment.stack_name())
pulumi.export("mode", pulumi.Config().require("mode"))
pulumi.export("previousMode", previous.output("mode"))
"""


def test_previous_deployment_reads_the_last_update_of_this_stack(e2e_bin: Path, tmp_path: Path) -> None:
    project = Project(tmp_path, e2e_bin)
    (project.root / "__main__.py").write_text(PROGRAM)
    project.pulumi("stack", "init", "prev", "--secrets-provider", "passphrase")

    def up(mode: str) -> dict[str, str]:
        project.pulumi("config", "set", "mode", mode, stack="prev")
        project.pulumi("up", "--yes", "--skip-preview", stack="prev")
        return project.pulumi("stack", "output", "--json", stack="prev").json()

    first = up("manual")
    assert first == {"name": "organization/ml-diagnostics/prev", "mode": "manual"}  # nothing before it
    # A preview reads the same outputs the next update will.
    project.pulumi("config", "set", "mode", "managed", stack="prev")
    preview = project.pulumi("preview", "--diff", stack="prev")
    assert '+ previousMode: "manual"' in preview.stdout, preview.stdout
    assert up("managed")["previousMode"] == "manual"
    assert up("managed")["previousMode"] == "managed"
    project.pulumi("destroy", "--yes", "--skip-preview", stack="prev")
    project.pulumi("stack", "rm", "--yes", stack="prev")
