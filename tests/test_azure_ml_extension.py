"""AzureMlExtension under the offline plan runtime: what is sent equals what `az k8s-extension create` sends.

Each expected dict is written out by hand from the CLI's source (azure-cli-extensions,
src/k8s-extension/azext_k8s_extension/partner_extensions/AzureMLKubernetes.py `Create` and custom.py
`create_k8s_extension`) for the seed's command line of the same scenario. The CLI puts Python bools into
the str-typed settings map, so derived flags serialize as "True"/"False"; the per-kind component flags and
the small-cluster defaults are literal lowercase strings in its source.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from ml_diagnostics.azure_ml import configuration_settings, relay_namespace_name
from mldiag.engine import runtime as plan_runtime
from mldiag.engine.runtime import ROOT, run_config
from mldiag.plan.cli import build_report, plan_stack, read_stack_file
from mldiag.plan.cli import main as plan_main
from mldiag.report import render as plan_render
from program.config import ConfigError, is_placeholder, parse
from program.kinds.azure_ml import mocks as azure_mocks
from program.kinds.azure_ml.build import args as azure_args

NS = "ml-diagnostics"
KEY = f"{NS}:azureMl"
SUB = "3f2b7c1e-8d4a-4b6e-9c0f-1a2b3c4d5e6f"
EXT = "azure-native:kubernetesconfiguration:Extension"
RELAY_NS = "azure-native:relay:Namespace"
RELAY_HC = "azure-native:relay:HybridConnection"
RELAY_RULE = "azure-native:relay:HybridConnectionAuthorizationRule"
PROVIDER = "pulumi:providers:azure-native"
SUB_2 = "0c9d8e7f-6a5b-4c3d-2e1f-0a9b8c7d6e5f"
TENANT = "72f988bf-86f1-41af-91ab-2d7cd011db47"

# Test PEMs (shape only) with CRLF line ends, as a file copied from Windows would have.
CERT_BODY = "MIIBszCCAVmgAwIBAgIUXk9wZW5BSS1tbGRpYWctdGVzdC1jZXJ0"
KEY_BODY = "MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgS2V5Qm9keQ"
CERT = f"-----BEGIN CERTIFICATE-----\r\n{CERT_BODY}\r\n-----END CERTIFICATE-----\r\n"
KEY_PEM = f"-----BEGIN PRIVATE KEY-----\r\n{KEY_BODY}\r\n-----END PRIVATE KEY-----\r\n"
# What the CLI sends: base64 of the file read in text mode (LF line ends), trailing newline included.
CERT_B64 = base64.b64encode(
    f"-----BEGIN CERTIFICATE-----\n{CERT_BODY}\n-----END CERTIFICATE-----\n".encode()
).decode()
KEY_B64 = base64.b64encode(
    f"-----BEGIN PRIVATE KEY-----\n{KEY_BODY}\n-----END PRIVATE KEY-----\n".encode()
).decode()


def cluster(kind: str, name: str, rg: str, nodes: int, location: str = "koreacentral") -> dict[str, Any]:
    return {
        "kind": kind,
        "subscriptionId": SUB,
        "resourceGroup": rg,
        "name": name,
        "location": location,
        "nodeCount": nodes,
    }


def plan(targets: list[dict[str, Any]]) -> plan_runtime.PlanResult:
    return run_config({f"{NS}:environment": "dev", KEY: targets}, [KEY])


def arm_id(rp: str, kind: str, rg: str, name: str) -> str:
    return f"/subscriptions/{SUB}/resourceGroups/{rg}/providers/{rp}/{kind}/{name}"


def derived(cluster_id: str, name: str, location: str, kind: str) -> dict[str, str]:
    """The keys `Create` always adds (cluster facts, dereferenced cluster_name, per-kind component flags)."""
    aks = kind == "aks"
    return {
        "cluster_name": cluster_id,
        "clusterId": cluster_id,
        "prometheus.prometheusSpec.externalLabels.cluster_name": cluster_id,
        "cluster_name_friendly": name,
        "location": location,
        "jobSchedulerLocation": location,
        "domain": f"{location}.cloudapp.azure.com",
        "servicebus.enabled": "false",
        "relayserver.enabled": "false" if aks else "true",
        "nginxIngress.enabled": "true" if aks else "false",
    }


def hc_id(rg: str, ns: str, hc: str) -> str:
    # The CLI sends the id ARM returns for the hybrid connection (here: the offline plan's realistic mock).
    return (
        f"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/{rg}"
        f"/providers/Microsoft.Relay/namespaces/{ns}/hybridConnections/{hc}"
    )


def connection_string(ns: str, hc: str) -> str:
    return (
        f"Endpoint=sb://{ns}.servicebus.windows.net/;SharedAccessKeyName=azureml_rw;"
        f"SharedAccessKey={azure_mocks._FAKE_RELAY_KEY};EntityPath={hc}"
    )


# --- seed scenario 1: AKS proof of concept ------------------------------------------------------------------
# az k8s-extension create --name azureml-poc --extension-type Microsoft.AzureML.Kubernetes
#   --config enableTraining=True enableInference=True inferenceRouterServiceType=LoadBalancer
#            allowInsecureConnections=True InferenceRouterHA=False
#   --cluster-type managedClusters --cluster-name aks-poc --resource-group rg-poc --scope cluster
# on a 2-node cluster.

SCENARIO_1 = {
    "name": "poc",
    "extensionName": "azureml-poc",
    "cluster": cluster("aks", "aks-poc", "rg-poc", 2),
    "training": True,
    "inference": {
        "enabled": True,
        "routerServiceType": "LoadBalancer",
        "allowInsecureConnections": True,
        "routerHA": False,
    },
}


def test_scenario_1_aks_proof_of_concept():
    result = plan([SCENARIO_1])
    assert [(r.type, r.name) for r in result.resources] == [
        ("mldiag:index:AzureMlExtension", "azureml-poc"),
        (PROVIDER, "azureml-poc-provider"),  # bound to the target's subscription
        (EXT, "azureml-poc-extension"),  # AKS: no relay
    ]
    ext = result.one(EXT)
    aks_id = arm_id("Microsoft.ContainerService", "managedClusters", "rg-poc", "aks-poc")
    assert ext.unmasked_inputs == {
        "clusterRp": "Microsoft.ContainerService",
        "clusterResourceName": "managedClusters",
        "clusterName": "aks-poc",
        "resourceGroupName": "rg-poc",
        "extensionName": "azureml-poc",
        "extensionType": "Microsoft.AzureML.Kubernetes",  # the CLI lowercases it; ARM compares case-blind
        "scope": {"cluster": {"releaseNamespace": "azureml"}},  # --scope cluster, namespace forced to azureml
        "releaseTrain": "stable",  # no --release-train given
        # No --auto-upgrade-minor-version: the CLI omits it and ARM defaults to true; the SDK sends the default.
        "autoUpgradeMinorVersion": True,
        # managedClusters: the CLI creates no extension identity (no "identity" key at all).
        "configurationSettings": {
            # --config as typed ("True"/"False"); the seed types `InferenceRouterHA`, the chart reads
            # `inferenceRouterHA` (the CLI forwards the typo verbatim and then adds inferenceRouterHA=false
            # for the small cluster on its own): we send the key the chart reads.
            "enableTraining": "True",
            "enableInference": "True",
            "inferenceRouterServiceType": "LoadBalancer",
            "allowInsecureConnections": "True",
            "inferenceRouterHA": "False",
            # fewer than 3 nodes: clusterPurpose defaulted
            "clusterPurpose": "DevTest",
            **derived(aks_id, "aks-poc", "koreacentral", "aks"),
        },
        "configurationProtectedSettings": {},
    }


# --- seed scenario 2: Arc, training only --------------------------------------------------------------------
# az k8s-extension create --name azureml-train --extension-type Microsoft.AzureML.Kubernetes
#   --config enableTraining=True --cluster-type connectedClusters --cluster-name arc-lab-gpu
#   --resource-group rg-mldiag-staging --scope cluster          (3 nodes)

SCENARIO_2 = {
    "name": "arc-train",
    "extensionName": "azureml-train",
    "cluster": cluster("arc", "arc-lab-gpu", "rg-mldiag-staging", 3),
    "training": True,
}
# alnum("arc-lab-gpu-<sub>-rg-mldiag-staging-relay") is 61 > 50: first 44 + md5(unfiltered)[:6]
RELAY_2 = "arclabgpu3f2b7c1e8d4a4b6e9c0f1a2b3c4d5e6frgm7d2124"


def test_scenario_2_arc_training_only():
    result = plan([SCENARIO_2])
    arc_id = arm_id("Microsoft.Kubernetes", "connectedClusters", "rg-mldiag-staging", "arc-lab-gpu")
    assert_relay(result, "arc-train", RELAY_2, "rg-mldiag-staging", "arc-lab-gpu", "koreacentral")
    ext = result.one(EXT)
    assert ext.unmasked_inputs == {
        "clusterRp": "Microsoft.Kubernetes",
        "clusterResourceName": "connectedClusters",
        "clusterName": "arc-lab-gpu",
        "resourceGroupName": "rg-mldiag-staging",
        "extensionName": "azureml-train",
        "extensionType": "Microsoft.AzureML.Kubernetes",
        "scope": {"cluster": {"releaseNamespace": "azureml"}},
        "releaseTrain": "stable",
        "autoUpgradeMinorVersion": True,
        "identity": {"type": "SystemAssigned"},  # create_identity on connectedClusters
        "configurationSettings": {
            "enableTraining": "True",
            "enableInference": "False",  # not given: the CLI stores the bool False
            **derived(arc_id, "arc-lab-gpu", "koreacentral", "arc"),
            "relayserver.hybridConnectionResourceID": hc_id("rg-mldiag-staging", RELAY_2, "arc-lab-gpu"),
            "relayserver.hybridConnectionName": "arc-lab-gpu",
        },
        "configurationProtectedSettings": {
            "relayServerConnectionString": connection_string(RELAY_2, "arc-lab-gpu"),
            "relayserver.relayConnectionString": connection_string(RELAY_2, "arc-lab-gpu"),
        },
    }
    assert ext.inputs["configurationProtectedSettings"] == {
        "relayServerConnectionString": "[secret]",
        "relayserver.relayConnectionString": "[secret]",
    }
    # The extension waits for the relay's authorization rule (the connection string comes from its keys).
    rule = result.one(RELAY_RULE)
    assert rule.urn in ext.dependencies


def assert_relay(
    result: plan_runtime.PlanResult, target: str, ns: str, rg: str, hc: str, location: str
) -> None:
    assert [(r.type, r.name) for r in result.resources] == [
        ("mldiag:index:AzureMlExtension", f"azureml-{target}"),
        (PROVIDER, f"azureml-{target}-provider"),
        (RELAY_NS, f"azureml-{target}-relay"),
        (RELAY_HC, f"azureml-{target}-relay-hc"),
        (RELAY_RULE, f"azureml-{target}-relay-rule"),
        (EXT, f"azureml-{target}-extension"),
    ]
    parent = result.resources[0].urn
    assert all(r.parent == parent for r in result.resources[1:])
    namespace, hybrid, rule = result.one(RELAY_NS), result.one(RELAY_HC), result.one(RELAY_RULE)
    assert (
        namespace.unmasked_inputs
        == {
            "namespaceName": ns,
            "resourceGroupName": rg,  # the Arc cluster's resource group
            "location": location,
            "tags": {"created_by": "Azure Arc-enabled ML"},
            "publicNetworkAccess": "Enabled",  # the SDK's default; the CLI sends none and ARM's default is the same
        }
    )
    assert hybrid.unmasked_inputs == {
        "namespaceName": ns,
        "resourceGroupName": rg,
        "hybridConnectionName": hc,  # the cluster's name
        "requiresClientAuthorization": True,
    }
    assert namespace.urn in hybrid.dependencies
    assert rule.unmasked_inputs == {
        "namespaceName": ns,
        "resourceGroupName": rg,
        "hybridConnectionName": hc,
        "authorizationRuleName": "azureml_rw",
        "rights": ["Manage", "Send", "Listen"],
    }
    assert hybrid.urn in rule.dependencies


def test_every_azure_resource_uses_the_explicit_provider_of_its_subscription():
    second = {**SCENARIO_2, "name": "other", "cluster": {**SCENARIO_2["cluster"], "subscriptionId": SUB_2}}
    result = plan([SCENARIO_1, SCENARIO_2, second])
    report = build_report(result, [])
    providers = {r["urn"]: r for r in report["resources"] if r["type"] == PROVIDER}
    # Two distinct subscriptions, three targets: one explicit provider per target, bound to its subscription.
    assert sorted(p["inputs"]["subscriptionId"] for p in providers.values()) == sorted([SUB, SUB, SUB_2])
    target_sub = {"azureml-poc": SUB, "azureml-arc-train": SUB, "azureml-other": SUB_2}
    azure = [r for r in report["resources"] if r["type"].startswith("azure-native:")]
    assert len(azure) == 1 + 3 + 3 + 1 + 1  # AKS extension; two Arc targets with relay (3) + extension
    for r in azure:
        component = next(t for t in target_sub if r["name"].startswith(t + "-"))
        assert r["provider"] in providers, r["name"]
        assert providers[r["provider"]]["inputs"]["subscriptionId"] == target_sub[component], r["name"]
        assert providers[r["provider"]]["name"] == f"{component}-provider"
    assert {p["inputs"]["environment"] for p in providers.values()} == {"public"}  # the SDK's default


def test_tenant_and_cloud_environment_reach_the_provider():
    target = {**SCENARIO_1, "cluster": {**SCENARIO_1["cluster"], "tenantId": TENANT.upper()}}
    target["cluster"]["cloudEnvironment"] = "usgovernment"
    result = plan([target])
    assert result.one(PROVIDER).unmasked_inputs == {
        "subscriptionId": SUB,
        "tenantId": TENANT,
        "environment": "usgovernment",
    }
    assert result.one(EXT).provider == result.one(PROVIDER).urn


# --- seed scenario 3: AKS production, HTTPS, public load balancer -------------------------------------------
# az k8s-extension create --name azureml --extension-type Microsoft.AzureML.Kubernetes
#   --config enableTraining=True enableInference=True inferenceRouterServiceType=LoadBalancer
#            sslCname=ml.example.com
#   --config-protected sslCertPemFile=./cert.pem sslKeyPemFile=./key.pem
#   --cluster-type managedClusters --cluster-name aks-prod --resource-group rg-prod --scope cluster  (5 nodes)

SCENARIO_3 = {
    "name": "prod",
    "extensionName": "azureml",
    "cluster": cluster("aks", "aks-prod", "rg-prod", 5, location="westeurope"),
    "training": True,
    "inference": {
        "enabled": True,
        "routerServiceType": "LoadBalancer",
        "sslCname": "ml.example.com",
        "sslCertPem": CERT,
        "sslKeyPem": KEY_PEM,
    },
}


def test_scenario_3_aks_production_https():
    result = plan([SCENARIO_3])
    ext = result.one(EXT)
    aks_id = arm_id("Microsoft.ContainerService", "managedClusters", "rg-prod", "aks-prod")
    assert "identity" not in ext.unmasked_inputs
    assert ext.unmasked_inputs["releaseTrain"] == "stable"
    assert ext.unmasked_inputs["scope"] == {"cluster": {"releaseNamespace": "azureml"}}
    assert ext.unmasked_inputs["configurationSettings"] == {
        "enableTraining": "True",
        "enableInference": "True",
        "inferenceRouterServiceType": "LoadBalancer",
        "sslCname": "ml.example.com",
        # 5 nodes: no clusterPurpose / inferenceRouterHA; public LB: no scoringFe.serviceType.* key
        **derived(aks_id, "aks-prod", "westeurope", "aks"),
    }
    # The CLI also forwards the local paths (sslCertPemFile/sslKeyPemFile) it read; we have PEM text, no path.
    assert ext.unmasked_inputs["configurationProtectedSettings"] == {
        "scoringFe.sslCert": CERT_B64,
        "scoringFe.sslKey": KEY_B64,
    }
    assert ext.inputs["configurationProtectedSettings"] == {
        "scoringFe.sslCert": "[secret]",
        "scoringFe.sslKey": "[secret]",
    }


# --- seed scenario 4: Arc production, NodePort, HTTPS, NVIDIA device plugin and DCGM exporter ---------------
# az k8s-extension create --name azureml --extension-type Microsoft.AzureML.Kubernetes
#   --config enableTraining=True enableInference=True inferenceRouterServiceType=NodePort
#            sslCname=ml.example.com installNvidiaDevicePlugin=True installDcgmExporter=True
#   --config-protected sslCertPemFile=./cert.pem sslKeyPemFile=./key.pem
#   --cluster-type connectedClusters --cluster-name gpu --resource-group rg-op --scope cluster  (4 nodes)

SCENARIO_4 = {
    "name": "onprem",
    "extensionName": "azureml",
    "cluster": cluster("arc", "gpu", "rg-op", 4, location="eastus"),
    "training": True,
    "inference": {
        "enabled": True,
        "routerServiceType": "nodeport",
        "sslCname": "ml.example.com",
        "sslCertPem": CERT,
        "sslKeyPem": KEY_PEM,
    },
    "installNvidiaDevicePlugin": True,
    "installDcgmExporter": True,
}
# alnum("gpu-<sub>-rg-op-relay") is 44 characters: used as is.
RELAY_4 = "gpu3f2b7c1e8d4a4b6e9c0f1a2b3c4d5e6frgoprelay"


def test_scenario_4_arc_production_node_port_gpu():
    result = plan([SCENARIO_4])
    assert_relay(result, "onprem", RELAY_4, "rg-op", "gpu", "eastus")
    ext = result.one(EXT)
    arc_id = arm_id("Microsoft.Kubernetes", "connectedClusters", "rg-op", "gpu")
    assert ext.unmasked_inputs["identity"] == {"type": "SystemAssigned"}
    assert ext.unmasked_inputs["configurationSettings"] == {
        "enableTraining": "True",
        "enableInference": "True",
        "inferenceRouterServiceType": "NodePort",
        "sslCname": "ml.example.com",
        "installNvidiaDevicePlugin": "True",
        "installDcgmExporter": "True",
        "scoringFe.serviceType.nodePort": "True",  # derived from the NodePort router (a Python bool)
        **derived(arc_id, "gpu", "eastus", "arc"),  # ARM's location, lowercased
        "relayserver.hybridConnectionResourceID": hc_id("rg-op", RELAY_4, "gpu"),
        "relayserver.hybridConnectionName": "gpu",
    }
    assert ext.unmasked_inputs["configurationProtectedSettings"] == {
        "scoringFe.sslCert": CERT_B64,
        "scoringFe.sslKey": KEY_B64,
        "relayServerConnectionString": connection_string(RELAY_4, "gpu"),
        "relayserver.relayConnectionString": connection_string(RELAY_4, "gpu"),
    }
    assert set(ext.inputs["configurationProtectedSettings"].values()) == {"[secret]"}


# --- derivations the scenarios do not reach ----------------------------------------------------------------


def settings_of(target: dict[str, Any]) -> dict[str, str]:
    cfg = parse({f"{NS}:environment": "dev", KEY: [target]}, [KEY])
    return configuration_settings(azure_args(cfg.azure_ml[0]))


def test_small_arc_cluster_gets_dev_test_defaults_even_for_training_only():
    # The CLI derives these from the node count before it looks at the workload.
    s = settings_of({**SCENARIO_2, "cluster": cluster("arc", "edge", "rg-edge", 1)})
    assert (s["clusterPurpose"], s["inferenceRouterHA"]) == ("DevTest", "false")


def test_small_cluster_keeps_an_explicit_router_ha_false():
    s = settings_of(SCENARIO_1)
    assert (s["clusterPurpose"], s["inferenceRouterHA"]) == ("DevTest", "False")


def test_three_nodes_is_not_small():
    s = settings_of({**SCENARIO_2, "cluster": cluster("arc", "edge", "rg-edge", 3)})
    assert "clusterPurpose" not in s and "inferenceRouterHA" not in s


def test_domain_when_set_is_sent_as_given():
    # `az k8s-extension create --config domain=...`: the CLI's own code then drops it (it reads a misspelled
    # key); the user's value is what must reach the chart.
    s = settings_of({**SCENARIO_1, "domain": "ml.contoso.internal"})
    assert s["domain"] == "ml.contoso.internal"
    assert s["location"] == "koreacentral"


def test_domain_defaults_to_the_location_cloudapp_domain():
    assert settings_of(SCENARIO_1)["domain"] == "koreacentral.cloudapp.azure.com"
    arc = settings_of({**SCENARIO_2, "cluster": cluster("arc", "edge", "rg-edge", 3, location="eastus")})
    assert arc["domain"] == "eastus.cloudapp.azure.com"


@pytest.mark.parametrize("bad", ["https://ml.example.com", "*.example.com", "has space.example.com", "a..b"])
def test_domain_must_be_a_dns_name(bad: str):
    with pytest.raises(ConfigError) as e:
        parse({f"{NS}:environment": "dev", KEY: [{**SCENARIO_1, "domain": bad}]})
    assert e.value.problems == [
        f"{NS}:azureMl[0].domain: must be a DNS name such as contoso.internal (no scheme, no wildcard)"
    ]


def test_router_ha_true_on_large_cluster_is_sent():
    target = {**SCENARIO_3, "inference": {**SCENARIO_3["inference"], "routerHA": True}}
    assert settings_of(target)["inferenceRouterHA"] == "True"


def test_internal_load_balancer_and_ssl_secret():
    target = {
        **SCENARIO_3,
        "inference": {
            "enabled": True,
            "routerServiceType": "loadbalancer",
            "internalLoadBalancerProvider": "azure",
            "sslCname": "ml.internal.example.com",
            "sslSecret": "azureml-tls",
        },
    }
    s = settings_of(target)
    subset = {k: s[k] for k in s if k.startswith(("scoringFe", "ssl", "internal", "inferenceRouter"))}
    assert subset == {
        "inferenceRouterServiceType": "LoadBalancer",
        "internalLoadBalancerProvider": "azure",
        "sslCname": "ml.internal.example.com",
        "sslSecret": "azureml-tls",
        "scoringFe.serviceType.internalLoadBalancer": "True",
        "scoringFe.sslSecret": "azureml-tls",
    }


def test_insecure_connections_skip_the_tls_setup():
    # allowInsecureConnections=True: the CLI sets no scoringFe.sslSecret (it still forwards sslSecret itself).
    target = {
        **SCENARIO_1,
        "inference": {
            "enabled": True,
            "routerServiceType": "ClusterIP",
            "allowInsecureConnections": True,
            "sslSecret": "azureml-tls",
            "sslCname": "ml.example.com",
        },
    }
    s = settings_of(target)
    assert s["sslSecret"] == "azureml-tls" and "scoringFe.sslSecret" not in s
    assert s["allowInsecureConnections"] == "True"


def test_node_selector_install_flags_openshift_and_release_settings():
    target = {
        **SCENARIO_2,
        "cluster": {**SCENARIO_2["cluster"], "openshift": True},
        "nodeSelector": {"pool": "gpu", "kubernetes.io/os": "linux"},
        "installPromOp": False,
        "installVolcano": False,
        "version": "1.1.62",
        "autoUpgradeMinorVersion": False,
        "releaseTrain": "preview",
    }
    s = settings_of(target)
    assert {k: s[k] for k in s if k.startswith(("nodeSelector", "install", "openshift"))} == {
        "nodeSelector.pool": "gpu",
        # Settings become Helm values split at '.': the dots inside the label key are escaped.
        "nodeSelector.kubernetes\\.io/os": "linux",
        "installPromOp": "False",
        "installVolcano": "False",
        "openshift": "true",
    }
    ext = plan([target]).one(EXT).unmasked_inputs
    assert (ext["version"], ext["autoUpgradeMinorVersion"], ext["releaseTrain"]) == (
        "1.1.62",
        False,
        "preview",
    )


@pytest.mark.parametrize(
    ("cluster_name", "rg", "expected"),
    [
        # 50 alphanumerics: kept whole
        ("abcdefghij", "rg-x", "abcdefghij3f2b7c1e8d4a4b6e9c0f1a2b3c4d5e6frgxrelay"),
        # 51: cut to 44 + 6 hex of md5("abcdefghijk-<sub>-rg-x-relay")
        ("abcdefghijk", "rg-x", "abcdefghijk3f2b7c1e8d4a4b6e9c0f1a2b3c4d5e6fr6c7639"),
    ],
)
def test_relay_namespace_name_like_the_cli(cluster_name: str, rg: str, expected: str):
    assert relay_namespace_name(cluster_name, SUB, rg) == expected
    assert 6 <= len(expected) <= 50


# --- stacks -------------------------------------------------------------------------------------------------


def stack_extension(stack: str) -> tuple[plan_runtime.PlanResult, Any]:
    config, secret_keys = read_stack_file(ROOT / "stacks" / f"Pulumi.{stack}.yaml")
    # Only this kind's key: the other kinds' targets are their tests' business (and slow to run here).
    mine = {k: v for k, v in config.items() if k in (f"{NS}:environment", KEY)}
    result = run_config(mine, [k for k in secret_keys if k in mine], stack=stack)
    return result, result.one(EXT)


def test_dev_stack_is_the_aks_proof_of_concept():
    _, ext = stack_extension("dev")
    s = ext.unmasked_inputs["configurationSettings"]
    assert (
        ext.unmasked_inputs["clusterResourceName"],
        s["allowInsecureConnections"],
        s["enableInference"],
    ) == (
        "managedClusters",
        "True",
        "True",
    )
    assert ext.unmasked_inputs["configurationProtectedSettings"] == {}


def test_staging_stack_is_an_arc_cluster_with_relay():
    result, ext = stack_extension("staging")
    assert ext.unmasked_inputs["clusterResourceName"] == "connectedClusters"
    assert ext.unmasked_inputs["identity"] == {"type": "SystemAssigned"}
    assert result.one(RELAY_NS).unmasked_inputs["namespaceName"] == RELAY_2


def test_prod_stack_is_aks_https_with_secret_pems():
    _, ext = stack_extension("prod")
    s = ext.unmasked_inputs["configurationSettings"]
    assert "allowInsecureConnections" not in s and s["sslCname"] == "ml.mldiag.example.com"
    assert ext.inputs["configurationProtectedSettings"] == {
        "scoringFe.sslCert": "[secret]",
        "scoringFe.sslKey": "[secret]",
    }
    doc = (ROOT / "stacks" / "Pulumi.prod.yaml").read_text()
    assert "BEGIN" not in doc


# --- secrets never in plaintext in the plan output ----------------------------------------------------------


def forbidden_strings(result: plan_runtime.PlanResult) -> list[str]:
    """Every secret value the program sent, and the parts of it someone might print."""
    out = [CERT_BODY, KEY_BODY, CERT_B64, KEY_B64, azure_mocks._FAKE_RELAY_KEY, "SharedAccessKey="]
    for r in result.resources:
        prot = r.unmasked_inputs.get("configurationProtectedSettings") or {}
        out += list(prot.values())
    return out


def test_no_pem_key_or_connection_string_in_plan_output():
    result = plan([SCENARIO_3, SCENARIO_4])
    report = build_report(result, [])
    texts = [json.dumps([r.inputs for r in result.resources]), json.dumps(result.outputs)]
    texts += [plan_render.render(report, fmt) for fmt in ("json", "table", "markdown")]
    secrets = forbidden_strings(result)
    assert len(secrets) > 6
    for text in texts:
        for secret in secrets:
            assert secret not in text


@pytest.mark.parametrize("stack", ["staging", "prod"])
def test_stack_plans_render_no_secret(stack: str):
    config, secret_keys = read_stack_file(ROOT / "stacks" / f"Pulumi.{stack}.yaml")
    report = plan_stack(stack, skip_policies=True, progress=lambda *_: None)
    result = run_config(config, secret_keys, stack=stack)
    # The stack's secure values arrive as placeholders: neither they nor their base64 may show.
    placeholders = [v for v in _leaves(config) if is_placeholder(v)]
    secrets = forbidden_strings(result) + placeholders
    secrets += [base64.b64encode((v + "\n").encode()).decode() for v in placeholders]
    assert secrets
    for fmt in ("json", "table", "markdown"):
        text = plan_render.render(report, fmt)
        for secret in secrets:
            assert secret not in text


def _leaves(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [leaf for v in value.values() for leaf in _leaves(v)]
    if isinstance(value, list):
        return [leaf for v in value for leaf in _leaves(v)]
    return [value]


@pytest.mark.parametrize("fmt", ["json", "table", "markdown"])
def test_plan_command_prints_no_relay_secret(fmt: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    # `python -m mldiag.plan.cli staging --format F --out DIR`, in process (same entry point, policies included).
    # staging holds the Arc target: the relay connection string is the secret the program itself fetches.
    out = tmp_path / "out"
    assert plan_main(["staging", "--format", fmt, "-q", "--out", str(out)]) == 0
    captured = capsys.readouterr()
    assert "azureml-arc-train-extension" in captured.out
    files = [p.read_text() for p in out.rglob("*") if p.is_file()]
    assert any("relayserver.hybridConnectionName" in f for f in files)
    for text in [captured.out, captured.err, *files]:
        for secret in (azure_mocks._FAKE_RELAY_KEY, "SharedAccessKey="):
            assert secret not in text


# --- nginx controller class, the verify role (issue 28) ----------------------------------------------------


def test_nginx_ingress_controller_is_sent_as_the_charts_setting():
    t = {**SCENARIO_1, "nginxIngressController": "k8s.io/amlarc-ingress-nginx"}
    (ext,) = [r for r in plan([t]).resources if r.type == EXT]
    assert ext.inputs["configurationSettings"]["nginxIngress.controller"] == "k8s.io/amlarc-ingress-nginx"
    (plain,) = [r for r in plan([SCENARIO_1]).resources if r.type == EXT]
    assert "nginxIngress.controller" not in plain.inputs["configurationSettings"]


SUBJECTS = [{"kind": "Group", "name": "ml-oncall"}]


@pytest.mark.parametrize(
    "access, via",
    [
        ({"aksUserCredentials": True}, "azure-native:containerservice:listManagedClusterUserCredentials"),
        ({"kubeconfig": "apiVersion: v1\nkind: Config\n", "context": "admin"}, None),
    ],
)
def test_the_verify_role_holds_what_verify_reads_and_waits_for_the_extension(access, via):
    from ml_diagnostics.verify_rbac import azure_verify_rules

    t = {**SCENARIO_1, "verifyAccess": access, "verifyRbac": {"enabled": True, "subjects": SUBJECTS}}
    result = plan([t])
    by_name = {r.name: r for r in result.resources}
    provider = by_name["azureml-poc-k8s"]
    assert provider.type == "pulumi:providers:kubernetes"
    assert provider.inputs.get("context") == access.get("context")
    role = by_name["azureml-poc-verify-rbac-cluster-role"]
    cluster_rules, namespaced = azure_verify_rules(ingress_classes=True)
    assert role.inputs["rules"] == cluster_rules
    ns_role = by_name["azureml-poc-verify-rbac-role-azureml"]
    assert ns_role.inputs["metadata"]["namespace"] == "azureml"
    assert ns_role.inputs["rules"] == namespaced["azureml"]
    assert by_name["azureml-poc-extension"].urn in ns_role.dependencies  # the extension creates azureml
    assert ns_role.provider.startswith(provider.urn)
    # the kubeconfig stays a secret in the plan; which one it is shows in its digest
    assert provider.inputs["kubeconfig"] == "[secret]"

    expected = (
        base64.b64decode(
            azure_mocks.INVOKES[via]({"resourceName": "aks-poc"})["kubeconfigs"][0]["value"]
        ).decode()
        if via
        else access["kubeconfig"].strip()  # config values arrive stripped
    )
    assert provider.secret_digests["kubeconfig"] == plan_runtime._digest(expected)


def test_without_verify_rbac_no_kubernetes_provider_is_registered():
    resources = plan([{**SCENARIO_1, "verifyAccess": {"aksUserCredentials": True}}]).resources
    assert not [r for r in resources if r.type.startswith(("pulumi:providers:kubernetes", "kubernetes:"))]


def test_the_plan_shows_what_version_each_extension_and_release_runs():
    text = plan_render.render_table(plan_stack("prod", skip_policies=True))
    assert (
        "azure-native:kubernetesconfiguration:Extension  azureml-aks-prod-extension  version 1.1.39\n" in text
    )
    assert (
        "kubernetes:helm.sh/v3:Release  k8s-onprem-prod-mldiag-cert-manager-release  cert-manager v1.13.0"
        in text
    )
    dev = plan_render.render_table(plan_stack("dev", skip_policies=True))
    assert "Extension  azureml-aks-poc-extension  version: unpinned, follows release train stable" in dev


# --- every form of a location ARM takes (issue 36) ----------------------------------------------------------
# ARM reads location names without regard to case or spaces (`KoreaCentral`, `Korea Central` and `koreacentral`
# are one region) and returns a cluster's location without spaces, in either case; `Create` sends it lowercased
# (`cluster_location = resource.location.lower()`) as location, jobSchedulerLocation, in domain, and as the
# location of the Arc relay namespace it creates. Whichever form the stack file gives, that is what is sent.

LOCATION_FORMS = [
    ("koreacentral", "koreacentral"),
    ("KoreaCentral", "koreacentral"),
    ("Korea Central", "koreacentral"),
    ("KOREA CENTRAL", "koreacentral"),
    ("eastus", "eastus"),
    ("EastUS", "eastus"),
    ("East US", "eastus"),
    ("East US 2", "eastus2"),
]


def _with_location(target: dict[str, Any], location: str) -> dict[str, Any]:
    return {**target, "cluster": {**target["cluster"], "location": location}}


def _inputs(result: plan_runtime.PlanResult) -> dict[str, Any]:
    return {r.urn: (r.unmasked_inputs, r.dependencies, r.provider, r.parent) for r in result.resources}


@pytest.mark.parametrize(("location", "sent"), LOCATION_FORMS)
@pytest.mark.parametrize("scenario", ["aks", "arc"])
def test_every_location_form_sends_the_clis_settings(scenario: str, location: str, sent: str):
    base = SCENARIO_1 if scenario == "aks" else SCENARIO_2
    result = plan([_with_location(base, location)])
    settings = result.one(EXT).unmasked_inputs["configurationSettings"]
    assert (settings["location"], settings["jobSchedulerLocation"], settings["domain"]) == (
        sent,
        sent,
        f"{sent}.cloudapp.azure.com",
    )
    # Nothing else depends on the form: every resource is the one the lowercase name plans.
    assert _inputs(result) == _inputs(plan([_with_location(base, sent)]))
    if scenario == "arc":
        assert result.one(RELAY_NS).unmasked_inputs["location"] == sent
    else:
        assert not result.by_type(RELAY_NS)


def test_a_location_form_changes_no_settings_of_the_seed_scenarios():
    # The hand-written CLI settings of scenarios 2 and 4, planned from the display names of their regions.
    arc_id = arm_id("Microsoft.Kubernetes", "connectedClusters", "rg-op", "gpu")
    result = plan([_with_location(SCENARIO_4, "East US")])
    assert_relay(result, "onprem", RELAY_4, "rg-op", "gpu", "eastus")
    settings = result.one(EXT).unmasked_inputs["configurationSettings"]
    assert {k: settings[k] for k in derived(arc_id, "gpu", "eastus", "arc")} == derived(
        arc_id, "gpu", "eastus", "arc"
    )
    result = plan([_with_location(SCENARIO_2, "Korea Central")])
    assert_relay(result, "arc-train", RELAY_2, "rg-mldiag-staging", "arc-lab-gpu", "koreacentral")


def test_an_explicit_domain_is_sent_as_given_whatever_the_location_form():
    s = settings_of({**_with_location(SCENARIO_1, "Korea Central"), "domain": "ml.contoso.internal"})
    assert (s["location"], s["jobSchedulerLocation"], s["domain"]) == (
        "koreacentral",
        "koreacentral",
        "ml.contoso.internal",
    )


LIBRARY_PROGRAM = f"""
import pulumi
from ml_diagnostics import AzureMlExtension

for kind, name, location in (("aks", "aks-lib", "East US"), ("arc", "arc-lib", "KoreaCentral")):
    AzureMlExtension(
        f"lib-{{kind}}",
        {{
            "cluster": {{
                "kind": kind,
                "subscription_id": "{SUB}",
                "resource_group": "rg-lib",
                "name": name,
                "location": location,
                "node_count": 3,
            }},
            "extension_name": "azureml",
            "training": True,
        }},
    )
"""


def test_a_library_caller_passing_a_display_name_gets_the_clis_settings(tmp_path: Path):
    # No program, no stack file: the component itself sends what the CLI sends.
    program = tmp_path / "__main__.py"
    program.write_text(LIBRARY_PROGRAM)
    result = run_config({}, program=program)
    by_name = {r.name: r for r in result.resources}
    aks = by_name["lib-aks-extension"].unmasked_inputs["configurationSettings"]
    arc = by_name["lib-arc-extension"].unmasked_inputs["configurationSettings"]
    assert (aks["location"], aks["jobSchedulerLocation"], aks["domain"]) == (
        "eastus",
        "eastus",
        "eastus.cloudapp.azure.com",
    )
    assert (arc["location"], arc["jobSchedulerLocation"], arc["domain"]) == (
        "koreacentral",
        "koreacentral",
        "koreacentral.cloudapp.azure.com",
    )
    assert by_name["lib-arc-relay"].unmasked_inputs["location"] == "koreacentral"
    assert "lib-aks-relay" not in by_name


def test_configuration_settings_normalise_the_location_for_a_direct_caller():
    s = configuration_settings(
        {
            "cluster": {
                "kind": "aks",
                "subscription_id": SUB,
                "resource_group": "rg",
                "name": "aks",
                "location": "Korea Central",
                "node_count": 3,
            },
            "extension_name": "azureml",
            "training": True,
        }
    )
    assert (s["location"], s["jobSchedulerLocation"], s["domain"]) == (
        "koreacentral",
        "koreacentral",
        "koreacentral.cloudapp.azure.com",
    )
