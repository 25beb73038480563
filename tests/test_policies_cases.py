"""Every rule, through the Analyzer protocol: at least one violating case, at least two near-miss valid
cases that must pass, and a case per resource form the rule claims (issue 18). Cases are data; the
closing counts come from `python -m pytest tests/test_policies_cases.py -q -s -k counts`.
"""

from __future__ import annotations

import copy
from collections import Counter

import pytest
import yaml

from tests.fixtures import policy_corpus
from tests.fixtures.policies import EXPECTED, K8S_PROVIDER, body, env_config, res
from tests.fixtures.policy_corpus import CASES, case, claims
from tests.test_policies_azure_ml import HTTPS, OTHER_SUB, PEMS, TRAINING, aks, extension
from tests.test_policies_gke import ADOPTED, CLUSTER, PARENT, adopted, cluster
from tests.test_policies_kubernetes import JAX08_ARGS, cert_manager, diagon, operator, plain_ds, webhook
from tests.test_policies_model_development import MDC, pool, spec

DS = "kubernetes:apps/v1:DaemonSet"
DS_BETA = "kubernetes:apps/v1beta2:DaemonSet"
DS_PATCH = "kubernetes:apps/v1:DaemonSetPatch"
NS = "kubernetes:core/v1:Namespace"
NS_PATCH = "kubernetes:core/v1:NamespacePatch"
JOBSET = "kubernetes:jobset.x-k8s.io/v1alpha2:JobSet"
CG = "kubernetes:yaml/v2:ConfigGroup"
CF = "kubernetes:yaml/v2:ConfigFile"
RELEASE = "kubernetes:helm.sh/v3:Release"
CHART = "kubernetes:helm.sh/v4:Chart"
EXT = "azure-native:kubernetesconfiguration:Extension"
EXT_V = "azure-native:kubernetesconfiguration/v20230501:Extension"
MC = "azure-native:containerservice:ManagedCluster"
MC_V = "azure-native:containerservice/v20240801:ManagedCluster"
POOL = "azure-native:containerservice:AgentPool"
PROVIDER = "pulumi:providers:kubernetes"


def ds_forms(rule: str, expect: str, label: str, obj: dict) -> None:
    """The same DaemonSet declared as a resource, with an older API version token, in a ConfigGroup
    (objs and yaml) and in a ConfigFile."""
    case(rule, expect, DS, label, res(DS, "ds", obj))
    case(rule, expect, DS_BETA, label, res(DS_BETA, "ds", obj))
    case(rule, expect, f"{CG} objs", label, res(CG, "cg", {"objs": [obj]}))
    case(
        rule,
        expect,
        f"{CG} yaml",
        label,
        res(CG, "cg", {"yaml": yaml.safe_dump_all([{"kind": "ConfigMap"}, obj])}),
    )
    case(rule, expect, CF, label, res(CF, "cf", {"file": "<FILE>", "__doc": obj}))


def patch_of(obj: dict, *, keep_container: tuple[str, ...] = ()) -> dict:
    """A server-side-apply patch naming only the given container fields (and the pod spec fields kept)."""
    p = copy.deepcopy(obj)
    for c in p["spec"]["template"]["spec"]["containers"]:
        for k in list(c):
            if k not in ("name", *keep_container):
                del c[k]
    return p


def with_container(obj: dict, **fields) -> dict:
    o = copy.deepcopy(obj)
    o["spec"]["template"]["spec"]["containers"][0].update(fields)
    return o


def with_pod(obj: dict, **fields) -> dict:
    o = copy.deepcopy(obj)
    for k, v in fields.items():
        if v is None:
            o["spec"]["template"]["spec"].pop(k, None)
        else:
            o["spec"]["template"]["spec"][k] = v
    return o


def ds(obj: dict) -> dict:
    return {"apiVersion": "apps/v1", "kind": "DaemonSet", **obj}


# --- Kubernetes workloads --------------------------------------------------------------------------
R = "k8s-images-pinned"
ds_forms(R, "violation", "latest tag", ds(plain_ds(image="docker.io/library/busybox:latest")))
case(R, "pass", DS, "version tag", res(DS, "ds", plain_ds()))
case(
    R,
    "pass",
    DS,
    "digest",
    res(DS, "ds", plain_ds(image="us-docker.pkg.dev/hypercomputediagon-release/d@sha256:" + "a" * 64)),
)
case(
    R,
    "pass",
    DS_PATCH,
    "patch without image leaves it",
    res(DS_PATCH, "p", patch_of(diagon(), keep_container=("resources",))),
)
case(
    R,
    "violation",
    DS_PATCH,
    "patch setting latest",
    res(DS_PATCH, "p", patch_of(with_container(diagon(), image="x.io/d:latest"), keep_container=("image",))),
)

R = "k8s-images-allowed-registries"
ds_forms(R, "violation", "Docker Hub image", ds(plain_ds(image="busybox:1.36")))
case(R, "pass", DS, "published Diagon path", res(DS, "ds", plain_ds()))
case(
    R,
    "pass",
    DS,
    "the manifest's path",
    res(
        DS,
        "ds",
        plain_ds(
            image="us-central1-docker.pkg.dev/hypercomputediagon-release/daemon-docker/mldiagnostics-daemon:v1"
        ),
    ),
)
case(R, "pass", DS_PATCH, "patch without image", res(DS_PATCH, "p", patch_of(diagon())))
case(
    R,
    "violation",
    DS_PATCH,
    "patch to another registry",
    res(DS_PATCH, "p", patch_of(with_container(diagon(), image="ghcr.io/x/d:1"), keep_container=("image",))),
)

R = "k8s-privileged-only-diagon"
ds_forms(R, "violation", "privileged non-Diagon", ds(plain_ds(securityContext={"privileged": True})))
case(R, "pass", DS, "Diagon in its namespace", res(DS, "ds", diagon()))
case(R, "pass", DS, "privileged: false", res(DS, "ds", plain_ds(securityContext={"privileged": False})))
case(
    R,
    "violation",
    DS_PATCH,
    "patch adding hostPID",
    res(
        DS_PATCH,
        "p",
        {
            "metadata": {"name": "agent", "namespace": "monitoring"},
            "spec": {"template": {"spec": {"hostPID": True}}},
        },
    ),
)

R = "k8s-daemonset-memory-limit"
ds_forms(R, "violation", "no memory limit", ds(plain_ds(resources={"requests": {"memory": "64Mi"}})))
case(R, "pass", DS, "128Mi on another DaemonSet", res(DS, "ds", plain_ds()))
case(R, "pass", DS, "Diagon at 256Mi", res(DS, "ds", diagon()))
case(
    R,
    "pass",
    DS_PATCH,
    "image-only patch (the vendor's update step)",
    res(DS_PATCH, "p", patch_of(diagon(), keep_container=("image",))),
)
case(
    R,
    "violation",
    DS_PATCH,
    "patch raising Diagon to 1Gi",
    res(DS_PATCH, "p", patch_of(diagon(memory="1Gi"), keep_container=("resources",))),
)

R = "k8s-diagon-no-cpu-limit"
cpu_limited = with_container(
    diagon(), resources={"requests": {"cpu": "10m"}, "limits": {"memory": "256Mi", "cpu": "500m"}}
)
ds_forms(R, "violation", "Diagon with limits.cpu", cpu_limited)
case(R, "pass", DS, "Diagon as the manifest", res(DS, "ds", diagon()))
case(
    R,
    "pass",
    DS,
    "CPU limit on another DaemonSet",
    res(DS, "ds", plain_ds(resources={"limits": {"cpu": "1", "memory": "64Mi"}})),
)
case(
    R, "pass", DS_PATCH, "image-only patch", res(DS_PATCH, "p", patch_of(diagon(), keep_container=("image",)))
)
case(
    R,
    "violation",
    DS_PATCH,
    "patch adding a CPU limit",
    res(DS_PATCH, "p", patch_of(cpu_limited, keep_container=("resources",))),
)

R = "k8s-host-network-dns-policy"
ds_forms(R, "violation", "hostNetwork with default dnsPolicy", with_pod(diagon(), dnsPolicy=None))
case(R, "pass", DS, "the manifest's pair", res(DS, "ds", diagon()))
case(
    R,
    "pass",
    DS,
    "no hostNetwork, no dnsPolicy",
    res(DS, "ds", with_pod(diagon(), hostNetwork=False, dnsPolicy=None)),
)
case(
    R,
    "pass",
    DS_PATCH,
    "image-only patch keeps dnsPolicy",
    res(DS_PATCH, "p", patch_of(with_pod(diagon(), dnsPolicy=None))),
)
case(
    R,
    "violation",
    DS_PATCH,
    "patch setting dnsPolicy Default",
    res(DS_PATCH, "p", with_pod(patch_of(diagon()), dnsPolicy="Default")),
)

R = "k8s-opt-in-label-value"


def labelled(kind: str, value) -> dict:
    api = {"Namespace": "v1", "JobSet": "jobset.x-k8s.io/v1alpha2"}[kind]
    return {
        "apiVersion": api,
        "kind": kind,
        "metadata": {"name": "ai", "labels": {"managed-mldiagnostics-gke": value}},
    }


case(R, "violation", NS, "'True'", res(NS, "ns", labelled("Namespace", "True")))
case(
    R,
    "violation",
    NS_PATCH,
    "'yes' on an existing namespace",
    res(NS_PATCH, "ns", labelled("Namespace", "yes")),
)
case(R, "violation", JOBSET, "'1' on a JobSet", res(JOBSET, "js", labelled("JobSet", "1")))
case(
    R,
    "violation",
    f"{CG} yaml",
    "unquoted true in YAML",
    res(
        CG,
        "cg",
        {
            "yaml": "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: ai\n  labels:\n    managed-mldiagnostics-gke: True\n"
        },
    ),
)
case(R, "violation", f"{CG} objs", "'TRUE'", res(CG, "cg", {"objs": [labelled("Namespace", "TRUE")]}))
case(R, "pass", NS, "exactly 'true'", res(NS, "ns", labelled("Namespace", "true")))
case(R, "pass", NS, "no opt-in label", res(NS, "ns", {"metadata": {"name": "ai", "labels": {"team": "ml"}}}))
case(R, "pass", JOBSET, "JobSet with 'true'", res(JOBSET, "js", labelled("JobSet", "true")))

R = "k8s-diagon-pod-security"


def _psa_ns(level: str, kind: str = NS) -> object:
    meta = {"name": "diagon", "labels": {"pod-security.kubernetes.io/enforce": level}}
    return res(
        kind, "diagon-ns", {"apiVersion": "v1", "kind": "Namespace", "metadata": meta}, provider=K8S_PROVIDER
    )


_daemon = res(DS, "ds", diagon(), provider=K8S_PROVIDER)
case(R, "violation", NS, "Diagon namespace enforces restricted", _psa_ns("restricted"), _daemon)
case(
    R,
    "violation",
    NS_PATCH,
    "existing Diagon namespace patched to baseline",
    _psa_ns("baseline", NS_PATCH),
    _daemon,
)
case(
    R,
    "violation",
    f"{CG} objs",
    "Diagon from a ConfigGroup into a restricted namespace",
    _psa_ns("restricted"),
    res(CG, "cg", {"objs": [diagon()]}, provider=K8S_PROVIDER),
)
case(R, "pass", NS, "Diagon namespace privileged", _psa_ns("privileged"), _daemon)
case(R, "pass", DS, "namespace not in the stack", _daemon)
case(R, "pass", NS, "restricted namespace without Diagon", _psa_ns("restricted"))

# --- Helm releases ---------------------------------------------------------------------------------


def both_forms(rule: str, expect: str, label: str, props: dict) -> None:
    case(rule, expect, RELEASE, label, res(RELEASE, "r", props))
    case(rule, expect, CHART, label, res(CHART, "r", props))


R = "helm-chart-version-pinned"
both_forms(R, "violation", "no version", webhook(version=""))
both_forms(R, "violation", "a range", webhook(version="^0.25"))
case(R, "pass", RELEASE, "exact version", res(RELEASE, "r", webhook()))
case(R, "pass", CHART, "exact pre-release", res(CHART, "r", webhook(version="0.26.0-rc.1")))

R = "helm-allowed-repositories"
both_forms(
    R, "violation", "another OCI registry", webhook(chart="oci://ghcr.io/x/mldiagnostics-injection-webhook")
)
case(R, "pass", RELEASE, "ai-on-gke OCI path", res(RELEASE, "r", webhook()))
case(R, "pass", CHART, "jetstack", res(CHART, "r", cert_manager()))

R = "helm-cert-manager-crds"
both_forms(
    R, "violation", "v1.15 with crds.enabled false", cert_manager("v1.15.0", {"crds": {"enabled": False}})
)
both_forms(R, "violation", "v1.13 with crds.* only", cert_manager("v1.13.0", {"crds": {"enabled": True}}))
case(
    R,
    "pass",
    RELEASE,
    "v1.15 crds.enabled alone (keep defaults true)",
    res(RELEASE, "r", cert_manager("v1.15.0", {"crds": {"enabled": True}})),
)
case(
    R,
    "pass",
    CHART,
    "v1.16 deprecated installCRDs still honoured",
    res(CHART, "r", cert_manager("v1.16.1", {"installCRDs": True})),
)
case(R, "pass", RELEASE, "v1.13 installCRDs", res(RELEASE, "r", cert_manager()))

R = "helm-cert-manager-installcrds-deprecated"
both_forms(R, "violation", "v1.16 installCRDs", cert_manager("v1.16.1", {"installCRDs": True}))
case(R, "pass", RELEASE, "v1.13 installCRDs", res(RELEASE, "r", cert_manager()))
case(
    R,
    "pass",
    CHART,
    "v1.16 crds.enabled",
    res(CHART, "r", cert_manager("v1.16.1", {"crds": {"enabled": True}})),
)

R = "helm-connection-operator-jax"
both_forms(R, "violation", "JAX 0.8 args on a pre-release 0.24.0-rc.1", operator("0.24.0-rc.1", JAX08_ARGS))
both_forms(R, "violation", "default args on a pre-release 0.24.0-alpha", operator("0.24.0-alpha"))
case(
    R,
    "pass",
    RELEASE,
    "JAX 0.8 args in another order",
    res(RELEASE, "r", operator("0.24.0", list(reversed(JAX08_ARGS)))),
)
case(R, "pass", CHART, "JAX 0.9 on a later chart", res(CHART, "r", operator("0.25.0")))

R = "helm-mldiagnostics-requires-cert-manager"
_p = res(PROVIDER, "lab", {"kubeconfig": "x"})
_cm = res(RELEASE, "cm", cert_manager(), provider=_p.urn)
_ns = res(
    NS,
    "ns",
    {
        "metadata": {
            "name": "gke-mldiagnostics",
            "annotations": {"ml-diagnostics.dev/cert-manager": "preinstalled"},
        }
    },
    provider=K8S_PROVIDER,
)
for kind in (RELEASE, CHART):
    case(
        R, "violation", kind, "webhook without cert-manager", _p, res(kind, "wh", webhook(), provider=_p.urn)
    )
    case(
        R,
        "pass",
        kind,
        "webhook after cert-manager",
        _p,
        _cm,
        res(kind, "wh", webhook(), provider=_p.urn, deps=(_cm.urn,)),
    )
case(
    R, "pass", RELEASE, "cert-manager pre-installed", _p, _ns, res(RELEASE, "wh", webhook(), provider=_p.urn)
)

# --- GKE ---------------------------------------------------------------------------------------------
R = "gke-managed-diagnostics-min-version"
case(
    R,
    "violation",
    CLUSTER,
    "prefix 1.35.0 includes older builds",
    res(CLUSTER, "c", cluster(version="1.35.0")),
)
case(R, "violation", ADOPTED, "adopted 1.34", res(ADOPTED, "a", adopted(version="1.34.9-gke.1")))
case(R, "pass", CLUSTER, "prefix 1.35.1", res(CLUSTER, "c", cluster(version="1.35.1")))
case(R, "pass", CLUSTER, "prefix 1.36", res(CLUSTER, "c", cluster(version="1.36")))
case(R, "pass", ADOPTED, "adopted at the threshold", res(ADOPTED, "a", adopted(version="1.35.0-gke.3065000")))

R = "gke-managed-diagnostics-explicit"
case(R, "violation", CLUSTER, "block omitted", res(CLUSTER, "c", cluster(enabled=None)))
case(
    R,
    "violation",
    ADOPTED,
    "adopted without enabled",
    res(ADOPTED, "a", {k: v for k, v in adopted().items() if k != "enabled"}),
)
case(R, "pass", CLUSTER, "enabled false", res(CLUSTER, "c", cluster(enabled=False)))
case(R, "pass", ADOPTED, "adopted enabled", res(ADOPTED, "a", adopted()))

R = "gke-no-manual-releases-when-managed"
for kind in (RELEASE, CHART):
    for managed, expect in ((True, "violation"), (False, "pass")):
        c = res(CLUSTER, "train", cluster(managed), parent=PARENT)
        p = res(PROVIDER, "k", {"kubeconfig": "{}"}, parent=PARENT, deps=(c.urn,))
        wh = res(kind, "wh", webhook(), provider=p.urn)
        case(R, expect, kind, f"webhook on a cluster with managed={managed}", c, p, wh)
_c = res(CLUSTER, "train", cluster(True), parent=PARENT)
case(
    R,
    "pass",
    CLUSTER,
    "managed cluster, no manual release",
    _c,
    res(PROVIDER, "k", {"kubeconfig": "{}"}, parent=PARENT, deps=(_c.urn,)),
)

# --- Azure ML extension and AKS ------------------------------------------------------------------------


def ext_forms(rule: str, expect: str, label: str, props: dict) -> None:
    case(rule, expect, EXT, label, res(EXT, "e", props))
    case(rule, expect, EXT_V, label, res(EXT_V, "e", props))


SSL = {**HTTPS, "sslSecret": "azureml-tls"}
R = "azureml-workloads-enabled"
ext_forms(R, "violation", "neither training nor inference", extension({"enableTraining": "False"}))
case(R, "pass", EXT, "training", res(EXT, "e", extension(TRAINING)))
case(R, "pass", EXT_V, "inference with a router type", res(EXT_V, "e", extension(SSL)))

R = "azureml-inference-https"
ext_forms(R, "violation", "HTTPS without certificate", extension(HTTPS))
case(R, "pass", EXT, "sslSecret", res(EXT, "e", extension(SSL)))
case(R, "pass", EXT_V, "protected PEMs", res(EXT_V, "e", extension(HTTPS, PEMS)))

R = "azureml-secrets-protected"
ext_forms(
    R,
    "violation",
    "key PEM in plain settings",
    extension({**TRAINING, "sslKeyPemFile": "-----BEGIN PRIVATE KEY-----x"}),
)
case(R, "pass", EXT, "PEMs protected", res(EXT, "e", extension(HTTPS, PEMS)))
case(R, "pass", EXT_V, "plain non-secret settings", res(EXT_V, "e", extension(TRAINING)))

R = "azureml-cluster-scope"
ext_forms(
    R, "violation", "namespace scope", extension(TRAINING, scope={"namespace": {"targetNamespace": "ml"}})
)
case(R, "pass", EXT, "cluster scope azureml", res(EXT, "e", extension(TRAINING)))
case(R, "pass", EXT_V, "cluster scope on Arc", res(EXT_V, "e", extension(TRAINING, kind="arc")))

R = "azureml-arc-relay"
ext_forms(
    R,
    "violation",
    "Arc without relay",
    extension(
        TRAINING,
        {"x": "y"},
        kind="aks",
        clusterRp="Microsoft.Kubernetes",
        clusterResourceName="connectedClusters",
    ),
)
case(R, "pass", EXT, "Arc with relay", res(EXT, "e", extension(TRAINING, kind="arc")))
case(R, "pass", EXT_V, "AKS needs no relay", res(EXT_V, "e", extension(TRAINING)))

R = "azureml-version-pinned"
ext_forms(R, "violation", "follows the release train", extension(TRAINING))
case(
    R,
    "violation",
    EXT,
    "pinned with auto-upgrade on",
    res(EXT, "e", extension(TRAINING, version="1.1.39", autoUpgradeMinorVersion=True)),
)
case(
    R,
    "pass",
    EXT,
    "pinned",
    res(EXT, "e", extension(TRAINING, version="1.1.39", autoUpgradeMinorVersion=False)),
)
case(
    R,
    "pass",
    EXT_V,
    "pinned, newer API token",
    res(EXT_V, "e", extension(TRAINING, version="1.1.39", autoUpgradeMinorVersion=False)),
)

R = "azureml-allowed-subscriptions"
ext_forms(R, "violation", "cluster in another subscription", extension(TRAINING, sub=OTHER_SUB))
case(R, "pass", EXT, "workspace subscription", res(EXT, "e", extension(TRAINING)))
case(
    R,
    "pass",
    EXT_V,
    "Arc cluster in the workspace subscription",
    res(EXT_V, "e", extension(TRAINING, kind="arc")),
)

R = "azureml-setting-keys-case"
ext_forms(R, "violation", "InferenceRouterHA", extension({**SSL, "InferenceRouterHA": "False"}))
case(
    R,
    "violation",
    EXT,
    "nodeselector.pool",
    res(EXT, "e", extension({**TRAINING, "nodeselector.pool": "gpu"})),
)
case(
    R,
    "pass",
    EXT,
    "exact keys",
    res(EXT, "e", extension({**SSL, "inferenceRouterHA": "False", "nodeSelector.pool": "gpu"})),
)
case(
    R,
    "pass",
    EXT_V,
    "a custom key no setting resembles",
    res(EXT_V, "e", extension({**TRAINING, "teamTag": "ml"})),
)

R = "azureml-internal-lb-aks-only"
ext_forms(R, "violation", "on Arc", extension({**SSL, "internalLoadBalancerProvider": "azure"}, kind="arc"))
case(
    R,
    "violation",
    EXT,
    "value other than azure",
    res(EXT, "e", extension({**SSL, "internalLoadBalancerProvider": "aws"})),
)
case(
    R,
    "pass",
    EXT,
    "AKS with azure",
    res(EXT, "e", extension({**SSL, "internalLoadBalancerProvider": "azure"})),
)
case(R, "pass", EXT_V, "Arc without it", res(EXT_V, "e", extension(SSL, kind="arc")))


def aks_cluster(*pools, token: str = MC, **extra) -> object:
    profiles = [{"name": f"p{i}", "vmSize": size, "count": n} for i, (size, n) in enumerate(pools)]
    return res(
        token,
        "aks",
        {
            "resourceName": "cl",
            "resourceGroupName": "rg",
            "identity": {"type": "SystemAssigned"},
            "agentPoolProfiles": profiles,
            **extra,
        },
    )


R = "azureml-inference-router-ha"
for token in (MC, MC_V):
    case(
        R,
        "violation",
        token,
        "2 nodes, HA by default",
        aks_cluster(("Standard_D4s_v3", 2), token=token),
        res(EXT, "e", extension(SSL)),
    )
case(
    R,
    "violation",
    EXT_V,
    "2 nodes, wrong-case key is ignored",
    aks_cluster(("Standard_D4s_v3", 2)),
    res(EXT_V, "e", extension({**SSL, "InferenceRouterHA": "False"})),
)
case(R, "pass", MC, "3 nodes", aks_cluster(("Standard_D4s_v3", 3)), res(EXT, "e", extension(SSL)))
case(
    R,
    "pass",
    MC,
    "2 nodes with inferenceRouterHA False",
    aks_cluster(("Standard_D4s_v3", 2)),
    res(EXT, "e", extension({**SSL, "inferenceRouterHA": "False"})),
)
case(
    R,
    "pass",
    POOL,
    "1 node plus an AgentPool of 2",
    aks_cluster(("Standard_D4s_v3", 1)),
    res(
        POOL, "gpu", {"resourceName": "cl", "agentPoolName": "gpu", "count": 2, "vmSize": "Standard_NC6s_v3"}
    ),
    res(EXT, "e", extension(SSL)),
)
case(
    R,
    "violation",
    POOL,
    "autoscaled AgentPool at minCount 1",
    aks_cluster(("Standard_D4s_v3", 1)),
    res(
        POOL,
        "gpu",
        {"resourceName": "cl", "enableAutoScaling": True, "minCount": 1, "maxCount": 5, "count": 3},
    ),
    res(EXT, "e", extension(SSL)),
)

R = "aks-managed-identity-local-accounts"
for token in (MC, MC_V):
    case(R, "violation", token, "local accounts disabled", res(token, "aks", aks(disableLocalAccounts=True)))
case(R, "pass", MC, "system-assigned identity", res(MC, "aks", aks()))
case(R, "pass", MC_V, "user-assigned identity", res(MC_V, "aks", aks(identity={"type": "UserAssigned"})))

R = "aks-no-pod-identity"
for token in (MC, MC_V):
    case(
        R, "violation", token, "pod identity on", res(token, "aks", aks(podIdentityProfile={"enabled": True}))
    )
case(R, "pass", MC, "pod identity off", res(MC, "aks", aks(podIdentityProfile={"enabled": False})))
case(
    R,
    "pass",
    MC_V,
    "workload identity instead",
    res(MC_V, "aks", aks(securityProfile={"workloadIdentity": {"enabled": True}})),
)

R = "aks-node-size-minimum"
for token in (MC, MC_V):
    case(
        R, "violation", token, "1 x D2s_v3 (2 vCPU, 8 GiB)", aks_cluster(("Standard_D2s_v3", 1), token=token)
    )
case(R, "violation", MC, "3 x DS1_v2 (3 vCPU)", aks_cluster(("Standard_DS1_v2", 3)))
case(R, "pass", MC, "1 x D4s_v3", aks_cluster(("Standard_D4s_v3", 1)))
case(R, "pass", MC_V, "2 x D2s_v3", aks_cluster(("Standard_D2s_v3", 2), token=MC_V))

R = "aks-authorized-ip-ranges"
for token in (MC, MC_V):
    case(
        R,
        "violation",
        token,
        "authorised ranges set",
        aks_cluster(
            ("Standard_D4s_v3", 3),
            token=token,
            apiServerAccessProfile={"authorizedIPRanges": ["203.0.113.0/24"]},
        ),
    )
case(R, "pass", MC, "no authorised ranges", aks_cluster(("Standard_D4s_v3", 3)))
case(
    R,
    "pass",
    MC_V,
    "empty list",
    aks_cluster(("Standard_D4s_v3", 3), token=MC_V, apiServerAccessProfile={"authorizedIPRanges": []}),
)

# --- Model Development Cluster ---------------------------------------------------------------------------
R = "mdc-node-pool-references"
case(R, "violation", MDC, "login pool not defined", res(MDC, "m", spec(login_node_pool_id="nope")))
case(R, "pass", MDC, "well-formed", res(MDC, "m", spec()))
case(
    R,
    "pass",
    MDC,
    "node set on a defined pool",
    res(MDC, "m", spec(node_sets=[{"id": "a", "node_pool_id": "cpu"}])),
)

R = "mdc-slurm-config-exclusive"
case(
    R, "violation", MDC, "config and scheduling", res(MDC, "m", spec(config={"A": "b"}, scheduling={"x": 1}))
)
case(R, "pass", MDC, "config only", res(MDC, "m", spec(config={"A": "b"})))
case(R, "pass", MDC, "legacy scheduling only", res(MDC, "m", spec(scheduling={"x": 1})))

R = "mdc-node-images-pinned"
_unpinned = spec()
_unpinned["node_pools"] = [pool("cpu", image=None), pool("login")]
case(R, "violation", MDC, "pool without node_image", res(MDC, "m", _unpinned))
case(R, "pass", MDC, "every pool pinned", res(MDC, "m", spec()))
case(
    R, "pass", MDC, "USER_ONLY keeps today's images", res(MDC, "m", {**_unpinned, "update_mode": "USER_ONLY"})
)

R = "mdc-deletion-policy"
case(R, "violation", MDC, "DELETE", res(MDC, "m", {**spec(), "deletion_policy": "DELETE"}))
case(R, "pass", MDC, "PREVENT", res(MDC, "m", spec()))
case(R, "pass", MDC, "ABANDON", res(MDC, "m", {**spec(), "deletion_policy": "ABANDON"}))

# Forms each rule claims (README rows say the same).
DS_FORMS = {DS, DS_BETA, f"{CG} objs", f"{CG} yaml", CF, DS_PATCH}
for _rule, _forms in {
    **{r: DS_FORMS for r in ("k8s-images-pinned", "k8s-images-allowed-registries", "k8s-privileged-only-diagon",
                             "k8s-daemonset-memory-limit", "k8s-diagon-no-cpu-limit", "k8s-host-network-dns-policy")},
    "k8s-opt-in-label-value": {NS, NS_PATCH, JOBSET, f"{CG} yaml", f"{CG} objs"},
    "k8s-diagon-pod-security": {NS, NS_PATCH, DS, f"{CG} objs"},
    **{r: {RELEASE, CHART} for r in EXPECTED if r.startswith("helm-")},
    "gke-managed-diagnostics-min-version": {CLUSTER, ADOPTED},
    "gke-managed-diagnostics-explicit": {CLUSTER, ADOPTED},
    "gke-no-manual-releases-when-managed": {RELEASE, CHART},
    **{r: {EXT, EXT_V} for r in EXPECTED if r.startswith("azureml-") and r != "azureml-inference-router-ha"},
    "azureml-inference-router-ha": {MC, MC_V, POOL, EXT_V},
    **{r: {MC, MC_V} for r in EXPECTED if r.startswith("aks-")},
    **{r: {MDC} for r in EXPECTED if r.startswith("mdc-")},
}.items():  # fmt: skip
    claims(_rule, *_forms)
policy_corpus.load()  # the cases and claims of rules whose own test files bring them


def test_counts_every_rule_has_its_cases_and_forms(capsys):
    by_rule = {r: [c for c in CASES if c.rule == r] for r in EXPECTED}
    for rule, cases in by_rule.items():
        kinds = Counter(c.expect for c in cases)
        assert kinds["violation"] >= 1 and kinds["pass"] >= 2, (rule, kinds)
        claimed = policy_corpus.CLAIMS.get(rule, set())
        assert claimed <= {c.form for c in cases}, (rule, claimed - {c.form for c in cases})
    forms = {c.form for c in CASES}
    with capsys.disabled():
        print(
            f"\n{len(EXPECTED)} rules, {len(CASES)} cases "
            f"({sum(c.expect == 'violation' for c in CASES)} violating, {sum(c.expect == 'pass' for c in CASES)} "
            f"valid), {len(forms)} resource forms"
        )


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    return tmp_path_factory.mktemp("manifests")


PROD_OPTIONS = {k: v for k, v in env_config("prod").items() if isinstance(v, dict)}


@pytest.mark.parametrize("c", CASES, ids=[f"{c.rule}:{c.expect}:{c.form}:{c.label}" for c in CASES])
def test_case(pack, files, c):
    """Prod options, every rule mandatory: a valid case yields nothing, a violating one a real finding."""
    resources = []
    for r in c.resources:
        r = copy.deepcopy(r)
        if r.type == CF:
            path = files / f"case-{CASES.index(c)}.yaml"
            path.write_text(yaml.safe_dump(r.inputs.pop("__doc")))
            r.inputs["file"] = str(path)
        resources.append(r)
    found = pack.findings(c.rule, resources, {"all": "mandatory", **PROD_OPTIONS})
    if c.expect == "pass":
        assert found == [], [v.message for v in found]
    else:
        assert found, c
        assert all("can't run policy" not in v.message for v in found), [v.message for v in found]
        assert all(body(v) for v in found)
