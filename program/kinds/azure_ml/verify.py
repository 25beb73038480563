"""Verify checks of an azureMl target, and of an AzureMlExtension found in a stack's state: the extension (and
Arc relay) as ARM reports them, then, with verifyAccess, what the extension reports and runs inside the
cluster (verify_cluster.py)."""

from __future__ import annotations

from ml_diagnostics import verify_record
from ml_diagnostics.verify_record import AzureMlRecord
from program.clouds.azure import AZURE
from program.config_base import is_placeholder
from program.kinds.azure_ml.model import AzureMlTarget, AzureVerifyAccess
from program.kinds.azure_ml.verify_arm import aks_user_kubeconfig, check_extension
from program.kinds.context import VerifyContext
from program.verify.result import TargetResult


def record_of(target: AzureMlTarget) -> AzureMlRecord:
    """What the target's AzureMlExtension records (ml_diagnostics.verify_record), from the stack config."""
    return AzureMlRecord.model_validate(verify_record.azure_ml(target, target.extension))


def verify(target: AzureMlTarget, ctx: VerifyContext, result: TargetResult) -> None:
    check(record_of(target), target.verify_access, ctx, result)


def check(
    rec: AzureMlRecord, access: AzureVerifyAccess | None, ctx: VerifyContext, result: TargetResult
) -> None:
    arm = ctx.client(AZURE)
    state = check_extension(rec, arm, result)
    if access is None:
        result.add(
            "azureml.in-cluster",
            True,
            "not checked: set verifyAccess (a kubeconfig secret, or aksUserCredentials on AKS) for the health "
            "report, pods and clashes",
        )
        return
    if access.kubeconfig is not None:
        kubeconfig = access.kubeconfig.get_secret_value()
        if is_placeholder(kubeconfig):
            raise ctx.still_encrypted("its verifyAccess.kubeconfig")
    else:
        kubeconfig = aks_user_kubeconfig(rec, arm)
    from program.clouds.kubernetes_client import kube_client, probe
    from program.kinds.azure_ml.verify_cluster import check_in_cluster

    api = kube_client(kubeconfig, access.context)
    try:
        probe(api)
        check_in_cluster(rec, api, result, state)
    finally:
        api.close()
