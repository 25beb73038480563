"""An adopted GKE cluster switched from manual to managed, on the real engine (issue: accounts and lifecycles).

The cluster is the loopback GKE fake whose endpoint is the loopback control plane: the gcp provider's
getCluster comes from the stand-in plugin (dev/e2e/gcp_provider.py, the real one is not buildable here),
the managed flag from the program's own dynamic resource in emulator mode, the releases from the loopback
chart repository. Runs after the other scenarios (file order) on a stack of its own, destroyed at the end.

Checks the order across the two updates: the first deletes the manual releases and leaves the flag off
(no PUT turning it on), the second turns it on; managed -> manual takes one update.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any

import pytest

from dev.e2e.control_plane import ControlPlane
from dev.e2e.harness import Project
from dev.fakes.gke_api import FakeGkeApi
from ml_diagnostics import compat
from mldiag.stacks import policy_config
from tests.fixtures.e2e import E2E_ENABLED, SKIP_REASON, TIMINGS, cert_manager_crds_served

pytestmark = pytest.mark.skipif(not E2E_ENABLED, reason=SKIP_REASON)

STACK = "e2e-gke"
PROJECT_ID, LOCATION, CLUSTER = "mldiag-e2e", "us-central1-a", "shared-train"
VERSION = "1.35.1-gke.1396000"  # past the managed threshold: both modes are possible
RELEASES = {
    ("cert-manager", "cert-manager"),
    (compat.MLDIAGNOSTICS_NAMESPACE, compat.INJECTION_WEBHOOK_RELEASE),
    (compat.MLDIAGNOSTICS_NAMESPACE, compat.CONNECTION_OPERATOR_RELEASE),
}


@pytest.fixture(scope="module")
def gke(control_plane: ControlPlane) -> Iterator[FakeGkeApi]:
    # Operations answer DONE as they start: the order across updates is what this test checks, and the
    # flag's poll schedule (15 s before its first poll) would add three waits of half a minute each.
    with FakeGkeApi(operation_polls=0, finish_at_once=True) as api:
        cluster = api.add_cluster(PROJECT_ID, LOCATION, CLUSTER, version=VERSION, managed=False)
        cluster["endpoint"] = control_plane.server.removeprefix("https://")
        ca = (control_plane.dir / "pki" / "ca.crt").read_bytes()
        cluster["masterAuth"] = {"clusterCaCertificate": base64.b64encode(ca).decode()}
        yield api


def config(mode: str, chart_repo: str, gke_api: str) -> dict[str, Any]:
    return {
        "environment": "staging",
        "gkeClusters": [
            {
                "name": "shared",
                "project": PROJECT_ID,
                "location": LOCATION,
                "clusterName": CLUSTER,
                "currentVersion": VERSION,
                "mode": mode,
                "workloadNamespaces": [{"name": "gke-team", "create": True}],
                "certManager": {"repository": chart_repo},
                "manualInstall": {"jaxVersion": "0.8", "repository": chart_repo},
            }
        ],
        "googleApi": {"endpoints": {"container": gke_api}, "emulator": True},
    }


def releases(cp: ControlPlane) -> set[tuple[str, str]]:
    found = set()
    for ns, name in RELEASES:
        r = cp.api(
            "GET", f"/api/v1/namespaces/{ns}/secrets", params={"labelSelector": f"owner=helm,name={name}"}
        )
        if r.status_code == 200 and r.json()["items"]:
            found.add((ns, name))
    return found


def flag_puts(api: FakeGkeApi) -> list[bool]:
    return [
        r.body["update"]["desiredManagedMachineLearningDiagnosticsConfig"]["enabled"]
        for r in api.requests
        if r.method == "PUT"
    ]


def ops(preview: dict[str, Any]) -> dict[str, str]:
    return {s["urn"].rsplit("::", 1)[-1]: s["op"] for s in preview.get("steps", []) if s["op"] != "same"}


def test_manual_to_managed_takes_two_updates_on_the_real_engine(
    e2e_bin, control_plane: ControlPlane, chart_repo, gke: FakeGkeApi, tmp_path_factory
) -> None:
    project = Project(tmp_path_factory.mktemp("e2e-gke"), e2e_bin)
    project.env |= {"MLDIAG_E2E_GKE_API": gke.url, "MLDIAG_E2E_KUBE_TOKEN": control_plane.token}
    project.init_stack(STACK, config("manual", chart_repo.url, gke.url))
    flag = (PROJECT_ID, LOCATION, CLUSTER)
    policy = policy_config.environment_defaults("staging")  # the e2e stacks are staging stacks
    policy["helm-allowed-repositories"] = {
        "enforcementLevel": "mandatory",
        "allowedRepositories": [chart_repo.url],
    }
    (project.root / "policy-gke.json").write_text(json.dumps(policy))
    pack = ["--policy-pack", "policies", "--policy-pack-config", str(project.root / "policy-gke.json")]

    # The adopted GKE target's preview with the policy pack: no mandatory finding.
    checked = project.pulumi("preview", *pack, stack=STACK)
    assert "[mandatory]" not in checked.stdout, checked.stdout
    project.pulumi("up", "--yes", "--skip-preview", *pack, stack=STACK)
    assert releases(control_plane) == RELEASES
    cert_manager_crds_served(control_plane)  # before step 1 uninstalls it
    assert gke.managed(*flag) is False
    assert project.pulumi("stack", "output", "pendingSteps", "--json", stack=STACK).json() == []

    project.set_config(STACK, config("managed", chart_repo.url, gke.url))
    preview = project.pulumi("preview", "--json", *pack, stack=STACK).json()
    planned = ops(preview)
    # The releases go, the flag resource does not change in this update; the stack reads its last outputs.
    assert planned["gke-shared-mldiag-manual-injection-webhook"] == "delete"
    assert planned["gke-shared-mldiag-cert-manager-release"] == "delete"
    assert "gke-shared-managed-mldiagnostics" not in planned
    assert planned["organization/ml-diagnostics/e2e-gke"] == "read"
    assert any("step 1 of 2" in d["message"] for d in preview.get("diagnostics", [])), preview

    puts_before = len(flag_puts(gke))
    step1 = project.pulumi("up", "--yes", "--skip-preview", stack=STACK)
    TIMINGS["switch step 1 (releases deleted)"] = step1.seconds
    assert releases(control_plane) == set()
    assert gke.managed(*flag) is False and True not in flag_puts(gke)[puts_before:]
    pending = project.pulumi("stack", "output", "pendingSteps", "--json", stack=STACK).json()
    assert len(pending) == 1 and "step 1 of 2" in pending[0]

    step2 = project.pulumi("up", "--yes", "--skip-preview", stack=STACK)
    TIMINGS["switch step 2 (flag on)"] = step2.seconds
    assert gke.managed(*flag) is True and flag_puts(gke)[-1] is True
    assert releases(control_plane) == set()
    assert project.pulumi("stack", "output", "pendingSteps", "--json", stack=STACK).json() == []
    project.pulumi("preview", "--expect-no-changes", stack=STACK)

    # managed -> manual: one update (the releases wait for the flag through their provider).
    project.set_config(STACK, config("manual", chart_repo.url, gke.url))
    project.pulumi("up", "--yes", "--skip-preview", stack=STACK)
    assert gke.managed(*flag) is False and releases(control_plane) == RELEASES

    cert_manager_crds_served(control_plane)
    project.pulumi("destroy", "--yes", "--skip-preview", stack=STACK)
    assert releases(control_plane) == set()
    assert gke.managed(*flag) is False  # the flag's value before the program first touched it
    project.pulumi("stack", "rm", "--yes", stack=STACK)
