"""What an interrupted update left, settled against its cluster (mldiag/fleet/recovery.py): each pending
operation's decision with the real Kubernetes client against the loopback fake (dev/fakes/fleet.py's
ReleaseRecordsApi also takes a record's DELETE), and `fleet adopt`'s move of a deployment (mldiag/fleet/adopt.py)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from dev.fakes import k8s_api
from dev.fakes.fleet import ReleaseRecordsApi
from mldiag.fleet import adopt, model, recovery
from mldiag.fleet.planner import EnvTarget, resolve
from tests.fixtures.verify import kubeconfig

T0 = 1_800_000_000.0
STAMP = "2027-01-15T08:00:00Z"  # T0
LATER, EARLIER = "2027-01-15T08:00:30Z", "2027-01-14T08:00:00Z"
PROVIDER = "urn:pulumi:prod.k8s-a::ml-diagnostics::mldiag:index:KubernetesCluster$pulumi:providers:kubernetes::k8s-a-provider::6c1f"
CM = "urn:pulumi:prod.k8s-a::ml-diagnostics::mldiag:index:KubernetesCluster$mldiag:index:ClusterMlDiagnostics$mldiag:index:CertManager"
RELEASE_URN = f"{CM}$kubernetes:helm.sh/v3:Release::k8s-a-mldiag-cert-manager-release"
NS_URN = "urn:pulumi:prod.k8s-a::ml-diagnostics::mldiag:index:KubernetesCluster$mldiag:index:ClusterMlDiagnostics$mldiag:index:WorkloadOptIn$kubernetes:core/v1:Namespace::k8s-a-mldiag-opt-in-ai-workloads"


@pytest.fixture
def kube() -> Iterator[ReleaseRecordsApi]:
    with ReleaseRecordsApi() as fake:
        yield fake


@pytest.fixture
def cluster(kube: ReleaseRecordsApi) -> Iterator[recovery.KubeCluster]:
    c = recovery.KubeCluster(yaml.safe_dump(kubeconfig(kube.url)), None)
    yield c
    c.close()


def record(kube: ReleaseRecordsApi, revision: int, status: str, created: str = LATER) -> None:
    secret = k8s_api.helm_release_secret(
        "cert-manager", "cert-manager", revision, status, "cert-manager", "v1.13.0"
    )
    secret["metadata"]["creationTimestamp"] = created
    kube.put("secrets", secret)


def release(op: str = "creating") -> recovery.Pending:
    return recovery.Pending(
        op,
        RELEASE_URN,
        recovery.HELM_RELEASE,
        {"name": "cert-manager", "namespace": "cert-manager", "chart": "cert-manager"},
        CM,
        PROVIDER,
    )


def namespace(name: str = "ai-workloads") -> recovery.Pending:
    return recovery.Pending(
        "creating",
        NS_URN,
        "kubernetes:core/v1:Namespace",
        {"metadata": {"name": name}},
        "parent-urn",
        PROVIDER,
    )


def decide(
    pending: list[recovery.Pending], cluster: recovery.KubeCluster, known: frozenset[str] = frozenset()
) -> list[recovery.Step]:
    return recovery.plan(pending, lambda p: cluster, T0, known)


SHORT = "kubernetes:helm.sh/v3:Release::k8s-a-mldiag-cert-manager-release"


def test_a_release_left_pending_install_by_a_killed_install_is_a_record_of_nothing_removed(
    kube: ReleaseRecordsApi, cluster: recovery.KubeCluster
) -> None:
    record(kube, 1, "pending-install")
    (step,) = decide([release()], cluster)
    assert (step.action, step.records, step.namespace) == (
        "remove-records",
        ["sh.helm.release.v1.cert-manager.v1"],
        "cert-manager",
    )
    assert step.say() == (
        f"{SHORT}: interrupted while creating; its Helm release cert-manager/cert-manager never completed and "
        "holds nothing deployed: removed its record(s) sh.helm.release.v1.cert-manager.v1 (pending-install); the "
        "update installs it"
    )
    assert kube.writes() == []  # deciding reads only
    cluster.delete_record("cert-manager", "sh.helm.release.v1.cert-manager.v1")
    assert [(r.method, r.path) for r in kube.writes()] == [
        ("DELETE", "/api/v1/namespaces/cert-manager/secrets/sh.helm.release.v1.cert-manager.v1")
    ]
    assert cluster.release_records("cert-manager", "cert-manager") == []


def test_a_release_the_killed_install_completed_is_imported_never_uninstalled(
    kube: ReleaseRecordsApi, cluster: recovery.KubeCluster
) -> None:
    record(kube, 1, "deployed")
    (step,) = decide([release()], cluster)
    assert (step.action, step.id, step.records) == ("import", "cert-manager/cert-manager", [])
    assert step.say() == (
        f"{SHORT}: interrupted while creating; the Helm release cert-manager/cert-manager it installed is deployed "
        "(revision 1): imported"
    )
    assert recovery.imports([step]) == (
        [
            {
                "type": "kubernetes:helm.sh/v3:Release",
                "name": "k8s-a-mldiag-cert-manager-release",
                "id": "cert-manager/cert-manager",
                "parent": "parent0",
                "provider": "provider0",
            }
        ],
        {"parent0": CM, "provider0": PROVIDER.rsplit("::", 1)[0]},
    )


def test_a_release_older_than_the_update_is_someone_elses_and_left_for_a_person(
    kube: ReleaseRecordsApi, cluster: recovery.KubeCluster
) -> None:
    record(kube, 1, "pending-install", created=EARLIER)
    with pytest.raises(recovery.RecoveryRefused) as e:
        decide([release()], cluster)
    assert str(e.value) == (
        f"{SHORT}: interrupted while creating, and the cluster has a Helm release cert-manager/cert-manager older "
        "than the update (revision 1, pending-install): it is not this update's. Adopt it (`adopt: true`) or remove "
        "it, then rerun"
    )
    assert kube.writes() == []


def test_no_record_means_nothing_was_made_and_an_interrupted_upgrade_keeps_the_deployed_revision(
    kube: ReleaseRecordsApi, cluster: recovery.KubeCluster
) -> None:
    (step,) = decide([release()], cluster)
    assert (step.action, step.why) == (
        "drop",
        "no Helm release cert-manager/cert-manager in the cluster: the update installs it",
    )
    record(kube, 1, "deployed", created=EARLIER)
    record(kube, 2, "pending-upgrade")
    (step,) = decide([release("updating")], cluster)
    assert (step.action, step.records) == ("remove-records", ["sh.helm.release.v1.cert-manager.v2"])
    assert step.why == (
        "its Helm release cert-manager/cert-manager was left pending-upgrade: removed the record(s) of the "
        "interrupted change (sh.helm.release.v1.cert-manager.v2); revision 1 stays deployed and the update "
        "upgrades it again"
    )


def test_kubernetes_objects_imported_when_the_update_made_them_dropped_when_absent(
    kube: ReleaseRecordsApi, cluster: recovery.KubeCluster
) -> None:
    ns = k8s_api.namespace("ai-workloads")
    ns["metadata"]["creationTimestamp"] = LATER
    kube.put("namespaces", ns)
    made, absent = decide([namespace(), namespace("ai-extra")], cluster)
    assert (made.action, made.id) == ("import", "ai-workloads")
    assert made.why == "the Namespace ai-workloads it created exists: imported"
    assert (absent.action, absent.why) == (
        "drop",
        "no Namespace ai-extra in the cluster: the update creates it",
    )
    ns["metadata"]["creationTimestamp"] = EARLIER
    with pytest.raises(recovery.RecoveryRefused, match="older than the update: it is not this update's"):
        decide([namespace()], cluster)
    patch = recovery.Pending("creating", "urn:x::y", "kubernetes:core/v1:NamespacePatch", {}, "", PROVIDER)
    unknown = recovery.Pending(
        "creating", "urn:x::w", "kubernetes:example.com/v1:Widget", {"metadata": {"name": "w"}}, "", PROVIDER
    )
    assert decide([patch], cluster)[0].action == "drop"
    with pytest.raises(
        recovery.RecoveryRefused,
        match=r"the cluster does not serve Widget at /apis/example\.com/v1/widgets/w",
    ):
        decide([unknown], cluster)


def test_what_mldiag_cannot_look_up_is_left_for_a_person_with_what_to_do(
    cluster: recovery.KubeCluster,
) -> None:
    gke = recovery.Pending(
        "creating",
        "urn:pulumi:prod::p::gcp:container/cluster:Cluster::c",
        "gcp:container/cluster:Cluster",
        {},
    )
    with pytest.raises(recovery.RecoveryRefused) as e:
        decide([gke], cluster)
    assert str(e.value) == (
        "gcp:container/cluster:Cluster::c: interrupted while creating a gcp:container/cluster:Cluster, which mldiag "
        "cannot look up: check whether it exists (its cloud console), then `pulumi import` it into the stack, or if "
        "it does not, `pulumi refresh --clear-pending-creates`; and rerun"
    )
    provider = recovery.Pending("creating", PROVIDER.rsplit("::", 1)[0], "pulumi:providers:kubernetes", {})
    deleting = recovery.Pending("deleting", "urn:pulumi:prod::p::gcp:x:Y::y", "gcp:x:Y", {})
    assert [
        (s.action, s.why) for s in decide([provider, deleting, release()], cluster, frozenset({RELEASE_URN}))
    ] == [
        ("drop", "a provider: nothing outside the state"),
        ("redo", "the update redoes it from the recorded state"),
        ("drop", "it is in the state already (an earlier recovery imported it)"),
    ]


def test_an_unreachable_cluster_is_said_so(tmp_path: Path) -> None:
    c = recovery.KubeCluster(yaml.safe_dump(kubeconfig("http://127.0.0.1:9")), None)
    with pytest.raises(
        recovery.ClusterUnreachable, match=r"^the Helm release records of cert-manager/cert-manager: "
    ):
        c.release_records("cert-manager", "cert-manager")


def test_pending_operations_and_the_providers_kubeconfig_come_from_the_exported_state() -> None:
    text = yaml.safe_dump(kubeconfig("https://127.0.0.1:6443"))
    secret = {recovery.SECRET_SIG[0]: recovery.SECRET_SIG[1], "plaintext": json.dumps(text)}
    deployment: dict[str, Any] = {
        "resources": [
            {
                "urn": PROVIDER.rsplit("::", 1)[0],
                "id": "6c1f",
                "type": "pulumi:providers:kubernetes",
                "inputs": {"kubeconfig": secret},
            }
        ],
        "pending_operations": [
            {
                "type": "creating",
                "resource": {
                    "urn": RELEASE_URN,
                    "type": recovery.HELM_RELEASE,
                    "inputs": {"name": "cert-manager"},
                    "parent": CM,
                    "provider": PROVIDER,
                },
            }
        ],
    }
    (p,) = recovery.pending_operations(deployment)
    assert (p.op, p.name, p.parent, p.provider, p.short) == (
        "creating",
        "k8s-a-mldiag-cert-manager-release",
        CM,
        PROVIDER,
        SHORT,
    )
    assert recovery.provider_access(deployment, PROVIDER) == (text, None)
    with pytest.raises(recovery.RecoveryRefused, match="of an interrupted operation is not in the state"):
        recovery.provider_access(deployment, "urn:pulumi:prod::p::pulumi:providers:kubernetes::other::1")


# -- fleet adopt's move ----------------------------------------------------------------------------------------
def env_deployment() -> dict[str, Any]:
    root = "urn:pulumi:prod::ml-diagnostics::pulumi:pulumi:Stack::ml-diagnostics-prod"
    k = "urn:pulumi:prod::ml-diagnostics::mldiag:index:KubernetesCluster"

    def res(urn: str, type_: str, parent: str = root, **extra: Any) -> dict[str, Any]:
        return {
            "urn": urn,
            "type": type_,
            "custom": type_.startswith(("kubernetes:", "pulumi:providers:")),
            "parent": parent,
            **extra,
        }

    return {
        "manifest": {"time": "t"},
        "secrets_providers": {"type": "passphrase", "state": {"salt": "v1:abc"}},
        "resources": [
            {"urn": root, "type": "pulumi:pulumi:Stack", "custom": False},
            res(
                "urn:pulumi:prod::ml-diagnostics::pulumi:providers:pulumi::default",
                "pulumi:providers:pulumi",
                id="d1",
            ),
            res(f"{k}::k8s-a", "mldiag:index:KubernetesCluster"),
            res(
                f"{k}$pulumi:providers:kubernetes::k8s-a-provider",
                "pulumi:providers:kubernetes",
                f"{k}::k8s-a",
                id="p1",
            ),
            res(
                f"{k}$kubernetes:core/v1:Namespace::k8s-a-ns",
                "kubernetes:core/v1:Namespace",
                f"{k}::k8s-a",
                id="ns",
                provider=f"{k}$pulumi:providers:kubernetes::k8s-a-provider::p1",
                dependencies=[f"{k}::k8s-a"],
                propertyDependencies={"metadata": [f"{k}::k8s-a"]},
            ),
            res(f"{k}::k8s-b", "mldiag:index:KubernetesCluster"),
            res(
                "urn:pulumi:prod::ml-diagnostics::pulumi:pulumi:StackReference::organization/ml-diagnostics/prod",
                "pulumi:pulumi:StackReference",
                provider="urn:pulumi:prod::ml-diagnostics::pulumi:providers:pulumi::default::d1",
            ),
        ],
    }


def two_targets(tmp_path: Path) -> Any:
    path = tmp_path / "fleet.yaml"
    path.write_text("environment: prod\nwaves:\n  - {name: one, targets: [a, b]}\n")
    return resolve(
        model.read(path), "prod", [EnvTarget("kubernetesClusters", n, "k8s", {}) for n in "ab"], {}
    )


def test_adopt_moves_each_targets_component_and_everything_under_it_with_urns_rewritten(
    tmp_path: Path,
) -> None:
    plan = two_targets(tmp_path)
    moved, left = adopt.moves(env_deployment(), plan, "ml-diagnostics", plan.qualified)
    a, b = moved
    k = "urn:pulumi:prod.k8s-a::ml-diagnostics::mldiag:index:KubernetesCluster"
    root = "urn:pulumi:prod.k8s-a::ml-diagnostics::pulumi:pulumi:Stack::ml-diagnostics-prod.k8s-a"
    assert (a.member.stack, len(a.urns), a.copied_providers) == ("prod.k8s-a", 3, [])
    assert a.deployment["secrets_providers"] == {"type": "passphrase", "state": {"salt": "v1:abc"}}
    assert a.deployment["resources"] == [
        {"urn": root, "custom": False, "type": "pulumi:pulumi:Stack"},
        {"urn": f"{k}::k8s-a", "type": "mldiag:index:KubernetesCluster", "custom": False, "parent": root},
        {
            "urn": f"{k}$pulumi:providers:kubernetes::k8s-a-provider",
            "type": "pulumi:providers:kubernetes",
            "custom": True,
            "parent": f"{k}::k8s-a",
            "id": "p1",
        },
        {
            "urn": f"{k}$kubernetes:core/v1:Namespace::k8s-a-ns",
            "type": "kubernetes:core/v1:Namespace",
            "custom": True,
            "parent": f"{k}::k8s-a",
            "id": "ns",
            "provider": f"{k}$pulumi:providers:kubernetes::k8s-a-provider::p1",
            "dependencies": [f"{k}::k8s-a"],
            "propertyDependencies": {"metadata": [f"{k}::k8s-a"]},
        },
    ]
    assert [r["urn"].rsplit("::", 1)[1] for r in b.deployment["resources"]] == [
        "ml-diagnostics-prod.k8s-b",
        "k8s-b",
    ]
    assert [r["type"] for r in left["resources"]] == [
        "pulumi:pulumi:Stack",
        "pulumi:providers:pulumi",
        "pulumi:pulumi:StackReference",
    ]
    assert left["pending_operations"] == []


def test_adopt_refuses_a_resource_under_no_target(tmp_path: Path) -> None:
    dep = env_deployment()
    dep["resources"].append(
        {
            "urn": "urn:pulumi:prod::ml-diagnostics::kubernetes:core/v1:Namespace::stray",
            "type": "kubernetes:core/v1:Namespace",
            "parent": dep["resources"][0]["urn"],
        }
    )
    plan = two_targets(tmp_path)
    with pytest.raises(adopt.AdoptRefused) as e:
        adopt.moves(dep, plan, "ml-diagnostics", plan.qualified)
    assert str(e.value) == (
        "1 resource(s) of the environment stack are under no target of the fleet "
        "(urn:pulumi:prod::ml-diagnostics::kubernetes:core/v1:Namespace::stray): every resource must belong to one "
        "target's component"
    )


def test_an_imported_release_is_recorded_as_the_interrupted_install_would_have(
    kube: ReleaseRecordsApi, cluster: recovery.KubeCluster
) -> None:
    record(kube, 1, "deployed")
    record_ns = recovery.Step(namespace(), "drop", "no Namespace")
    (step,) = decide([release()], cluster)
    secret = {recovery.SECRET_SIG[0]: recovery.SECRET_SIG[1], "ciphertext": "v1:abc"}
    program = {
        "name": "cert-manager",
        "namespace": "cert-manager",
        "chart": "cert-manager",
        "repositoryOpts": {"repo": "https://charts.jetstack.io"},
        "values": {"crds": {"enabled": True}, "token": secret},
    }
    read_back = {"name": "cert-manager", "namespace": "cert-manager", "chart": "cert-manager", "values": {}}
    deployment = {
        "resources": [
            {
                "urn": RELEASE_URN,
                "type": recovery.HELM_RELEASE,
                "id": "cert-manager/cert-manager",
                "inputs": read_back,
                "outputs": {**read_back, "status": {"revision": 1}, "__inputs": secret},
            },
            {
                "urn": NS_URN,
                "type": "kubernetes:core/v1:Namespace",
                "inputs": {"metadata": {}},
                "outputs": {},
            },
        ],
        "pending_operations": [
            {"type": "creating", "resource": {"urn": RELEASE_URN, "inputs": program}},
            {"type": "creating", "resource": {"urn": NS_URN, "inputs": {"metadata": {"name": "x"}}}},
        ],
    }
    before = json.dumps(deployment)
    settled = recovery.as_if_created(deployment, [step, record_ns])
    assert json.dumps(deployment) == before  # a copy is returned
    assert settled is not None
    rel, ns = settled["resources"]
    assert rel["inputs"] == program
    assert rel["outputs"] == {
        **program,
        "status": {"revision": 1},
        "__inputs": {recovery.SECRET_SIG[0]: recovery.SECRET_SIG[1], "plaintext": json.dumps(program)},
    }
    assert ns == deployment["resources"][1]  # not imported: as it was
    assert settled["pending_operations"] == deployment["pending_operations"]
    assert recovery.as_if_created(deployment, [record_ns]) is None
