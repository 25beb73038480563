"""azureMl target config: every rule of the seed and of `az k8s-extension create`, with its key path."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from program.config import PLACEHOLDER_SECRET, ConfigError, parse

NS = "ml-diagnostics"
KEY = f"{NS}:azureMl"
P = f"{NS}:azureMl[1]"  # the broken target sits after a valid one, so paths carry the index

CERT = "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUQ2VydA==\n-----END CERTIFICATE-----\n"
KEY_PEM = "-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg\n-----END PRIVATE KEY-----\n"
ENCRYPTED_PKCS8 = "-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIIFHDBOBgkqhkiG9w0BBQ0wQTApBgkq\n-----END ENCRYPTED PRIVATE KEY-----\n"
ENCRYPTED_LEGACY = (
    "-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,0123456789ABCDEF\n\n"
    "MIIEpAIBAAKCAQEA\n-----END RSA PRIVATE KEY-----\n"
)

ALLOWED_TYPES = "'LoadBalancer', 'NodePort' or 'ClusterIP'"


def aks(**over: Any) -> dict[str, Any]:
    t: dict[str, Any] = {
        "name": "poc",
        "cluster": {
            "kind": "aks",
            "subscriptionId": "3f2b7c1e-8d4a-4b6e-9c0f-1a2b3c4d5e6f",
            "resourceGroup": "rg-ml",
            "name": "aks-ml",
            "location": "koreacentral",
            "nodeCount": 4,
        },
        "training": True,
    }
    t.update(over)
    return t


def https(**over: Any) -> dict[str, Any]:
    inf = {
        "enabled": True,
        "routerServiceType": "LoadBalancer",
        "sslCname": "ml.example.com",
        "sslCertPem": CERT,
        "sslKeyPem": KEY_PEM,
    }
    inf.update(over)
    return {k: v for k, v in inf.items() if v is not None}


def raw(target: dict[str, Any]) -> dict[str, Any]:
    first = aks(name="ok")
    first["cluster"] = {**first["cluster"], "name": "aks-ok"}  # one Azure ML extension per cluster
    return {f"{NS}:environment": "dev", KEY: [first, target]}


def problems(target: dict[str, Any]) -> list[str]:
    with pytest.raises(ConfigError) as e:
        parse(raw(target), [KEY])
    return e.value.problems


def with_cluster(**over: Any) -> dict[str, Any]:
    t = aks()
    t["cluster"] = {**t["cluster"], **over}
    return t


# --- valid shapes ------------------------------------------------------------------------------------------


def test_valid_https_target_parses_and_normalizes():
    t = aks(inference=https(routerServiceType="nodeport"))
    t["cluster"]["location"] = "koreacentral"
    t["cluster"]["subscriptionId"] = "3F2B7C1E-8D4A-4B6E-9C0F-1A2B3C4D5E6F"
    cfg = parse(raw(t), [KEY])
    got = cfg.azure_ml[1]
    assert got.inference.router_service_type == "NodePort"
    assert got.cluster.location == "koreacentral"
    assert got.cluster.subscription_id == "3f2b7c1e-8d4a-4b6e-9c0f-1a2b3c4d5e6f"
    assert got.cluster.resource_id == (
        "/subscriptions/3f2b7c1e-8d4a-4b6e-9c0f-1a2b3c4d5e6f/resourceGroups/rg-ml"
        "/providers/Microsoft.ContainerService/managedClusters/aks-ml"
    )
    assert got.extension == "poc"


@pytest.mark.parametrize("spelling", ["loadbalancer", "LOADBALANCER", "LoadBalancer", "loadBalancer"])
def test_router_service_type_any_case_one_spelling_out(spelling: str):
    cfg = parse(raw(aks(inference=https(routerServiceType=spelling))), [KEY])
    assert cfg.azure_ml[1].inference.router_service_type == "LoadBalancer"


@pytest.mark.parametrize("spelling", ["clusterip", "ClusterIP", "CLUSTERIP"])
def test_cluster_ip_canonical(spelling: str):
    cfg = parse(raw(aks(inference=https(routerServiceType=spelling))), [KEY])
    assert cfg.azure_ml[1].inference.router_service_type == "ClusterIP"


def test_placeholder_secrets_are_opaque():
    # The offline plan substitutes `<placeholder>:<digest>` for every secure value: no PEM check applies.
    ph = f"{PLACEHOLDER_SECRET}:0123456789ab"
    cfg = parse(raw(aks(inference=https(sslCertPem=ph, sslKeyPem=ph))), [KEY])
    assert cfg.azure_ml[1].inference.ssl_cert_pem.get_secret_value() == ph


def test_routerha_false_on_small_cluster_is_fine_and_http_needs_no_cname():
    t = with_cluster(nodeCount=1)
    t["inference"] = {"enabled": True, "routerServiceType": "LoadBalancer", "allowInsecureConnections": True}
    t["inference"]["routerHA"] = False
    assert parse(raw(t), [KEY]).azure_ml[1].inference.router_ha is False


def test_internal_load_balancer_with_load_balancer_on_aks_is_fine():
    t = aks(inference=https(internalLoadBalancerProvider="azure"))
    assert parse(raw(t), [KEY]).azure_ml[1].inference.internal_load_balancer_provider == "azure"


# --- one failing config per rule, exact message ------------------------------------------------------------


def test_training_or_inference_required():
    assert problems(aks(training=False)) == [
        f"{P}.training: either training or inference.enabled must be true (the extension is installed for "
        "training, inference or both)"
    ]


def test_inference_needs_router_service_type():
    inf = https()
    del inf["routerServiceType"]
    assert problems(aks(inference=inf)) == [
        f"{P}.inference.routerServiceType: required when inference.enabled is true; allowed: {ALLOWED_TYPES}"
    ]


def test_invalid_router_service_type():
    assert problems(aks(inference=https(routerServiceType="Ingress"))) == [
        f"{P}.inference.routerServiceType: must be one of {ALLOWED_TYPES} (any case)"
    ]


def test_https_needs_certificate_material_unless_insecure():
    inf = {"enabled": True, "routerServiceType": "LoadBalancer", "sslCname": "ml.example.com"}
    assert problems(aks(inference=inf)) == [
        f"{P}.inference: HTTPS (the default) needs sslCname and either sslSecret or both sslCertPem and "
        "sslKeyPem; for an HTTP endpoint (dev/test only) set allowInsecureConnections: true"
    ]


def test_https_with_allow_insecure_false_still_needs_material():
    inf = {"enabled": True, "routerServiceType": "NodePort", "allowInsecureConnections": False}
    assert problems(aks(inference=inf)) == [
        f"{P}.inference: HTTPS (the default) needs sslCname and either sslSecret or both sslCertPem and "
        "sslKeyPem; for an HTTP endpoint (dev/test only) set allowInsecureConnections: true"
    ]


def test_https_needs_ssl_cname_with_pems():
    assert problems(aks(inference=https(sslCname=None))) == [
        f"{P}.inference.sslCname: required when HTTPS is configured (sslSecret or sslCertPem and sslKeyPem)"
    ]


def test_https_needs_ssl_cname_with_ssl_secret_even_if_insecure_allowed():
    # The CLI asks for sslCname whenever certificate material is given, whatever allowInsecureConnections says.
    inf = {"enabled": True, "routerServiceType": "ClusterIP", "sslSecret": "azureml-tls"}
    inf["allowInsecureConnections"] = True
    assert problems(aks(inference=inf)) == [
        f"{P}.inference.sslCname: required when HTTPS is configured (sslSecret or sslCertPem and sslKeyPem)"
    ]


def test_cert_without_key():
    assert problems(aks(inference=https(sslKeyPem=None))) == [
        f"{P}.inference.sslKeyPem: required when sslCertPem is set (give both PEMs or neither)"
    ]


def test_key_without_cert():
    assert problems(aks(inference=https(sslCertPem=None))) == [
        f"{P}.inference.sslCertPem: required when sslKeyPem is set (give both PEMs or neither)"
    ]


def test_ssl_secret_and_pems_are_exclusive():
    assert problems(aks(inference=https(sslSecret="azureml-tls"))) == [
        f"{P}.inference.sslSecret: set either sslSecret or sslCertPem and sslKeyPem, not both"
    ]


def test_node_port_with_internal_load_balancer_refused():
    inf = https(routerServiceType="NodePort", internalLoadBalancerProvider="azure")
    assert problems(aks(inference=inf)) == [
        f"{P}.inference.internalLoadBalancerProvider: not allowed with routerServiceType NodePort; "
        "allowed with LoadBalancer or ClusterIP"
    ]


def test_internal_load_balancer_only_on_aks():
    t = with_cluster(kind="arc")
    t["inference"] = https(internalLoadBalancerProvider="azure")
    assert problems(t) == [
        f"{P}.inference.internalLoadBalancerProvider: only allowed on AKS clusters (cluster.kind: aks); "
        "remove it for kind arc"
    ]


def test_internal_load_balancer_provider_value():
    assert problems(aks(inference=https(internalLoadBalancerProvider="aws"))) == [
        f"{P}.inference.internalLoadBalancerProvider: must be one of 'azure'"
    ]


def test_pinned_version_needs_auto_upgrade_false():
    assert problems(aks(version="1.1.62", autoUpgradeMinorVersion=True)) == [
        f"{P}.autoUpgradeMinorVersion: must be false to pin version '1.1.62' (set autoUpgradeMinorVersion: "
        "false, or remove version to follow the release train)"
    ]


def test_pinned_version_with_auto_upgrade_unset_is_refused_too():
    # ARM defaults autoUpgradeMinorVersion to true, which cannot go with a pinned version.
    assert problems(aks(version="1.1.62")) == [
        f"{P}.autoUpgradeMinorVersion: must be false to pin version '1.1.62' (set autoUpgradeMinorVersion: "
        "false, or remove version to follow the release train)"
    ]


def test_namespace_scope_refused():
    assert problems(aks(scope="namespace")) == [
        f"{P}.scope: 'namespace' is not allowed: the Azure ML extension installs only at cluster scope; "
        "allowed: cluster"
    ]


def test_router_ha_true_on_small_cluster_refused():
    t = with_cluster(nodeCount=2)
    t["inference"] = https()
    t["inference"]["routerHA"] = True
    assert problems(t) == [
        f"{P}.inference.routerHA: true needs at least 3 nodes (cluster.nodeCount is 2); "
        "set routerHA: false or leave it unset"
    ]


@pytest.mark.parametrize("pem", [ENCRYPTED_PKCS8, ENCRYPTED_LEGACY], ids=["pkcs8", "proc-type"])
def test_passphrase_protected_key_refused(pem: str):
    assert problems(aks(inference=https(sslKeyPem=pem))) == [
        f"{P}.inference.sslKeyPem: passphrase-protected (ENCRYPTED) PEM is not supported by the Azure ML "
        "extension; provide the unencrypted PEM (e.g. `openssl pkey -in key.pem -out plain.pem`)"
    ]


def test_cert_must_look_like_a_pem():
    assert problems(aks(inference=https(sslCertPem="/etc/ssl/cert.pem"))) == [
        f"{P}.inference.sslCertPem: must be PEM text with a '-----BEGIN CERTIFICATE-----' block "
        "(the certificate itself, not a path)"
    ]


def test_key_must_look_like_a_pem():
    assert problems(aks(inference=https(sslKeyPem=CERT))) == [
        f"{P}.inference.sslKeyPem: must be PEM text with a '-----BEGIN PRIVATE KEY-----' (or RSA/EC PRIVATE "
        "KEY) block (the key itself, not a path)"
    ]


def test_openssh_key_is_not_a_tls_key():
    ssh = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----\n"
    assert problems(aks(inference=https(sslKeyPem=ssh))) == [
        f"{P}.inference.sslKeyPem: must be PEM text with a '-----BEGIN PRIVATE KEY-----' (or RSA/EC PRIVATE "
        "KEY) block (the key itself, not a path)"
    ]


def test_pem_must_be_ascii():
    assert problems(aks(inference=https(sslCertPem=CERT.replace("MIIB", "MIIB\u00e9")))) == [
        f"{P}.inference.sslCertPem: must be ASCII PEM text (the CLI reads PEM files as ASCII)"
    ]


def test_pems_must_come_from_secret_config():
    with pytest.raises(ConfigError) as e:
        parse(raw(aks(inference=https())), [])
    assert e.value.problems == [
        f"{P}.inference.sslCertPem: holds a secret but was set in plain text; set it with `mldiag secrets set "
        f"STACK '{P.split(':', 1)[1]}.inference.sslCertPem' < FILE` or `pulumi config set --secret --path "
        f"'{P}.inference.sslCertPem' ...`",
        f"{P}.inference.sslKeyPem: holds a secret but was set in plain text; set it with `mldiag secrets set "
        f"STACK '{P.split(':', 1)[1]}.inference.sslKeyPem' < FILE` or `pulumi config set --secret --path "
        f"'{P}.inference.sslKeyPem' ...`",
    ]


def test_inference_keys_without_inference_enabled():
    inf = {"routerServiceType": "NodePort", "sslCname": "ml.example.com"}
    assert problems(aks(inference=inf)) == [
        f"{P}.inference: routerServiceType, sslCname only apply when inference.enabled is true; "
        "set inference.enabled: true or remove them"
    ]


def test_openshift_only_on_arc():
    assert problems(with_cluster(openshift=True)) == [
        f"{P}.cluster.openshift: only for kind arc (OpenShift and ARO clusters are connected through Azure "
        "Arc); allowed for kind aks: false"
    ]


def test_arc_cluster_name_must_start_with_a_letter():
    assert problems(with_cluster(kind="arc", name="1lab")) == [
        f"{P}.cluster.name: must start with a letter for kind arc (the Azure Relay namespace name is derived "
        "from it)"
    ]


@pytest.mark.parametrize(
    ("over", "message"),
    [
        ({"kind": "eks"}, "cluster.kind: must be one of 'aks' or 'arc'"),
        (
            {"subscriptionId": "my-sub"},
            "cluster.subscriptionId: 'my-sub' is not allowed: must be a subscription GUID like 00000000-0000-0000-0000-000000000000",
        ),
        (
            {"resourceGroup": "rg/ml"},
            "cluster.resourceGroup: 'rg/ml' is not allowed: no '/', '..', '?', '#', '%' or whitespace "
            "(it becomes part of a URL)",
        ),
        (
            {"name": "aks.ml"},
            "cluster.name: 'aks.ml' is not allowed: must be 1-63 characters of letters, digits, '-' and '_', starting and ending with a "
            "letter or digit",
        ),
        (
            {"location": "Korea-Central"},
            "cluster.location: 'Korea-Central' is not an Azure region name (did you mean 'koreacentral'?)",
        ),
        ({"nodeCount": 0}, "cluster.nodeCount: must be at least 1"),
    ],
    ids=["kind", "subscription", "resource-group", "name", "location", "node-count"],
)
def test_cluster_fields(over: dict[str, Any], message: str):
    assert problems(with_cluster(**over)) == [f"{P}.{message}"]


@pytest.mark.parametrize("kind", ["aks", "arc"])
@pytest.mark.parametrize(
    "location", ["koreacentral", "KoreaCentral", "Korea Central", "KOREA CENTRAL", "korea central"]
)
def test_cluster_location_in_any_form_arm_takes_is_kept_as_the_cli_sends_it(kind: str, location: str):
    # ARM takes location names in any case, with or without spaces; the CLI sends them lowercase, no spaces.
    cfg = parse(raw(with_cluster(kind=kind, location=location)), [KEY])
    assert cfg.azure_ml[1].cluster.location == "koreacentral"


def test_cluster_node_count_is_required():
    t = aks()
    del t["cluster"]["nodeCount"]
    assert problems(t) == [f"{P}.cluster.nodeCount: required key is missing"]


def test_extension_name_shape():
    assert problems(aks(extensionName="AzureML_ext")) == [
        f"{P}.extensionName: must be 1-53 characters of lowercase letters, digits and '-', starting and ending "
        "with a letter or digit (it becomes the Helm release name)"
    ]


def test_release_train_shape():
    assert problems(aks(releaseTrain="stable train")) == [
        f"{P}.releaseTrain: must be a release train name such as stable or preview"
    ]


def test_node_selector_key_and_value():
    t = aks(nodeSelector={"kubernetes.io/os": "linux", "bad key": "x", "pool": "gpu nodes"})
    assert problems(t) == [
        f"{P}.nodeSelector.bad key: 'bad key' is not a Kubernetes label key: [prefix/]name, name 1-63 of "
        "[A-Za-z0-9-_.] starting and ending with a letter or digit, prefix a DNS subdomain",
        f"{P}.nodeSelector.pool: 'gpu nodes' is not a Kubernetes label value: up to 63 of [A-Za-z0-9-_.] "
        "starting and ending with a letter or digit",
    ]


def test_ssl_cname_and_secret_shapes():
    inf = {
        "enabled": True,
        "routerServiceType": "LoadBalancer",
        "sslCname": "https://ml",
        "sslSecret": "TLS!",
    }
    assert problems(aks(inference=inf)) == [
        f"{P}.inference.sslCname: must be a DNS name such as ml.example.com",
        f"{P}.inference.sslSecret: 'TLS!' is not a Kubernetes secret name: up to 253 characters of lowercase "
        "letters, digits, '-' and '.'",
    ]


def test_unknown_key_lists_allowed_keys():
    out = problems(aks(inferenceRouterHA=False))
    assert out == [
        f"{P}.inferenceRouterHA: unknown key (did you mean 'inference'?); allowed keys: adopt, autoUpgradeMinorVersion, cluster, domain, "
        "extensionName, inference, installDcgmExporter, installNvidiaDevicePlugin, installPromOp, installVolcano, "
        "name, nginxIngressController, nodeSelector, previousName, releaseTrain, scope, training, verifyAccess, "
        "verifyRbac, version"
    ]


def test_every_rule_reported_at_once():
    t = copy.deepcopy(with_cluster(kind="arc", nodeCount=1))
    t["training"] = False
    t["version"] = "1.0.0"
    t["inference"] = {"enabled": True, "internalLoadBalancerProvider": "azure", "routerHA": True}
    out = problems(t)
    assert [p.split(":", 2)[1].split(" ")[0] for p in out] == [
        "azureMl[1].autoUpgradeMinorVersion",
        "azureMl[1].inference",
        "azureMl[1].inference.internalLoadBalancerProvider",
        "azureMl[1].inference.routerHA",
        "azureMl[1].inference.routerServiceType",
    ]


# --- sizing preflight, nginx controller class, verify access (issue 28) ----------------------------------


def env_problems(environment: str, t: dict[str, Any]) -> list[str]:
    with pytest.raises(ConfigError) as e:
        parse({f"{NS}:environment": environment, KEY: [t]}, [KEY])
    return e.value.problems


def test_prod_inference_needs_three_nodes_of_the_production_size():
    small = aks(inference=https())
    small["cluster"] = {**small["cluster"], "nodeCount": 2, "vmSize": "Standard_DS2_v2"}
    assert env_problems("prod", small) == [
        f"{NS}:azureMl[0].cluster.nodeCount: 2 node(s): production training and inference on the Azure ML "
        "extension needs 3 node(s) of at least 4 vCPU / 14 GiB (e.g. DS3_v2); reference-kubernetes.md, "
        "Recommended resource planning",
        f"{NS}:azureMl[0].cluster.vmSize: 2 vCPU / 7 GiB per node: production training and inference on the "
        "Azure ML extension needs 3 node(s) of at least 4 vCPU / 14 GiB (e.g. DS3_v2); reference-kubernetes.md, "
        "Recommended resource planning",
    ]


def test_the_same_cluster_passes_the_test_rows_in_dev_and_gpu_sizes_are_known():
    t = aks()
    t["cluster"] = {**t["cluster"], "nodeCount": 1, "vmSize": "Standard_DS2_v2"}
    assert (
        parse({f"{NS}:environment": "dev", KEY: [t]}, [KEY]).azure_ml[0].cluster.vm_size == "Standard_DS2_v2"
    )
    gpu = aks()
    gpu["cluster"] = {**gpu["cluster"], "nodeCount": 1, "vmSize": "Standard_NC24ads_A100_v4"}
    parse({f"{NS}:environment": "prod", KEY: [gpu]}, [KEY])  # 24 vCPU / 220 GiB: a production training node


def test_an_unknown_vm_size_asks_for_node_resources_and_those_are_checked():
    t = aks()
    t["cluster"] = {**t["cluster"], "vmSize": "Standard_Custom99"}
    assert env_problems("prod", t) == [
        f"{NS}:azureMl[0].cluster.vmSize: 'Standard_Custom99' is not in the built-in VM size table; give "
        "cluster.nodeResources {vcpus, memoryGiB} for it (or remove vmSize to skip the size check)"
    ]
    t["cluster"]["nodeResources"] = {"vcpus": 4, "memoryGiB": 16}
    assert env_problems("prod", t) == [
        f"{NS}:azureMl[0].cluster.nodeResources: 4 vCPU / 16 GiB per node: production training on the Azure ML "
        "extension needs 1 node(s) of at least 8 vCPU / 28 GiB (e.g. DS4_v2); reference-kubernetes.md, "
        "Recommended resource planning"
    ]
    t["cluster"]["nodeResources"] = {"vcpus": 8, "memoryGiB": 32}
    parse({f"{NS}:environment": "prod", KEY: [t]}, [KEY])


def test_the_vm_size_and_node_facts_are_never_sent_to_the_component():
    from program.kinds.azure_ml.build import args

    t = aks()
    t["cluster"] = {
        **t["cluster"],
        "vmSize": "Standard_D8s_v3",
        "nodeResources": {"vcpus": 8, "memoryGiB": 32},
    }
    cfg = parse({f"{NS}:environment": "dev", KEY: [t]}, [KEY])
    assert set(args(cfg.azure_ml[0])["cluster"]) == {
        "kind", "subscription_id", "resource_group", "name", "location", "node_count", "openshift",
    }  # fmt: skip


def test_nginx_ingress_controller_is_aks_only_and_shaped_like_a_class():
    assert problems(aks(nginxIngressController="nginx")) == [
        f"{P}.nginxIngressController: must be an ingress controller class <domain>/<name>, e.g. "
        "k8s.io/amlarc-ingress-nginx"
    ]
    arc = with_cluster(kind="arc")
    arc["nginxIngressController"] = "k8s.io/amlarc-ingress-nginx"
    assert problems(arc) == [
        f"{P}.nginxIngressController: only for kind aks: the extension installs its nginx ingress on AKS, not on Arc"
    ]


@pytest.mark.parametrize(
    "access, kind, expected",
    [
        ({}, "aks", "verifyAccess: give either kubeconfig (a secret) or aksUserCredentials: true, not both"),
        (
            {"aksUserCredentials": True, "kubeconfig": "apiVersion: v1"},
            "aks",
            "verifyAccess: give either kubeconfig (a secret) or aksUserCredentials: true, not both",
        ),
        ({"aksUserCredentials": True}, "arc", "verifyAccess.aksUserCredentials: only for kind aks"),
        ({"aksUserCredentials": True, "context": "x"}, "aks", "verifyAccess.context: only with kubeconfig"),
    ],
)
def test_verify_access_takes_one_way_in(access, kind, expected):
    t = with_cluster(kind=kind)
    t["verifyAccess"] = access
    assert any(p.startswith(f"{P}.{expected}") for p in problems(t)), problems(t)


def test_verify_rbac_needs_verify_access():
    t = aks(verifyRbac={"enabled": True, "subjects": [{"kind": "Group", "name": "ml-oncall"}]})
    assert problems(t) == [
        f"{P}.verifyRbac: needs verifyAccess (a kubeconfig secret, or aksUserCredentials on AKS): the role is "
        "created through it"
    ]
