"""Kubernetes workload and Helm release rules, through the Analyzer protocol (the real pack subprocess)."""

from __future__ import annotations

import copy

import pytest

from tests.fixtures.policies import ENVS, EXPECTED, K8S_PROVIDER, UNKNOWN_STRING, body, cert_manager, res, urn

DS = "kubernetes:apps/v1:DaemonSet"
RELEASE = "kubernetes:helm.sh/v3:Release"
NAMESPACE = "kubernetes:core/v1:Namespace"
DIAGON_IMAGE = "us-docker.pkg.dev/hypercomputediagon-release/daemon/diagon-daemon:v2.1.0"
DIGEST = "sha256:" + "a" * 64
OCI = "oci://us-docker.pkg.dev/ai-on-gke/mldiagnostics-webhook-and-operator-helm"
JAX08_ARGS = [
    "--metrics-bind-address=:8443",
    "--health-probe-bind-address=:8081",
    "--sidecar-timeout=65m",
    "--disable-hostname-override",
]


def diagon(
    name: str = "diagon",
    *,
    image: str = DIAGON_IMAGE,
    namespace: str = "diagon",
    memory: str | None = "256Mi",
    meta_name: str = "diagon-daemon",
    labels: dict | None = None,
) -> dict:
    container = {
        "name": "diagon-daemon",
        "image": image,
        "securityContext": {"privileged": True},
        "resources": {"requests": {"cpu": "10m", "memory": "32Mi"}},
    }
    if memory is not None:
        container["resources"]["limits"] = {"memory": memory}
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {
            "name": meta_name,
            "namespace": namespace,
            "labels": labels
            if labels is not None
            else {"app.kubernetes.io/name": "diagon-daemon", "app.kubernetes.io/part-of": "diagon"},
        },
        "spec": {
            "selector": {"matchLabels": {"name": "diagon-daemon"}},
            "template": {
                "metadata": {"labels": {"name": "diagon-daemon"}},
                "spec": {
                    "hostNetwork": True,
                    "dnsPolicy": "ClusterFirstWithHostNet",
                    "containers": [container],
                },
            },
        },
    }


def plain_ds(**container) -> dict:
    c = {"name": "app", "image": DIAGON_IMAGE, "resources": {"limits": {"memory": "128Mi"}}, **container}
    return {
        "metadata": {"name": "agent", "namespace": "monitoring"},
        "spec": {"template": {"spec": {"containers": [c]}}},
    }


def one(pack, policy: str, resources, env: str = "prod"):
    found = pack.findings(policy, resources, env)
    assert len(found) == 1, found
    return found[0]


def assert_levels(pack, policy: str, resources) -> None:
    for env in ENVS:
        found = pack.findings(policy, resources, env)
        assert [v.enforcement_level for v in found] == [EXPECTED[policy][ENVS.index(env)]], (env, found)


# --- k8s-images-pinned -----------------------------------------------------------------------------


def test_images_pinned_accepts_a_tag_or_a_digest(pack):
    ok = [
        res(DS, "a", diagon()),
        res(DS, "b", diagon(image=f"us-docker.pkg.dev/hypercomputediagon-release/daemon/d@{DIGEST}")),
    ]
    assert pack.findings("k8s-images-pinned", ok, "prod") == []


@pytest.mark.parametrize(
    "image, why",
    [
        (
            "us-central1-docker.pkg.dev/hypercomputediagon-release/daemon-docker/mldiagnostics-daemon:latest",
            ":latest",
        ),
        (
            "us-central1-docker.pkg.dev/hypercomputediagon-release/daemon-docker/mldiagnostics-daemon",
            "no tag",
        ),
    ],
)
def test_images_pinned_refuses_latest_and_untagged(pack, image, why):
    r = res(DS, "diagon", diagon(image=image))
    assert_levels(pack, "k8s-images-pinned", [r])
    v = one(pack, "k8s-images-pinned", [r], "staging")
    assert v.urn == r.urn
    assert body(v) == (
        f"DaemonSet 'diagon-daemon' container 'diagon-daemon' uses image '{image}', which is not pinned ({why}): "
        "every node may pull a different build and a rollback is impossible. Remediation: pin a version tag or "
        "a digest in the stack config (e.g. diagon.image) and run `pulumi up`; never `kubectl set image`, "
        "which drifts from the stack."
    )
    assert v.message.startswith("Container images are pinned")


def test_images_pinned_require_digest_option(pack):
    r = res(DS, "diagon", diagon())
    cfg = {"all": "mandatory", "k8s-images-pinned": {"requireDigest": True}}
    v = one(pack, "k8s-images-pinned", [r], cfg)
    assert "pinned by tag only; this environment requires a digest" in body(v)
    assert pack.findings("k8s-images-pinned", [r], "prod") == []


def test_images_pinned_checks_init_containers_and_cronjobs(pack):
    cron = {
        "metadata": {"name": "sweeper"},
        "spec": {
            "jobTemplate": {
                "spec": {
                    "template": {
                        "spec": {
                            "initContainers": [{"name": "init", "image": "busybox"}],
                            "containers": [{"name": "main", "image": DIAGON_IMAGE}],
                        }
                    }
                }
            }
        },
    }
    v = one(pack, "k8s-images-pinned", [res("kubernetes:batch/v1:CronJob", "sweeper", cron)])
    assert "CronJob 'sweeper' container 'init' uses image 'busybox'" in body(v)


def test_unknown_image_is_reported_as_not_checked_not_skipped(pack):
    r = res(DS, "diagon", diagon(image=UNKNOWN_STRING))
    v = one(pack, "k8s-images-pinned", [r])
    assert v.enforcement_level == "advisory"
    assert (
        "during preview: not checked because the value(s) at spec.template.spec.containers[0].image are unknown "
        "until apply; the check runs again with the real values during `pulumi up`"
    ) in v.message


# --- k8s-images-allowed-registries -----------------------------------------------------------------


def test_allowed_registries_accepts_the_published_registries(pack):
    ok = [
        res(DS, "a", diagon()),
        res(DS, "b", diagon(image="us-central1-docker.pkg.dev/hypercomputediagon-release/daemon-docker/x:1")),
    ]
    assert pack.findings("k8s-images-allowed-registries", ok) == []


def test_allowed_registries_refuses_other_registries(pack):
    r = res(DS, "diagon", diagon(image="docker.io/someone/diagon-daemon:v2.1.0"))
    assert_levels(pack, "k8s-images-allowed-registries", [r])
    v = one(pack, "k8s-images-allowed-registries", [r])
    assert body(v).startswith(
        "DaemonSet 'diagon-daemon' container 'diagon-daemon' image 'docker.io/someone/diagon-daemon:v2.1.0' does "
        "not come from an allowed registry (allowed: us-central1-docker.pkg.dev/hypercomputediagon-release, "
        "us-docker.pkg.dev/hypercomputediagon-release). Remediation: mirror the image"
    )
    # a prefix must end at a path boundary: hypercomputediagon-release-evil is another project
    evil = res(DS, "e", diagon(image="us-docker.pkg.dev/hypercomputediagon-release-evil/d:1"))
    assert len(pack.findings("k8s-images-allowed-registries", [evil])) == 1
    # Docker Hub short names resolve to docker.io/library
    hub = res(DS, "h", diagon(image="busybox:1.36"))
    assert "image 'busybox:1.36'" in body(one(pack, "k8s-images-allowed-registries", [hub]))
    cfg = {"all": "mandatory", "k8s-images-allowed-registries": {"allowedRegistries": ["docker.io/library"]}}
    assert pack.findings("k8s-images-allowed-registries", [hub], cfg) == []


# --- k8s-privileged-only-diagon --------------------------------------------------------------------


def test_privileged_allowed_for_diagon_in_its_namespace(pack):
    assert pack.findings("k8s-privileged-only-diagon", [res(DS, "diagon", diagon())]) == []
    cfg = {"all": "mandatory", "k8s-privileged-only-diagon": {"diagonNamespaces": ["kube-system"]}}
    moved = res(DS, "diagon", diagon(namespace="kube-system"))
    assert pack.findings("k8s-privileged-only-diagon", [moved], cfg) == []


def test_privileged_refused_elsewhere(pack):
    moved = res(DS, "diagon", diagon(namespace="kube-system"))
    assert_levels(pack, "k8s-privileged-only-diagon", [moved])
    assert body(one(pack, "k8s-privileged-only-diagon", [moved])) == (
        "DaemonSet 'diagon-daemon' requests host access (hostNetwork: true; container 'diagon-daemon' privileged: "
        "true). Only the Diagon DaemonSet (named 'diagon-daemon' or labelled app.kubernetes.io/part-of=diagon, in "
        "namespace diagon) may run privileged or on the host network. Remediation: remove these fields from the "
        "workload; if this is the Diagon daemon, deploy it through the stack's diagon settings, or add its "
        "namespace to this policy's diagonNamespaces."
    )
    other = plain_ds(securityContext={"privileged": True})
    other["spec"]["template"]["spec"]["hostPID"] = True
    v = one(pack, "k8s-privileged-only-diagon", [res("kubernetes:apps/v1:Deployment", "agent", other)])
    assert (
        "Deployment 'agent' requests host access (hostPID: true; container 'app' privileged: true)" in body(v)
    )
    # a look-alike in the Diagon namespace without Diagon's name or labels is not Diagon
    fake = res(DS, "fake", diagon(meta_name="miner", labels={}))
    assert len(pack.findings("k8s-privileged-only-diagon", [fake])) == 1


# --- k8s-daemonset-memory-limit --------------------------------------------------------------------


def test_memory_limit_passes_within_caps(pack):
    ok = [res(DS, "diagon", diagon(memory="256Mi")), res(DS, "agent", plain_ds())]
    assert pack.findings("k8s-daemonset-memory-limit", ok) == []


def test_memory_limit_missing_or_over_cap(pack):
    missing = res(DS, "agent", plain_ds(resources={"requests": {"memory": "64Mi"}}))
    assert_levels(pack, "k8s-daemonset-memory-limit", [missing])
    assert body(one(pack, "k8s-daemonset-memory-limit", [missing])) == (
        "DaemonSet 'agent' container 'app' declares no memory limit: a DaemonSet runs on every selected node, and "
        "an unbounded one can starve the training pods there. Remediation: set resources.limits.memory (the ML "
        "Diagnostics docs' manifest sets 256Mi for Diagon)."
    )
    big = res(DS, "diagon", diagon(memory="0.5Gi"))
    assert body(one(pack, "k8s-daemonset-memory-limit", [big])).startswith(
        "DaemonSet 'diagon-daemon' container 'diagon-daemon' memory limit 0.5Gi exceeds 256Mi, the cap for the "
        "Diagon daemon."
    )
    # 268435456 bytes == 256Mi: at the cap is fine, one byte more is not
    assert pack.findings("k8s-daemonset-memory-limit", [res(DS, "d", diagon(memory="268435456"))]) == []
    assert len(pack.findings("k8s-daemonset-memory-limit", [res(DS, "d", diagon(memory="268435457"))])) == 1
    odd = res(DS, "d", diagon(memory="lots"))
    assert body(one(pack, "k8s-daemonset-memory-limit", [odd])) == (
        "DaemonSet 'diagon-daemon' container 'diagon-daemon' memory limit 'lots' is not a Kubernetes quantity. "
        "Remediation: write it as bytes with a suffix, e.g. 256Mi or 1Gi."
    )
    bad_cfg = {"all": "mandatory", "k8s-daemonset-memory-limit": {"diagonMaxMemory": "a bit"}}
    assert "this policy's diagonMaxMemory option 'a bit' is not a Kubernetes quantity" in body(
        one(pack, "k8s-daemonset-memory-limit", [res(DS, "d", diagon())], bad_cfg)
    )
    cfg = {"all": "mandatory", "k8s-daemonset-memory-limit": {"maxMemory": "100Mi"}}
    assert "exceeds 100Mi, the cap for a DaemonSet container" in body(
        one(pack, "k8s-daemonset-memory-limit", [res(DS, "agent", plain_ds())], cfg)
    )


# --- Helm releases ---------------------------------------------------------------------------------


def webhook(version: str = "0.25.0", **extra) -> dict:
    return {
        "name": "mldiagnostics-injection-webhook",
        "chart": f"{OCI}/mldiagnostics-injection-webhook",
        "version": version,
        "namespace": "gke-mldiagnostics",
        "values": {},
        **extra,
    }


def operator(version: str = "0.24.0", args: list | None = None) -> dict:
    values = {} if args is None else {"mldiagnosticsConnectionOperator": {"controller": {"args": args}}}
    return {
        "name": "mldiagnostics-connection-operator",
        "chart": f"{OCI}/mldiagnostics-connection-operator",
        "version": version,
        "namespace": "gke-mldiagnostics",
        "values": values,
    }


def test_chart_version_pinned(pack):
    ok = [res(RELEASE, "cm", cert_manager()), res(RELEASE, "wh", webhook())]
    assert pack.findings("helm-chart-version-pinned", ok) == []
    unpinned = res(RELEASE, "wh", webhook(version=""))
    assert_levels(pack, "helm-chart-version-pinned", [unpinned])
    assert body(one(pack, "helm-chart-version-pinned", [unpinned])).startswith(
        "Helm release 'mldiagnostics-injection-webhook' (chart 'mldiagnostics-injection-webhook') sets no chart "
        "version, so each `pulumi up` may install whatever the repository serves that day."
    )
    ranged = res(RELEASE, "wh", webhook(version="^0.25"))
    assert "version '^0.25' is not an exact chart version" in body(
        one(pack, "helm-chart-version-pinned", [ranged])
    )


def test_allowed_repositories(pack):
    ok = [res(RELEASE, "cm", cert_manager()), res(RELEASE, "wh", webhook())]
    ok.append(
        res(
            RELEASE,
            "op",
            {
                **operator(),
                "chart": "mldiagnostics-connection-operator",
                "repositoryOpts": {"repo": OCI + "/"},
            },
        )
    )
    assert pack.findings("helm-allowed-repositories", ok) == []
    other = res(
        RELEASE, "wh", webhook(chart="oci://registry.example.com/charts/mldiagnostics-injection-webhook")
    )
    assert_levels(pack, "helm-allowed-repositories", [other])
    assert body(one(pack, "helm-allowed-repositories", [other])).startswith(
        "Helm release 'mldiagnostics-injection-webhook' (chart 'mldiagnostics-injection-webhook') comes from "
        "'oci://registry.example.com/charts', which is not an allowed repository (allowed: "
        "https://charts.jetstack.io, oci://us-docker.pkg.dev/ai-on-gke/mldiagnostics-webhook-and-operator-helm)."
    )
    alias = res(RELEASE, "cm", {**cert_manager(), "chart": "jetstack/cert-manager", "repositoryOpts": {}})
    assert "names a repository alias from the local Helm config" in body(
        one(pack, "helm-allowed-repositories", [alias])
    )
    local = res(RELEASE, "cm", {**cert_manager(), "chart": "./charts/cert-manager", "repositoryOpts": {}})
    assert "is a local path or archive" in body(one(pack, "helm-allowed-repositories", [local]))


def test_cert_manager_crds(pack):
    ok = [
        res(RELEASE, "old", cert_manager()),
        res(RELEASE, "new", cert_manager("v1.15.0", {"crds": {"enabled": True, "keep": True}})),
    ]
    assert pack.findings("helm-cert-manager-crds", ok) == []
    both = res(RELEASE, "cm", cert_manager(values={"installCRDs": True, "crds": {"enabled": True}}))
    assert_levels(pack, "helm-cert-manager-crds", [both])
    assert body(one(pack, "helm-cert-manager-crds", [both])) == (
        "Helm release 'cert-manager' (chart 'cert-manager'): cert-manager v1.13.0 (before v1.15.0) takes "
        "installCRDs, not crds.*. Remediation: keep only the style version v1.13.0 takes: {'installCRDs': True}."
    )
    # from v1.15.0 exactly what the chart's crd-check refuses: installCRDs with crds.enabled, or crds.keep false
    new_both = res(RELEASE, "cm", cert_manager("v1.15.0", {"installCRDs": True, "crds": {"enabled": True}}))
    assert "refuses installCRDs together with its replacement crds.enabled" in body(
        one(pack, "helm-cert-manager-crds", [new_both])
    )
    unkept = res(RELEASE, "cm", cert_manager("v1.15.0", {"installCRDs": True, "crds": {"keep": False}}))
    assert "refuses installCRDs with crds.keep false" in body(one(pack, "helm-cert-manager-crds", [unkept]))
    kept = res(RELEASE, "cm", cert_manager("v1.15.0", {"installCRDs": True, "crds": {"keep": True}}))
    assert pack.findings("helm-cert-manager-crds", [kept]) == []
    # the chart's defaults: crds.keep is true from v1.15.0; installCRDs is deprecated there but honoured
    enabled_only = res(RELEASE, "cm", cert_manager("v1.15.0", {"crds": {"enabled": True}}))
    deprecated = res(RELEASE, "cm", cert_manager("v1.16.1", {"installCRDs": True}))
    assert pack.findings("helm-cert-manager-crds", [enabled_only, deprecated]) == []
    assert pack.findings("helm-cert-manager-installcrds-deprecated", [enabled_only]) == []
    (note,) = pack.findings("helm-cert-manager-installcrds-deprecated", [deprecated])
    assert note.enforcement_level == "advisory"
    assert body(note).startswith(
        "Helm release 'cert-manager' (chart 'cert-manager') v1.16.1 sets installCRDs"
    )
    old_style_new_values = res(RELEASE, "cm", cert_manager("v1.13.0", {"crds": {"enabled": True}}))
    assert (
        "v1.13.0 (before v1.15.0) takes installCRDs, not crds.*. Remediation: keep only the style version "
        in (body(one(pack, "helm-cert-manager-crds", [old_style_new_values])))
    )
    off = res(RELEASE, "cm", cert_manager("v1.15.0", {"crds": {"enabled": False}}))
    assert "does not install its CRDs (crds.enabled: true missing)" in body(
        one(pack, "helm-cert-manager-crds", [off])
    )
    none = res(RELEASE, "cm", cert_manager(values={"installCRDs": False}))
    assert "does not install its CRDs (installCRDs: true missing)" in body(
        one(pack, "helm-cert-manager-crds", [none])
    )
    unpinned = res(RELEASE, "cm", cert_manager(version=""))
    assert "has no exact chart version ('')" in body(one(pack, "helm-cert-manager-crds", [unpinned]))


def test_connection_operator_jax_table(pack):
    ok = [
        res(RELEASE, "jax08", operator("0.24.0", JAX08_ARGS)),
        res(RELEASE, "jax09", operator("0.24.0")),
        res(RELEASE, "jax09-newer", operator("0.26.1")),
    ]
    assert pack.findings("helm-connection-operator-jax", ok) == []
    newer_with_08_args = res(RELEASE, "op", operator("0.25.0", JAX08_ARGS))
    assert_levels(pack, "helm-connection-operator-jax", [newer_with_08_args])
    assert body(one(pack, "helm-connection-operator-jax", [newer_with_08_args])).startswith(
        "Helm release 'mldiagnostics-connection-operator' (chart 'mldiagnostics-connection-operator') 0.25.0 with "
        "the JAX 0.8.x args: JAX 0.8.x needs connection-operator chart 0.24.0, not 0.25.0. The table: JAX 0.8.x: "
        "chart 0.24.0, args ['--metrics-bind-address=:8443', '--health-probe-bind-address=:8081', "
        "'--sidecar-timeout=65m', '--disable-hostname-override']; JAX 0.9.x and later: chart 0.24.0 or later, "
        "no args override."
    )
    older = res(RELEASE, "op", operator("0.23.0"))
    assert (
        "with no args override: JAX 0.9.x and later needs connection-operator chart 0.24.0 or later, not 0.23.0"
        in (body(one(pack, "helm-connection-operator-jax", [older])))
    )
    custom = res(RELEASE, "op", operator("0.24.0", JAX08_ARGS[:3]))
    assert "with args that match no row of the JAX table" in body(
        one(pack, "helm-connection-operator-jax", [custom])
    )
    cfg = {"all": "mandatory", "helm-connection-operator-jax": {"allowCustomArgs": True}}
    assert pack.findings("helm-connection-operator-jax", [custom], cfg) == []


def mldiag_namespace(mark: str, provider: str = K8S_PROVIDER) -> object:
    meta = {"name": "gke-mldiagnostics", "annotations": {"ml-diagnostics.dev/cert-manager": mark}}
    return res(NAMESPACE, f"ns-{mark}", {"metadata": meta}, provider=provider)


def test_webhook_and_operator_depend_on_cert_manager_in_the_same_cluster(pack):
    p = res("pulumi:providers:kubernetes", "lab", {"kubeconfig": "x"})
    cm = res(RELEASE, "cm", cert_manager(), provider=p.urn)
    ok = [
        p,
        cm,
        mldiag_namespace("release"),
        res(RELEASE, "wh", webhook(), provider=p.urn, deps=(cm.urn,)),
        res(RELEASE, "op", operator(), provider=p.urn, deps=(cm.urn,)),
    ]
    assert p.urn == K8S_PROVIDER
    assert pack.findings("helm-mldiagnostics-requires-cert-manager", ok) == []
    # pre-installed cert-manager: no release needed
    pre = [p, mldiag_namespace("preinstalled"), res(RELEASE, "wh", webhook(), provider=p.urn)]
    assert pack.findings("helm-mldiagnostics-requires-cert-manager", pre) == []

    no_dep = [p, cm, mldiag_namespace("release"), res(RELEASE, "wh", webhook(), provider=p.urn)]
    assert_levels(pack, "helm-mldiagnostics-requires-cert-manager", no_dep)
    v = one(pack, "helm-mldiagnostics-requires-cert-manager", no_dep)
    assert v.urn == urn(RELEASE, "wh")
    assert body(v).startswith(
        "Helm release 'mldiagnostics-injection-webhook' (chart 'mldiagnostics-injection-webhook') does not depend "
        "on the cert-manager release in the same cluster"
    )
    # cert-manager in another cluster does not count
    q = res("pulumi:providers:kubernetes", "other", {"kubeconfig": "y"})
    elsewhere = [
        p,
        q,
        res(RELEASE, "cm", cert_manager(), provider=q.urn),
        mldiag_namespace("release"),
        res(RELEASE, "op", operator(), provider=p.urn, deps=(urn(RELEASE, "cm"),)),
    ]
    v = one(pack, "helm-mldiagnostics-requires-cert-manager", elsewhere)
    assert body(v).startswith(
        "Helm release 'mldiagnostics-connection-operator' (chart 'mldiagnostics-connection-operator') needs "
        f"cert-manager, but no cert-manager release goes to the same cluster (provider {p.urn})"
    )
    # the preinstalled mark on another cluster's namespace does not count either
    marked_elsewhere = [
        p,
        q,
        mldiag_namespace("preinstalled", q.urn),
        res(RELEASE, "wh", webhook(), provider=p.urn),
    ]
    assert len(pack.findings("helm-mldiagnostics-requires-cert-manager", marked_elsewhere)) == 1


def test_unknown_values_do_not_hide_known_violations(pack):
    ds = diagon(image="busybox")
    ds["spec"]["template"]["spec"]["containers"].append(
        copy.deepcopy(ds["spec"]["template"]["spec"]["containers"][0])
        | {"name": "second", "image": UNKNOWN_STRING}
    )
    found = pack.findings("k8s-images-pinned", [res(DS, "diagon", ds)])
    assert sorted(v.enforcement_level for v in found) == ["advisory", "mandatory"]
    assert any("container 'diagon-daemon' uses image 'busybox'" in v.message for v in found)
    assert any("containers[1].image are unknown until apply" in v.message for v in found)


def test_diagon_namespace_unknown_during_preview_is_not_a_violation(pack):
    """The DaemonSet's namespace is the Namespace resource's output: unknown in a preview that creates it."""
    r = res(DS, "diagon", diagon(namespace=UNKNOWN_STRING, memory="1Gi"))
    for policy in ("k8s-privileged-only-diagon", "k8s-daemonset-memory-limit"):
        (v,) = pack.findings(policy, [r])
        assert v.enforcement_level == "advisory"
        assert "not checked because the value(s) at metadata.namespace are unknown until apply" in v.message
    # a missing limit is a violation whatever the namespace turns out to be
    found = pack.findings(
        "k8s-daemonset-memory-limit", [res(DS, "d", diagon(namespace=UNKNOWN_STRING, memory=None))]
    )
    assert sorted(v.enforcement_level for v in found) == ["advisory", "mandatory"]


# --- k8s-diagon-pod-security (stack) ----------------------------------------------------------------


def _namespace(name: str, level: str | None, provider: str = K8S_PROVIDER) -> object:
    labels = {} if level is None else {"pod-security.kubernetes.io/enforce": level}
    return res(
        NAMESPACE, f"ns-{name}-{level}", {"metadata": {"name": name, "labels": labels}}, provider=provider
    )


@pytest.mark.parametrize("level", ["baseline", "restricted", "Restricted"])
def test_a_diagon_namespace_enforcing_baseline_or_restricted_is_flagged(pack, level):
    stack = [_namespace("diagon", level), res(DS, "diagon", diagon(), provider=K8S_PROVIDER)]
    assert_levels(pack, "k8s-diagon-pod-security", stack)
    v = one(pack, "k8s-diagon-pod-security", stack)
    assert v.urn == urn(DS, "diagon")
    assert body(v) == (
        "The Diagon DaemonSet in namespace 'diagon' runs privileged with hostNetwork, but that namespace enforces "
        f"Pod Security '{level}' (pod-security.kubernetes.io/enforce), which rejects its pods: nothing schedules. "
        "Remediation: label the namespace pod-security.kubernetes.io/enforce: privileged (the namespace the "
        "program creates for Diagon carries it), or run Diagon in a namespace that admits privileged pods."
    )


def test_a_diagon_namespace_that_admits_it_or_is_not_in_the_stack_passes(pack):
    p2 = res("pulumi:providers:kubernetes", "other", {"kubeconfig": "y"})
    stacks = [
        [_namespace("diagon", "privileged"), res(DS, "diagon", diagon(), provider=K8S_PROVIDER)],
        [_namespace("diagon", None), res(DS, "diagon", diagon(), provider=K8S_PROVIDER)],
        [res(DS, "diagon", diagon(), provider=K8S_PROVIDER)],  # the cluster's default: verify reports it
        # a restricted namespace of the same name in another cluster is not this DaemonSet's
        [p2, _namespace("diagon", "restricted", p2.urn), res(DS, "diagon", diagon(), provider=K8S_PROVIDER)],
        # a restricted namespace without the daemon
        [_namespace("apps", "restricted"), res(DS, "diagon", diagon(), provider=K8S_PROVIDER)],
    ]
    for stack in stacks:
        assert pack.findings("k8s-diagon-pod-security", stack, "prod") == [], stack
