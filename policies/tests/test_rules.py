"""Fast in-process rule tests (the repository's tests/test_policies_*.py drive the same rules over the
Analyzer protocol)."""

from __future__ import annotations

from harness import check, check_stack
from mldiag_policy.rules.aks import vm_size
from mldiag_policy.rules.azure_ml_settings import wrong_case

DS = "kubernetes:apps/v1:DaemonSet"
PATCH = "kubernetes:apps/v1:DaemonSetPatch"
EXT = "azure-native:kubernetesconfiguration/v20230501:Extension"
MC = "azure-native:containerservice:ManagedCluster"


def diagon(**pod) -> dict:
    spec = {"hostNetwork": True, "dnsPolicy": "ClusterFirstWithHostNet", **pod}
    spec["containers"] = [
        {
            "name": "diagon-daemon",
            "image": "us-docker.pkg.dev/hypercomputediagon-release/daemon/diagon-daemon:v2.1.0",
            "resources": {"requests": {"cpu": "10m"}, "limits": {"memory": "256Mi"}},
        }
    ]
    return {
        "metadata": {"name": "diagon-daemon", "namespace": "diagon"},
        "spec": {"template": {"spec": spec}},
    }


def test_patch_judged_as_a_patch():
    image_only = {
        "metadata": {"name": "diagon-daemon", "namespace": "diagon"},
        "spec": {"template": {"spec": {"containers": [{"name": "diagon-daemon", "image": "x.io/d:v2"}]}}},
    }
    assert check("k8s-daemonset-memory-limit", PATCH, image_only) == []
    assert check("k8s-host-network-dns-policy", PATCH, image_only) == []
    no_image = {"spec": {"template": {"spec": {"containers": [{"name": "diagon-daemon"}]}}}}
    assert check("k8s-images-pinned", PATCH, no_image) == []


def test_diagon_cpu_limit_and_dns_policy():
    assert check("k8s-diagon-no-cpu-limit", DS, diagon()) == []
    limited = diagon()
    limited["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["cpu"] = "1"
    (msg,) = check("k8s-diagon-no-cpu-limit", DS, limited)
    assert msg.startswith("Diagon DaemonSet 'diagon-daemon' container 'diagon-daemon' sets a CPU limit (1)")
    (msg,) = check("k8s-host-network-dns-policy", DS, diagon(dnsPolicy="ClusterFirst"))
    assert "dnsPolicy ClusterFirst;" in msg


def test_opt_in_label_exactly_true():
    ns = "kubernetes:core/v1:Namespace"
    assert (
        check("k8s-opt-in-label-value", ns, {"metadata": {"labels": {"managed-mldiagnostics-gke": "true"}}})
        == []
    )
    (msg,) = check(
        "k8s-opt-in-label-value",
        ns,
        {"metadata": {"name": "ai", "labels": {"managed-mldiagnostics-gke": True}}},
    )
    assert msg.startswith("Namespace 'ai' sets label managed-mldiagnostics-gke=True;")


def test_setting_keys_case():
    assert wrong_case("InferenceRouterHA") == "inferenceRouterHA"
    assert wrong_case("inferenceRouterHA") is None
    assert wrong_case("NodeSelector.pool") == "nodeSelector.pool"
    assert wrong_case("teamTag") is None
    ext = {
        "extensionType": "Microsoft.AzureML.Kubernetes",
        "configurationSettings": {"enableTraining": "True", "InferenceRouterHA": "False"},
    }
    (msg,) = check("azureml-setting-keys-case", EXT, ext)
    assert "has key 'InferenceRouterHA'; the extension reads 'inferenceRouterHA'" in msg


def test_router_ha_counts_pools_and_agent_pools():
    ext = {
        "extensionType": "Microsoft.AzureML.Kubernetes",
        "clusterName": "cl",
        "clusterRp": "Microsoft.ContainerService",
        "configurationSettings": {"enableInference": "True"},
    }
    cluster = {"resourceName": "cl", "agentPoolProfiles": [{"vmSize": "Standard_D4s_v3", "count": 2}]}
    (msg,) = check_stack("azureml-inference-router-ha", [(MC, cluster), (EXT, ext)])
    assert "with 2 worker node(s) and inferenceRouterHA unset (default True)" in msg
    pool = ("azure-native:containerservice:AgentPool", {"resourceName": "cl", "count": 1})
    assert check_stack("azureml-inference-router-ha", [(MC, cluster), pool, (EXT, ext)]) == []


def test_vm_sizes():
    assert vm_size("Standard_D4s_v3", {}) == (4.0, 16.0)
    assert vm_size("Standard_DS2_v2", {}) == (2.0, 7.0)
    assert vm_size("Standard_E8s_v5", {}) == (8.0, 64.0)
    assert vm_size("Standard_B2ms", {}) == (2.0, 8.0)
    assert vm_size("Custom_X", {"Custom_X": [16, 64]}) == (16.0, 64.0)
    assert vm_size("Standard_DS3_v2", {}) == (4.0, 14.0)  # Dv2 numbering: DS3_v2 has 4 vCPUs
    assert vm_size("Standard_NC6s_v3", {}) == (6.0, 112.0)  # GPU sizes need no option
    assert vm_size("Standard_ND96isr_H100_v5", {}) == (96.0, 1900.0)
    assert vm_size("Standard_M128s", {}) is None
