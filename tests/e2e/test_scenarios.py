"""The e2e scenarios of issue 19, in order, on one scratch stack: the real CLI, language host, Kubernetes
provider, policy pack and dynamic provider against a loopback control plane, chart repository and Vertex
fake. Each test builds on the state the previous one left (that is the point: up, then no-op preview,
refresh, change, drift, destroy), so they run in file order and stop at the first failure (-x)."""

from __future__ import annotations

import base64
import copy
import gzip
import json
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests
import yaml

from dev.e2e import cert_manager_chart, plan_fidelity
from dev.e2e.harness import REPO, Project
from ml_diagnostics import compat
from mldiag.stacks import policy_config
from tests.fixtures.e2e import E2E_ENABLED, SKIP_REASON, TIMINGS, cert_manager_crds_served

pytestmark = pytest.mark.skipif(not E2E_ENABLED, reason=SKIP_REASON)

HERE = Path(__file__).parent
STACK = "e2e"
BAD_STACK = "e2e-bad"
PREEXISTING_NS = "research"
PREEXISTING_LABELS = {"owner": "platform", "cost-center": "ml-42"}
IMAGE_V1 = "us-docker.pkg.dev/hypercomputediagon-release/daemon/diagon-daemon:v2.1.0"
IMAGE_V2 = "us-docker.pkg.dev/hypercomputediagon-release/daemon/diagon-daemon:v2.1.1"


@dataclass
class E2E:
    project: Project
    cp: Any
    repo: Any
    vertex: Any
    policy_config: Path
    base_config: dict[str, Any]

    def pulumi(self, *args: str, **kw: Any):
        return self.project.pulumi(*args, stack=kw.pop("stack", STACK), **kw)

    def policy_args(self) -> list[str]:
        return ["--policy-pack", "policies", "--policy-pack-config", str(self.policy_config)]


def stack_config(repo_url: str, vertex_url: str) -> dict[str, Any]:
    text = (HERE / "Pulumi.e2e.yaml").read_text()
    text = text.replace("@CHART_REPO@", repo_url).replace("@VERTEX_API@", vertex_url)
    config = {k.split(":", 1)[1]: v for k, v in yaml.safe_load(text)["config"].items()}
    return config


@pytest.fixture(scope="module")
def e2e(e2e_project, control_plane, chart_repo, vertex_fake) -> E2E:
    project = e2e_project
    policy = policy_config.environment_defaults("staging")  # the e2e stacks are staging stacks
    policy["helm-allowed-repositories"] = {
        "enforcementLevel": "mandatory",
        "allowedRepositories": [chart_repo.url],
    }
    policy_path = project.root / "policy-e2e.json"
    policy_path.write_text(json.dumps(policy, indent=2))
    config = stack_config(chart_repo.url, vertex_fake.endpoint)
    project.init_stack(
        STACK, config, {"kubernetesClusters[0].kubeconfig": control_plane.kubeconfig.read_text()}
    )
    # The pre-existing namespace, created as a cluster admin would, with labels of its own.
    control_plane.api(
        "POST",
        "/api/v1/namespaces",
        json={"metadata": {"name": PREEXISTING_NS, "labels": PREEXISTING_LABELS}},
    ).raise_for_status()
    return E2E(project, control_plane, chart_repo, vertex_fake, policy_path, config)


def steps(preview_json: dict[str, Any]) -> dict[str, str]:
    """urn -> op for every step that is not `same`."""
    return {s["urn"]: s["op"] for s in preview_json.get("steps", []) if s["op"] != "same"}


def short(urn: str) -> str:
    return urn.rsplit("::", 1)[-1]


def subset_mismatches(expected: Any, live: Any, path: str = "") -> list[str]:
    """Paths where `live` differs from `expected` (extra live fields are fine)."""
    if isinstance(expected, dict):
        if not isinstance(live, dict):
            return [f"{path}: {live!r} is not a map"]
        out: list[str] = []
        for k, v in expected.items():
            out += subset_mismatches(v, live.get(k), f"{path}.{k}")
        return out
    if isinstance(expected, list):
        if not isinstance(live, list) or len(live) != len(expected):
            return [f"{path}: {live!r} != {expected!r}"]
        return [
            m
            for i, (e, x) in enumerate(zip(expected, live, strict=True))
            for m in subset_mismatches(e, x, f"{path}[{i}]")
        ]
    return [] if expected == live else [f"{path}: {live!r} != {expected!r}"]


def release_records(e2e: E2E, namespace: str, release: str) -> list[dict[str, Any]]:
    """A Helm release's records (its secrets `sh.helm.release.v1.<release>.v<N>`), by revision."""
    path = f"/api/v1/namespaces/{namespace}/secrets?labelSelector=owner=helm,name={release}"
    records = [
        json.loads(gzip.decompress(base64.b64decode(base64.b64decode(s["data"]["release"]))))
        for s in e2e.cp.get(path)["items"]
    ]
    return sorted(records, key=lambda r: r["version"])


# The CRDs the vendor's `--set installCRDs=true` installs.
CERT_MANAGER_CRDS = list(cert_manager_chart.CRDS)
CERT_MANAGER_UPGRADE = "v1.16.5"


def cert_manager_crds(e2e: E2E) -> dict[str, dict[str, Any]]:
    """name -> metadata of every cert-manager CRD in the API server."""
    items = e2e.cp.get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions")["items"]
    return {
        c["metadata"]["name"]: c["metadata"]
        for c in items
        if c["metadata"]["name"].endswith("cert-manager.io")
    }


# -- 1. preview with the policy pack --------------------------------------------------------------------------
def test_1_preview_with_policy_pack_passes(e2e: E2E) -> None:
    res = e2e.pulumi("preview", *e2e.policy_args())
    TIMINGS["preview"] = res.seconds
    assert "ml-diagnostics@v0.1.0 (local: policies)" in res.stdout, res.stdout
    assert "[mandatory]" not in res.stdout, res.stdout
    assert e2e.vertex.clusters == {}, "a preview must not create the cluster"


def test_1_bad_variant_fails_on_a_mandatory_policy(e2e: E2E) -> None:
    bad = copy.deepcopy(e2e.base_config)
    bad["kubernetesClusters"][0]["diagon"]["image"] = compat.DIAGON_DEFAULT_IMAGE  # :latest
    e2e.project.init_stack(
        BAD_STACK, bad, {"kubernetesClusters[0].kubeconfig": e2e.cp.kubeconfig.read_text()}
    )
    res = e2e.pulumi("preview", *e2e.policy_args(), stack=BAD_STACK, check=False)
    assert res.returncode != 0
    assert "k8s-images-pinned" in res.output and "mandatory" in res.output, res.output[-3000:]
    e2e.pulumi("stack", "rm", "--yes", "--force", stack=BAD_STACK)


def test_1_offline_plan_matches_preview(e2e: E2E) -> None:
    """URN, type, parent and inputs of every resource: the offline plan vs the engine's preview."""
    out = subprocess.run(
        [sys.executable, "-m", "mldiag.plan.cli", STACK, "--config-file", str(e2e.project.stack_file(STACK)),
         "--format", "json", "--skip-policies", "-q"],
        cwd=REPO, capture_output=True, text=True, check=True,
    )  # fmt: skip
    offline = json.loads(out.stdout)
    preview = e2e.pulumi("preview", "--json").json()
    plan = steps(preview)
    created = sorted(short(u) for u, op in plan.items() if op == "create")
    for name in (
        "k8s-lab-mldiag-cert-manager-release",
        "k8s-lab-mldiag-manual-injection-webhook",
        "k8s-lab-mldiag-manual-connection-operator",
        "k8s-lab-mldiag-diagon-daemonset",
        "k8s-lab-mldiag-opt-in-ai-workloads",
        "k8s-lab-mldiag-opt-in-research",
        "mdc-cpu-cluster",
    ):
        assert any(c == name for c in created), (name, created)
    both, diffs = plan_fidelity.compare(offline, preview)
    unexplained = [str(d) for d in diffs if plan_fidelity.accepted_reason(d) is None]
    TIMINGS["plan critical path depth"] = offline["criticalPath"]["depth"]
    TIMINGS["plan/preview resources compared"] = both
    TIMINGS["accepted plan/preview differences"] = len(diffs) - len(unexplained)
    assert unexplained == []
    assert both == len(offline["resources"])


# -- 2. up, the objects in the API server, then no changes and no drift ---------------------------------------
def test_2_up_creates_everything(e2e: E2E) -> None:
    res = e2e.pulumi("up", "--yes", "--skip-preview", *e2e.policy_args())
    TIMINGS["up"] = res.seconds
    cp = e2e.cp
    ns = cp.get("/api/v1/namespaces/ai-workloads")["metadata"]["labels"]
    assert ns["team"] == "ml-research" and ns[compat.OPT_IN_LABEL] == "true"
    research = cp.get(f"/api/v1/namespaces/{PREEXISTING_NS}")["metadata"]["labels"]
    assert research == {
        **PREEXISTING_LABELS,
        compat.OPT_IN_LABEL: "true",
        "kubernetes.io/metadata.name": PREEXISTING_NS,
    }


def test_2_daemonset_is_the_vendor_manifest(e2e: E2E) -> None:
    vendor = yaml.safe_load((HERE / "diagon-daemonset.yaml").read_text())
    container = vendor["spec"]["template"]["spec"]["containers"][0]
    container["image"], container["imagePullPolicy"] = IMAGE_V1, "IfNotPresent"  # pinned by config
    live = e2e.cp.get("/apis/apps/v1/namespaces/diagon/daemonsets/diagon-daemon")
    assert subset_mismatches(vendor["metadata"], live["metadata"]) == []
    assert subset_mismatches(vendor["spec"], live["spec"]) == []
    # a self-managed cluster's Diagon runs on every node: the one worker node (tests/fixtures/e2e.py)
    assert live["status"]["observedGeneration"] == live["metadata"]["generation"]
    assert (live["status"]["desiredNumberScheduled"], live["status"]["numberReady"]) == (1, 1)


def test_2_helm_releases_are_recorded(e2e: E2E) -> None:
    for ns, release, version in (
        ("cert-manager", "cert-manager", "v1.13.0"),
        (compat.MLDIAGNOSTICS_NAMESPACE, compat.INJECTION_WEBHOOK_RELEASE, "0.25.0"),
        (compat.MLDIAGNOSTICS_NAMESPACE, compat.CONNECTION_OPERATOR_RELEASE, "0.24.0"),
    ):
        (record,) = release_records(e2e, ns, release)
        assert record["info"]["status"] == "deployed", (release, record["info"])
        assert (record["name"], record["namespace"], record["chart"]["metadata"]["version"]) == (
            release,
            ns,
            version,
        )
    # the values the program sets reach the chart: JAX 0.8 controller args, cert-manager CRDs
    op = e2e.cp.get(
        f"/apis/apps/v1/namespaces/{compat.MLDIAGNOSTICS_NAMESPACE}/deployments/mldiagnostics-connection-operator"
    )
    assert op["spec"]["template"]["spec"]["containers"][0]["args"] == list(compat.JAX_08_CONTROLLER_ARGS)
    e2e.cp.get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/certificates.cert-manager.io")
    assert "/charts/index.yaml" in e2e.repo.requests


def test_2_cert_manager_is_what_the_vendor_command_installs(e2e: E2E) -> None:
    """The real chart of `helm install cert-manager jetstack/cert-manager --namespace cert-manager --version
    v1.13.0 --set installCRDs=true --set global.leaderElection.namespace=cert-manager`: its CRDs, its controller
    started with the leader election namespace, its three Deployments run by kwok on the worker node, and its
    post-install startupapicheck Job completed (kwok's pod-complete stage; Helm deleted it once it succeeded)."""
    assert sorted(cert_manager_crds(e2e)) == CERT_MANAGER_CRDS
    deployments = e2e.cp.get("/apis/apps/v1/namespaces/cert-manager/deployments")["items"]
    by_name = {d["metadata"]["name"]: d for d in deployments}
    assert sorted(by_name) == ["cert-manager", "cert-manager-cainjector", "cert-manager-webhook"]
    for d in deployments:
        assert d["status"].get("availableReplicas") == 1, (d["metadata"]["name"], d["status"])
    controller = by_name["cert-manager"]["spec"]["template"]["spec"]["containers"][0]
    assert controller["image"] == "quay.io/jetstack/cert-manager-controller:v1.13.0"
    assert "--leader-election-namespace=cert-manager" in controller["args"], controller["args"]
    (record,) = release_records(e2e, "cert-manager", "cert-manager")
    hooks = {h["name"]: (h["kind"], h["events"], h["last_run"]["phase"]) for h in record["hooks"]}
    assert hooks["cert-manager-startupapicheck"] == ("Job", ["post-install"], "Succeeded"), hooks
    assert (
        e2e.cp.api(
            "GET", "/apis/batch/v1/namespaces/cert-manager/jobs/cert-manager-startupapicheck"
        ).status_code
        == 404
    )


def test_2_model_development_cluster_created_through_the_fake(e2e: E2E) -> None:
    names = list(e2e.vertex.clusters)
    assert names == ["projects/mldiag-e2e/locations/us-central1/modelDevelopmentClusters/e2ecpu"]
    cluster = e2e.vertex.clusters[names[0]]
    assert cluster["displayName"] == "e2e CPU cluster" and cluster["labels"] == {"env": "e2e"}


def test_2_preview_shows_no_changes(e2e: E2E) -> None:
    res = e2e.pulumi("preview", "--expect-no-changes", "--json", *e2e.policy_args())
    assert steps(res.json()) == {}


def test_2_refresh_finds_no_drift(e2e: E2E) -> None:
    res = e2e.pulumi("refresh", "--yes", "--expect-no-changes", "--skip-preview")
    TIMINGS["refresh"] = res.seconds


# -- 3. a config change updates only what it should; drift made in the API server is found by refresh ----------
def test_3_config_change_updates_only_the_daemonset_and_namespace(e2e: E2E) -> None:
    changed = copy.deepcopy(e2e.base_config)
    lab = changed["kubernetesClusters"][0]
    lab["diagon"]["image"] = IMAGE_V2
    lab["workloadNamespaces"][0]["labels"]["team"] = "ml-platform"
    e2e.project.set_config(STACK, changed)
    plan = steps(e2e.pulumi("preview", "--json", *e2e.policy_args()).json())
    assert {short(u): op for u, op in plan.items()} == {
        "k8s-lab-mldiag-diagon-daemonset": "update",
        "k8s-lab-mldiag-opt-in-ai-workloads": "update",
    }
    e2e.pulumi("up", "--yes", "--skip-preview", *e2e.policy_args())
    live = e2e.cp.get("/apis/apps/v1/namespaces/diagon/daemonsets/diagon-daemon")
    assert live["spec"]["template"]["spec"]["containers"][0]["image"] == IMAGE_V2
    labels = e2e.cp.get("/api/v1/namespaces/ai-workloads")["metadata"]["labels"]
    assert labels["team"] == "ml-platform" and labels[compat.OPT_IN_LABEL] == "true"


def test_3_drift_in_the_api_server_is_found_by_refresh(e2e: E2E) -> None:
    # What the vendor doc's `kubectl set image ... diagon-daemon=...:v2.1.0` does by hand.
    e2e.cp.api(
        "PATCH",
        "/apis/apps/v1/namespaces/diagon/daemonsets/diagon-daemon",
        headers={"Content-Type": "application/strategic-merge-patch+json"},
        params={"fieldManager": "kubectl-set"},
        json={"spec": {"template": {"spec": {"containers": [{"name": "diagon-daemon", "image": IMAGE_V1}]}}}},
    ).raise_for_status()
    res = e2e.pulumi("refresh", "--preview-only", "--expect-no-changes", check=False)
    assert res.returncode != 0, res.output
    assert "k8s-lab-mldiag-diagon-daemonset" in res.stdout, res.stdout
    e2e.pulumi("refresh", "--yes", "--skip-preview")
    e2e.pulumi("up", "--yes", "--skip-preview", *e2e.policy_args())
    live = e2e.cp.get("/apis/apps/v1/namespaces/diagon/daemonsets/diagon-daemon")
    assert live["spec"]["template"]["spec"]["containers"][0]["image"] == IMAGE_V2


# -- 3. cert-manager upgraded in place: installCRDs gives way to crds.enabled and crds.keep, the CRDs stay ---------
def test_3_cert_manager_upgrade_keeps_every_crd(e2e: E2E) -> None:
    """v1.13.0 -> v1.16.5 is one in-place update of the release: the CRDs the old chart installed as templates
    (installCRDs) are the new chart's templates too (crds.enabled), so Helm updates them, never deletes them:
    each keeps its uid (a deleted CRD takes every Certificate and Issuer with it), and gains the chart's keep
    policy (crds.keep). The chart's crd-check (installCRDs with crds.*) does not fail: the program sends one
    style per version."""
    before = {name: meta["uid"] for name, meta in cert_manager_crds(e2e).items()}
    assert sorted(before) == CERT_MANAGER_CRDS
    config = e2e.project.config(STACK)
    config["kubernetesClusters"][0]["certManager"]["version"] = CERT_MANAGER_UPGRADE
    e2e.project.set_config(STACK, config)
    preview = e2e.pulumi("preview", "--diff", *e2e.policy_args())
    print(f"--- pulumi preview --diff\n{preview.stdout}")
    assert "~ kubernetes:helm.sh/v3:Release: (update)" in preview.stdout, preview.stdout
    assert '~ version: "v1.13.0" => "v1.16.5"' in preview.stdout, preview.stdout
    summary = preview.stdout.split("\nResources:\n", 1)[1].split("\n\n", 1)[0].split("\n")
    assert [line.strip() for line in summary] == ["~ 1 to update", "18 unchanged"], preview.stdout
    up = e2e.pulumi("up", "--yes", "--skip-preview", "--diff", *e2e.policy_args())
    TIMINGS["cert-manager upgrade up"] = up.seconds
    print(f"--- pulumi up --yes --skip-preview --diff\n{up.stdout}")
    print("--- CRD uids before and after\n" + "\n".join(f"{n} {before[n]}" for n in CERT_MANAGER_CRDS))
    after = cert_manager_crds(e2e)
    print("\n".join(f"{n} {after[n]['uid']}" for n in CERT_MANAGER_CRDS))
    assert {name: meta["uid"] for name, meta in after.items()} == before
    assert {
        name: meta["annotations"].get("helm.sh/resource-policy") for name, meta in after.items()
    } == dict.fromkeys(CERT_MANAGER_CRDS, "keep")
    assert "crd-check" not in up.output
    records = release_records(e2e, "cert-manager", "cert-manager")
    assert [(r["version"], r["info"]["status"], r["chart"]["metadata"]["version"]) for r in records] == [
        (1, "superseded", "v1.13.0"),
        (2, "deployed", CERT_MANAGER_UPGRADE),
    ]
    assert records[-1]["config"] == {
        "crds": {"enabled": True, "keep": True},
        "global": {"leaderElection": {"namespace": "cert-manager"}},
    }


# -- 5. destroy leaves the pre-existing namespace with its other labels ---------------------------------------
def test_5_destroy_keeps_the_preexisting_namespace(e2e: E2E) -> None:
    res = e2e.pulumi("destroy", "--yes", "--skip-preview")
    TIMINGS["destroy"] = res.seconds
    research = e2e.cp.get(f"/api/v1/namespaces/{PREEXISTING_NS}")
    assert research["status"]["phase"] == "Active"
    assert research["metadata"]["labels"] == {
        **PREEXISTING_LABELS,
        "kubernetes.io/metadata.name": PREEXISTING_NS,
    }
    for ns in ("ai-workloads", "diagon", compat.MLDIAGNOSTICS_NAMESPACE):
        r = e2e.cp.api("GET", f"/api/v1/namespaces/{ns}")
        assert r.status_code == 404, (ns, r.status_code)
    assert e2e.vertex.clusters == {}
    e2e.pulumi("stack", "rm", "--yes")
    # crds.keep: uninstalling the release leaves the CRDs (and what users made of them); a cluster admin's call
    kept = cert_manager_crds(e2e)
    assert sorted(kept) == CERT_MANAGER_CRDS
    for name in kept:  # the shared control plane goes back as it was for the tests after this one
        assert e2e.cp.api("DELETE", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}").ok
    deadline = time.monotonic() + 120
    while cert_manager_crds(e2e):  # a condition; the deadline only bounds a failure
        assert time.monotonic() < deadline, f"CRDs not deleted within 120s: {sorted(cert_manager_crds(e2e))}"
        time.sleep(0.2)


# -- 4. adoption (after the main stack is gone): what the vendor procedure made by hand is taken over ----------
ADOPT_STACK = "e2e-adopt"
ADOPTED_NS = "ml-team"


def _vendor_procedure(e2e: E2E) -> None:
    """The doc's commands, as direct API calls: kubectl create/label namespace, kubectl apply of the Diagon
    manifest (namespace, ServiceAccount, DaemonSet), and the Model Development Cluster created with curl."""
    cp = e2e.cp
    cp.api(
        "POST",
        "/api/v1/namespaces",
        json={"metadata": {"name": ADOPTED_NS, "labels": {compat.OPT_IN_LABEL: "true"}}},
    ).raise_for_status()
    cp.api("POST", "/api/v1/namespaces", json={"metadata": {"name": "diagon"}}).raise_for_status()
    cp.api(
        "POST", "/api/v1/namespaces/diagon/serviceaccounts", json={"metadata": {"name": "diagon-daemon"}}
    ).raise_for_status()
    manifest = yaml.safe_load((HERE / "diagon-daemonset.yaml").read_text())
    cp.api(
        "PATCH",
        "/apis/apps/v1/namespaces/diagon/daemonsets/diagon-daemon",
        params={"fieldManager": "kubectl-client-side-apply", "force": "true"},
        headers={"Content-Type": "application/apply-patch+yaml"},
        data=yaml.safe_dump(manifest),
    ).raise_for_status()
    from ml_diagnostics.providers.model_development_cluster import cluster_path, to_rest
    from program.kinds.model_development.model import ModelDevelopmentClusterTarget

    spec = ModelDevelopmentClusterTarget.model_validate(e2e.base_config["modelDevelopmentClusters"][0]).spec()
    parent, cid = cluster_path(spec).rsplit("/", 1)
    requests.post(
        f"{e2e.vertex.endpoint}/v1beta1/{parent}",
        params={"modelDevelopmentClusterId": cid},
        json=to_rest(spec),
        timeout=30,
    ).raise_for_status()


def _uids(e2e: E2E) -> dict[str, str]:
    paths = (
        f"/api/v1/namespaces/{ADOPTED_NS}",
        "/api/v1/namespaces/diagon",
        "/api/v1/namespaces/diagon/serviceaccounts/diagon-daemon",
        "/apis/apps/v1/namespaces/diagon/daemonsets/diagon-daemon",
    )
    return {p: (e2e.cp.get(p)["metadata"]["uid"], e2e.cp.get(p)["metadata"].get("generation")) for p in paths}


def ops(preview_json: dict[str, Any]) -> dict[str, list[str]]:
    """short name -> every op the preview lists for it (an import may be followed by an update)."""
    out: dict[str, list[str]] = {}
    for s in preview_json.get("steps", []):
        out.setdefault(short(s["urn"]), []).append(s["op"])
    return out


def _adopt_config(e2e: E2E) -> dict[str, Any]:
    config = copy.deepcopy(e2e.base_config)
    config["environment"] = "dev"  # the doc's Diagon image is :latest, advisory in dev
    lab = config["kubernetesClusters"][0]
    lab["workloadNamespaces"] = [{"name": ADOPTED_NS, "create": True, "adopt": True}]
    lab["diagon"] = {"enabled": True, "adopt": True, "image": compat.DIAGON_DEFAULT_IMAGE}
    config["modelDevelopmentClusters"][0]["adopt"] = True
    return config


def test_4_adoption_takes_over_without_replacing(e2e: E2E) -> None:
    _vendor_procedure(e2e)
    before = _uids(e2e)
    e2e.project.init_stack(
        ADOPT_STACK, _adopt_config(e2e), {"kubernetesClusters[0].kubeconfig": e2e.cp.kubeconfig.read_text()}
    )
    preview = ops(e2e.pulumi("preview", "--json", stack=ADOPT_STACK).json())
    # The Kubernetes provider's import reads the live object, server-filled fields included: the engine
    # follows the import with an update dropping them from the state's inputs. Never a replacement.
    for name in (
        f"k8s-lab-mldiag-opt-in-{ADOPTED_NS}",
        "k8s-lab-mldiag-diagon-namespace",
        "k8s-lab-mldiag-diagon-service-account",
        "k8s-lab-mldiag-diagon-daemonset",
    ):
        assert preview.get(name, [])[:1] == ["import"], (name, preview)
        assert set(preview[name]) <= {"import", "update"}, (name, preview)
    # a dynamic resource cannot be imported: its create takes the cluster over (GET, no POST)
    assert preview.get("mdc-cpu-cluster") == ["create"], preview
    creates_before = len([r for r in e2e.vertex.api_requests() if r.method == "POST"])
    e2e.pulumi("up", "--yes", "--skip-preview", stack=ADOPT_STACK)
    assert _uids(e2e) == before, "adoption replaced or changed an object (uid, generation)"
    assert len([r for r in e2e.vertex.api_requests() if r.method == "POST"]) == creates_before, (
        "cluster re-created"
    )
    e2e.pulumi("preview", "--expect-no-changes", stack=ADOPT_STACK)
    cert_manager_crds_served(e2e.cp)
    e2e.pulumi("destroy", "--yes", "--skip-preview", stack=ADOPT_STACK)
    e2e.pulumi("stack", "rm", "--yes", stack=ADOPT_STACK)


def test_4_adoption_through_pulumi_import_file(e2e: E2E) -> None:
    """The same takeover through the CLI's bulk import: `mldiag.plan.import_file` writes the document, the
    providers it names are created first (`pulumi up --target`), `pulumi import --file` takes the objects
    over, and the next `pulumi up` replaces nothing."""
    from mldiag.plan import import_file
    from mldiag.plan.cli import read_stack_file

    _vendor_procedure(e2e)
    before = _uids(e2e)
    stack = "e2e-import"
    e2e.project.init_stack(
        stack, _adopt_config(e2e), {"kubernetesClusters[0].kubeconfig": e2e.cp.kubeconfig.read_text()}
    )
    config, secret_keys = read_stack_file(e2e.project.stack_file(stack))
    result, registered = import_file.run_with_options(config, secret_keys, stack=stack)
    doc = import_file.import_file(result, registered)
    assert sorted(r["name"] for r in doc["resources"] if not r.get("component")) == [
        "k8s-lab-mldiag-diagon-daemonset",
        "k8s-lab-mldiag-diagon-namespace",
        "k8s-lab-mldiag-diagon-service-account",
        f"k8s-lab-mldiag-opt-in-{ADOPTED_NS}",
    ]
    path = e2e.project.root / "import.json"
    path.write_text(json.dumps(doc))
    # The import puts the objects in the state: the Kubernetes parts need no `adopt` any more, and with it
    # (`import_` in the program) a targeted `up` imports untargeted resources too and breaks the snapshot.
    config = _adopt_config(e2e)
    lab = config["kubernetesClusters"][0]
    lab["workloadNamespaces"][0]["adopt"] = lab["diagon"]["adopt"] = False
    e2e.project.set_config(stack, config)
    targets = [arg for urn in import_file.provider_targets(result, doc) for arg in ("--target", urn)]
    e2e.pulumi("up", "--yes", "--skip-preview", *targets, stack=stack)
    e2e.pulumi(
        "import",
        "--file",
        str(path),
        "--yes",
        "--protect=false",
        "--generate-code=false",
        "--skip-preview",
        stack=stack,
    )
    assert _uids(e2e) == before
    creates_before = len([r for r in e2e.vertex.api_requests() if r.method == "POST"])
    e2e.pulumi("up", "--yes", "--skip-preview", stack=stack)
    assert _uids(e2e) == before, "the update after the import replaced or changed an object"
    assert len([r for r in e2e.vertex.api_requests() if r.method == "POST"]) == creates_before
    e2e.pulumi("preview", "--expect-no-changes", stack=stack)
    cert_manager_crds_served(e2e.cp)
    e2e.pulumi("destroy", "--yes", "--skip-preview", stack=stack)
    e2e.pulumi("stack", "rm", "--yes", stack=stack)
