"""The azure cloud: no stack-level settings (each azureMl target names its subscription, tenant and cloud);
verify reads ARM through one client per run, at --arm-endpoint."""

from __future__ import annotations

from program.clouds import Cloud, Option
from program.lazy import Lazy

ARM_ENDPOINT = "https://management.azure.com"

AZURE = Cloud(
    "azure",
    client=Lazy("program.clouds.azure_client:client"),
    options=(Option("--arm-endpoint", "arm_endpoint", ARM_ENDPOINT, "Azure Resource Manager URL"),),
)
