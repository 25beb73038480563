"""Config of `azureMl` targets (Azure Machine Learning extension on AKS or Arc).

The keys and rules are the library's (`ml_diagnostics.rules.azure_ml`: what `az k8s-extension create
--extension-type Microsoft.AzureML.Kubernetes` enforces on the client, plus the Azure ML extension docs' limits), checked
before any resource is registered; here are the stack file's own keys (the name, `scope`, `verifyAccess`,
the sizing facts of `cluster`) and how verify's access maps onto the library's.

    - name: aks-prod                      # target name (resource names)
      extensionName: azureml              # ARM extension name = Helm release name; default: name
      cluster:                            # the cluster's ARM id and facts come from here, never looked up
        kind: aks                         # aks (managedClusters) | arc (connectedClusters)
        subscriptionId: <guid>
        resourceGroup: rg-ml              # Arc: the Azure Relay goes here too
        name: aks-ml
        location: koreacentral            # any form ARM takes: KoreaCentral, Korea Central; sent koreacentral
        tenantId: <guid>                  # optional: the subscription's tenant (explicit provider)
        cloudEnvironment: public          # optional: public | usgovernment | china
        nodeCount: 5                      # < 3: clusterPurpose=DevTest, inferenceRouterHA=false (as the CLI)
        vmSize: Standard_D4s_v3           # optional: sizing preflight by environment (preflight.py)
        openshift: false                  # arc only
      training: true                      # enableTraining
      inference:
        enabled: true                     # enableInference
        routerServiceType: LoadBalancer   # LoadBalancer | NodePort | ClusterIP (any case)
        internalLoadBalancerProvider: azure   # aks only, not with NodePort
        allowInsecureConnections: false   # true: HTTP endpoint (dev/test)
        sslCname: ml.example.com          # required with sslSecret or the PEMs
        sslSecret: azureml-tls            # k8s secret in `azureml`, or else both PEMs (secret config, PEM text)
        sslCertPem: {secure: ...}
        sslKeyPem: {secure: ...}          # not passphrase-protected
        routerHA: true                    # true needs nodeCount >= 3; unset: derived
      nodeSelector: {pool: gpu}           # nodeSelector.<key>
      installNvidiaDevicePlugin / installPromOp / installVolcano / installDcgmExporter: bool
      version: 1.1.39                     # needs autoUpgradeMinorVersion: false; prod requires a pin
      autoUpgradeMinorVersion: false
      nginxIngressController: k8s.io/amlarc-ingress-nginx   # aks only: when the cluster runs its own nginx
      verifyAccess: {aksUserCredentials: true}   # or {kubeconfig: {secure: ...}}: verify's in-cluster checks
      verifyRbac: {enabled: true, subjects: [...]}   # the read-only role for them (access.py)
      releaseTrain: stable                # default stable
      scope: cluster                      # the only scope allowed
      domain: ml.contoso.internal         # default: <location>.cloudapp.azure.com
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import SecretStr, field_validator, model_validator

from ml_diagnostics.compat import quote
from ml_diagnostics.rules.azure_cluster import MIN_HA_NODES, AzureClusterSpec
from ml_diagnostics.rules.azure_ml import (
    NGINX_DEFAULT_CONTROLLER,
    ROUTER_SERVICE_TYPES,
    AzureMlExtensionRules,
    InferenceSpec,
    pem_problem,
)
from ml_diagnostics.rules.base import Path
from program.config_base import SecretText, TargetBase, is_placeholder
from program.in_cluster import VerifyRbacSettings
from program.kinds.azure_ml.access import AzureVerifyAccess, NodeResources

__all__ = [
    "MIN_HA_NODES",
    "NGINX_DEFAULT_CONTROLLER",
    "ROUTER_SERVICE_TYPES",
    "AzureClusterRef",
    "AzureMlTarget",
    "InferenceSettings",
]

_VM_SIZE = re.compile(r"[A-Za-z][A-Za-z0-9_-]{1,63}", re.ASCII)


class AzureClusterRef(AzureClusterSpec):
    """The AKS or Arc cluster the extension goes on: its ARM id and facts are built from this, never looked up."""

    vm_size: str | None = None
    """The nodes' VM size (the smallest pool's), e.g. Standard_D4s_v3: checked against the extension's
    recommended sizes (reference-kubernetes.md) for the stack's environment; never sent anywhere."""
    node_resources: NodeResources | None = None
    """{vcpus, memoryGiB} of one node, for a vmSize the built-in table does not know (or instead of it)."""

    @field_validator("vm_size")
    @classmethod
    def _vm_size(cls, v: str | None) -> str | None:
        if v is not None and not _VM_SIZE.fullmatch(v):
            raise ValueError("must be an Azure VM size name such as Standard_D4s_v3")
        return v


def _pem(value: SecretStr | None, want: Literal["certificate", "private key"]) -> SecretStr | None:
    """The library's PEM rule on a stack file's secret (an offline plan's placeholder is opaque)."""
    problem = None if value is None or is_placeholder(value) else pem_problem(value.get_secret_value(), want)
    if problem:
        raise ValueError(problem)
    return value


class InferenceSettings(InferenceSpec):
    ssl_cert_pem: SecretText | None = None  # type: ignore[assignment]
    """PEM text (not a path), a secret (`mldiag secrets set` or `pulumi config set --secret --path`)."""
    ssl_key_pem: SecretText | None = None  # type: ignore[assignment]
    """PEM private key text (unencrypted), a secret (`mldiag secrets set` or `pulumi config set --secret`)."""

    @field_validator("ssl_cert_pem")
    @classmethod
    def _cert_pem(cls, v: SecretStr | None) -> SecretStr | None:
        return _pem(v, "certificate")

    @field_validator("ssl_key_pem")
    @classmethod
    def _key_pem(cls, v: SecretStr | None) -> SecretStr | None:
        return _pem(v, "private key")


class AzureMlTarget(TargetBase, AzureMlExtensionRules):
    cluster: AzureClusterRef
    extension_name: str | None = None
    """The extension's ARM name (= Helm release name); defaults to the target name."""
    inference: InferenceSettings = InferenceSettings()
    scope: str = "cluster"
    """Only `cluster` is supported by the Azure ML extension."""
    verify_access: AzureVerifyAccess | None = None
    """How `mldiag verify` reads inside the cluster (health report, pods, clashes); unset: ARM checks only."""
    verify_rbac: VerifyRbacSettings = VerifyRbacSettings()
    """A read-only role holding exactly what verify reads in the cluster, created through verifyAccess."""

    @field_validator("scope")
    @classmethod
    def _scope(cls, v: str) -> str:
        if v != "cluster":
            raise ValueError(
                f"{quote(v)} is not allowed: the Azure ML extension installs only at cluster scope; allowed: cluster"
            )
        return v

    @property
    def extension(self) -> str:
        return self.extension_name or self.name

    def verify_access_given(self) -> bool:
        return self.verify_access is not None

    def aks_user_credentials_at(self) -> Path | None:
        access = self.verify_access
        return (
            ("verify_access", "aks_user_credentials")
            if access is not None and access.aks_user_credentials
            else None
        )

    @model_validator(mode="after")
    def _rename_check(self) -> AzureMlTarget:
        self.named_after_target("extension_name", "the extension", "extension")
        return self
