"""Azure ML extension and AKS rules, through the Analyzer protocol."""

from __future__ import annotations

import base64

from tests.fixtures.policies import (
    UNKNOWN_STRING,
    body,
    levels_ok,
    res,
    secret,
    the,
)

EXT = "azure-native:kubernetesconfiguration:Extension"
AKS = "azure-native:containerservice:ManagedCluster"
SUB = "3f2b7c1e-8d4a-4b6e-9c0f-1a2b3c4d5e6f"
OTHER_SUB = "00000000-1111-2222-3333-444444444444"
PEM = "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIU\n-----END CERTIFICATE-----\n"
KEY = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----\n"
CONN = "Endpoint=sb://relay.servicebus.windows.net/;SharedAccessKeyName=azureml_rw;SharedAccessKey=abc123="


def arm_id(sub: str = SUB, kind: str = "aks") -> str:
    rp, typ = (
        ("Microsoft.ContainerService", "managedClusters")
        if kind == "aks"
        else ("Microsoft.Kubernetes", "connectedClusters")
    )
    return f"/subscriptions/{sub}/resourceGroups/rg/providers/{rp}/{typ}/cl"


def extension(
    settings: dict, protected: dict | None = None, kind: str = "aks", sub: str = SUB, **extra
) -> dict:
    rp, typ = (
        ("Microsoft.ContainerService", "managedClusters")
        if kind == "aks"
        else ("Microsoft.Kubernetes", "connectedClusters")
    )
    base = {"cluster_name": arm_id(sub, kind), "clusterId": arm_id(sub, kind)}
    if kind == "arc":
        base |= {
            "relayserver.enabled": "true",
            "relayserver.hybridConnectionResourceID": "/subscriptions/x/hybridConnections/cl",
            "relayserver.hybridConnectionName": "cl",
        }
    props = {
        "extensionName": "azureml",
        "extensionType": "Microsoft.AzureML.Kubernetes",
        "clusterRp": rp,
        "clusterResourceName": typ,
        "clusterName": "cl",
        "resourceGroupName": "rg",
        "scope": {"cluster": {"releaseNamespace": "azureml"}},
        "configurationSettings": {**base, **settings},
        "configurationProtectedSettings": protected or {},
        **extra,
    }
    if kind == "arc" and protected is None:
        props["configurationProtectedSettings"] = {"relayserver.relayConnectionString": secret(CONN)}
    return props


TRAINING = {"enableTraining": "True", "enableInference": "False"}
HTTPS = {
    "enableTraining": "True",
    "enableInference": "True",
    "inferenceRouterServiceType": "LoadBalancer",
    "sslCname": "ml.example.com",
}
PEMS = {
    "scoringFe.sslCert": secret(base64.b64encode(PEM.encode()).decode()),
    "scoringFe.sslKey": secret(base64.b64encode(KEY.encode()).decode()),
}
INSECURE = {**HTTPS, "allowInsecureConnections": "True"}


def test_workloads_enabled(pack):
    ok = [
        res(EXT, "t", extension(TRAINING)),
        res(EXT, "i", extension(HTTPS, PEMS)),
        res(EXT, "n", extension({**HTTPS, "inferenceRouterServiceType": "nodePort"}, PEMS)),
    ]
    assert pack.findings("azureml-workloads-enabled", ok) == []
    none = res(EXT, "x", extension({"enableTraining": "False", "enableInference": "false"}))
    levels_ok(pack, "azureml-workloads-enabled", [none])
    assert the(pack, "azureml-workloads-enabled", [none]) == (
        "Azure ML extension 'azureml' enables neither training nor inference; the extension then installs nothing "
        "useful and `az k8s-extension create` refuses it. Remediation: set enableTraining=True and/or "
        "enableInference=True (the target's training / inference.enabled)."
    )
    bad_router = res(EXT, "x", extension({**HTTPS, "inferenceRouterServiceType": "ingress"}, PEMS))
    assert the(pack, "azureml-workloads-enabled", [bad_router]) == (
        "Azure ML extension 'azureml' enables inference with inferenceRouterServiceType 'ingress'; it is required "
        "when enableInference=True and must be one of loadBalancer, nodePort, clusterIP. Remediation: set "
        "inference.routerServiceType."
    )
    no_router = {k: v for k, v in HTTPS.items() if k != "inferenceRouterServiceType"}
    assert "with inferenceRouterServiceType None" in the(
        pack, "azureml-workloads-enabled", [res(EXT, "x", extension(no_router, PEMS))]
    )


def test_inference_https_complete(pack):
    ok = [
        res(EXT, "pem", extension(HTTPS, PEMS)),
        res(EXT, "secret", extension({**HTTPS, "sslSecret": "azureml-tls"})),
        res(EXT, "train", extension(TRAINING)),
    ]
    assert pack.findings("azureml-inference-https", ok) == []
    no_cert = res(EXT, "x", extension(HTTPS))
    levels_ok(pack, "azureml-inference-https", [no_cert])
    assert the(pack, "azureml-inference-https", [no_cert]).startswith(
        "Azure ML extension 'azureml' serves inference over HTTPS (allowInsecureConnections is not True) but lacks "
        "sslSecret, or the certificate and key in protected settings; the extension expects them"
    )
    no_cname = {k: v for k, v in HTTPS.items() if k != "sslCname"}
    assert "but lacks sslCname;" in the(
        pack, "azureml-inference-https", [res(EXT, "x", extension(no_cname, PEMS))]
    )
    half = res(EXT, "x", extension(HTTPS, {"scoringFe.sslCert": PEMS["scoringFe.sslCert"]}))
    assert len(pack.findings("azureml-inference-https", [half])) == 1


def test_insecure_connections_refused_in_prod_only(pack):
    r = res(EXT, "x", extension(INSECURE))
    assert pack.findings("azureml-inference-https", [r], "dev") == []
    assert pack.findings("azureml-inference-https", [r], "staging") == []
    assert the(pack, "azureml-inference-https", [r], "prod") == (
        "Azure ML extension 'azureml' sets allowInsecureConnections=True: inference endpoints would serve plain "
        "HTTP, which the Azure ML extension docs allow for development and testing only and this environment refuses. Remediation: "
        "remove inference.allowInsecureConnections and set inference.sslCname with inference.sslSecret or "
        "inference.sslCertPem/sslKeyPem."
    )


def test_secrets_only_in_protected_settings_and_never_echoed(pack):
    ok = [res(EXT, "pem", extension(HTTPS, PEMS)), res(EXT, "arc", extension(TRAINING, kind="arc"))]
    assert pack.findings("azureml-secrets-protected", ok) == []
    by_key = res(EXT, "x", extension({**HTTPS, "scoringFe.sslKey": "c2VjcmV0"}))
    levels_ok(pack, "azureml-secrets-protected", [by_key])
    assert the(pack, "azureml-secrets-protected", [by_key]) == (
        "Azure ML extension 'azureml' puts setting 'scoringFe.sslKey' in plain configurationSettings, but its key "
        "names a certificate, key or connection string; plain settings are stored and shown in clear text by ARM "
        "and in the stack state. Remediation: move it to configurationProtectedSettings and feed it from a secret "
        "config value (`pulumi config set --secret`; in this project's stack files also `mldiag secrets set`)."
    )
    by_value = res(
        EXT,
        "y",
        extension(
            {**TRAINING, "customCert": PEM, "relay": CONN, "b64": base64.b64encode(KEY.encode()).decode()}
        ),
    )
    found = pack.findings("azureml-secrets-protected", [by_value])
    assert [body(v).split("'")[3] for v in found] == ["b64", "customCert", "relay"]
    assert all("its value looks like a PEM, base64 PEM or connection string" in v.message for v in found)
    for v in found:
        assert "BEGIN" not in v.message and "SharedAccessKey=" not in v.message and "LS0t" not in v.message


def test_cluster_scope_and_release_namespace(pack):
    assert pack.findings("azureml-cluster-scope", [res(EXT, "ok", extension(TRAINING))]) == []
    ns_scope = res(EXT, "x", extension(TRAINING, scope={"namespace": {"targetNamespace": "ml"}}))
    levels_ok(pack, "azureml-cluster-scope", [ns_scope])
    assert the(pack, "azureml-cluster-scope", [ns_scope]).startswith(
        "Azure ML extension 'azureml' is not installed at cluster scope; the extension can be installed only at "
        "'cluster' scope"
    )
    other_ns = res(EXT, "x", extension(TRAINING, scope={"cluster": {"releaseNamespace": "ml"}}))
    assert the(pack, "azureml-cluster-scope", [other_ns]).startswith(
        "Azure ML extension 'azureml' installs into release namespace 'ml'"
    )


def test_arc_relay_settings(pack):
    ok = [res(EXT, "arc", extension(TRAINING, kind="arc")), res(EXT, "aks", extension(TRAINING))]
    assert pack.findings("azureml-arc-relay", ok) == []
    bare = extension(TRAINING, {}, kind="arc")
    for k in ("relayserver.enabled", "relayserver.hybridConnectionName"):
        bare["configurationSettings"].pop(k)
    r = res(EXT, "x", bare)
    levels_ok(pack, "azureml-arc-relay", [r])
    assert the(pack, "azureml-arc-relay", [r]).startswith(
        "Azure ML extension 'azureml' targets an Arc cluster but lacks the relay settings relayserver.enabled=true, "
        "relayserver.hybridConnectionName, relayserver.relayConnectionString (protected); on Arc the relayserver "
        "reaches the Azure ML service through Azure Relay"
    )


def test_relay_id_unknown_during_preview_is_reported_as_unchecked(pack):
    props = extension(TRAINING, kind="arc")
    props["configurationSettings"]["relayserver.enabled"] = UNKNOWN_STRING
    (v,) = pack.findings("azureml-arc-relay", [res(EXT, "x", props)])
    assert v.enforcement_level == "advisory"
    assert "not checked because the value(s) at relayserver.enabled are unknown until apply" in v.message


def test_allowed_subscriptions(pack):
    assert pack.findings("azureml-allowed-subscriptions", [res(EXT, "ok", extension(TRAINING))]) == []
    other = res(EXT, "x", extension(TRAINING, sub=OTHER_SUB))
    levels_ok(pack, "azureml-allowed-subscriptions", [other])
    found = pack.findings("azureml-allowed-subscriptions", [other])
    assert found[0].urn == other.urn
    assert body(found[0]) == (
        f"Azure ML extension 'azureml' attaches a cluster in subscription {OTHER_SUB} (configurationSettings."
        f"clusterId), which is not an allowed subscription ({SUB}); Azure ML does not attach AKS clusters across "
        "subscriptions (Azure ML extension docs). Remediation: use a cluster in the workspace's subscription, or connect the "
        "cluster to Azure Arc and register it in the workspace's subscription."
    )
    # without the ARM id in the settings the provider's subscription decides
    provider = res("pulumi:providers:azure-native", "az", {"subscriptionId": OTHER_SUB})
    bare = extension(TRAINING)
    for k in ("clusterId", "cluster_name"):
        bare["configurationSettings"].pop(k)
    via_provider = res(EXT, "y", bare, provider=provider.urn)
    assert "(the azure-native provider's subscriptionId)" in the(
        pack, "azureml-allowed-subscriptions", [provider, via_provider]
    )
    unknown = res(EXT, "z", bare)
    assert "the cluster's subscription cannot be determined" in the(
        pack, "azureml-allowed-subscriptions", [unknown]
    )
    unconfigured = {"all": "mandatory"}
    assert "this environment lists no allowed subscriptions" in the(
        pack, "azureml-allowed-subscriptions", [res(EXT, "ok", extension(TRAINING))], unconfigured
    )


def aks(**props) -> dict:
    return {
        "resourceName": "aks-prod",
        "resourceGroupName": "rg",
        "identity": {"type": "SystemAssigned"},
        **props,
    }


def test_aks_managed_identity_and_local_accounts(pack):
    ok = [
        res(AKS, "sys", aks()),
        res(AKS, "user", aks(identity={"type": "UserAssigned"}, servicePrincipalProfile={"clientId": "msi"})),
    ]
    assert pack.findings("aks-managed-identity-local-accounts", ok) == []
    sp = res(
        AKS, "sp", aks(identity=None, servicePrincipalProfile={"clientId": "1234", "secret": secret("pw")})
    )
    levels_ok(pack, "aks-managed-identity-local-accounts", [sp])
    text = the(pack, "aks-managed-identity-local-accounts", [sp])
    assert text.startswith(
        "AKS cluster 'aks-prod': identity.type is None, not SystemAssigned or UserAssigned; it uses a service "
        "principal (servicePrincipalProfile.clientId). Azure ML does not support AKS with a service principal"
    )
    assert "pw" not in text
    local = res(AKS, "local", aks(disableLocalAccounts=True))
    assert the(pack, "aks-managed-identity-local-accounts", [local]) == (
        "AKS cluster 'aks-prod' sets disableLocalAccounts=true, which Azure ML does not support (Azure ML extension docs, "
        "limitations). Remediation: remove disableLocalAccounts (local accounts are enabled by default)."
    )


def test_subscription_unknown_during_preview_is_not_a_violation(pack):
    props = extension(TRAINING)
    props["configurationSettings"]["clusterId"] = UNKNOWN_STRING
    other = res(EXT, "other", extension(TRAINING, sub=OTHER_SUB))
    found = pack.findings("azureml-allowed-subscriptions", [res(EXT, "x", props), other])
    assert sorted(v.enforcement_level for v in found) == ["advisory", "mandatory"]
    advisory = next(v for v in found if v.enforcement_level == "advisory")
    assert "configurationSettings.clusterId are unknown until apply" in advisory.message


def test_authorised_ranges_of_both_ip_versions_are_compared_version_by_version(pack):
    cfg = {"aks-authorized-ip-ranges": {"azureMlRanges": ["10.1.0.0/24", "2001:db8:1::/48"]}}

    def cluster(*ranges: str):
        return res(
            AKS,
            "aks",
            {
                "resourceName": "cl",
                "resourceGroupName": "rg",
                "agentPoolProfiles": [{"name": "p0", "vmSize": "Standard_D4s_v3", "count": 3}],
                "apiServerAccessProfile": {"authorizedIPRanges": list(ranges)},
            },
        )

    # an IPv6 range listed before the IPv4 one that admits the control plane (and one that is no range) do not
    # hide it: each required range is looked for among the ranges of its own version
    admitted = cluster("2001:db8::/32", "not-a-range", "10.0.0.0/8")
    assert pack.findings("aks-authorized-ip-ranges", [admitted], cfg) == []
    assert the(pack, "aks-authorized-ip-ranges", [cluster("10.0.0.0/8")], cfg) == (
        "AKS cluster 'cl' authorised IP ranges do not admit the Azure ML control plane range(s) 2001:db8:1::/48. "
        "Remediation: add them to apiServerAccessProfile.authorizedIPRanges (both paired regions)."
    )
