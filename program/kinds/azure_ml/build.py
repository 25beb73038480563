"""azureMl target -> `ml_diagnostics.AzureMlExtension`."""

from __future__ import annotations

from typing import Any

from ml_diagnostics.azure_ml import AzureMlExtension, AzureMlExtensionArgs
from ml_diagnostics.rules.azure_ml import AzureMlExtensionSpec
from program.config_base import secret_output
from program.kinds.azure_ml.model import AzureMlTarget
from program.kinds.base import BuildContext


def args(target: AzureMlTarget) -> AzureMlExtensionArgs:
    c = target.cluster
    cluster: dict[str, Any] = c.model_dump(exclude_none=True, exclude={"vm_size", "node_resources"})
    inf = target.inference
    inference: dict[str, Any] = inf.model_dump(exclude_none=True, exclude={"ssl_cert_pem", "ssl_key_pem"})
    if inf.ssl_cert_pem is not None:
        inference["ssl_cert_pem"] = secret_output(inf.ssl_cert_pem)
    if inf.ssl_key_pem is not None:
        inference["ssl_key_pem"] = secret_output(inf.ssl_key_pem)
    out: dict[str, Any] = {
        "cluster": cluster,
        "extension_name": target.extension,
        "training": target.training,
        "inference": inference,
        "node_selector": dict(target.node_selector),
        "adopt": target.adopt,
    }
    for key in (
        "install_nvidia_device_plugin",
        "install_prom_op",
        "install_volcano",
        "install_dcgm_exporter",
        "version",
        "auto_upgrade_minor_version",
        "release_train",
        "domain",
        "nginx_ingress_controller",
    ):
        if getattr(target, key) is not None:
            out[key] = getattr(target, key)
    access = target.verify_access
    if target.verify_rbac.enabled and access is not None:
        out["verify_rbac"] = target.verify_rbac.to_args()
        if access.kubeconfig is not None:
            out["kubeconfig"] = secret_output(access.kubeconfig)
            if access.context:
                out["kubeconfig_context"] = access.context
        else:
            out["aks_user_credentials"] = True
    return out  # type: ignore[return-value]


def build(target: AzureMlTarget, ctx: BuildContext) -> Any:
    ext = ctx.component(AzureMlExtension, "azureml", target, AzureMlExtensionSpec.trusted(args(target)))
    return ext.extension_id
