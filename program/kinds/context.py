"""What a kind's verify checks get besides their target: the stack config, the run's options, and one
client per cloud (program/clouds: each cloud's entry says how its client is made)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from program.clouds import Cloud, Unreachable

ENCRYPTED_HINT = "encrypted_hint"
"""The option that says how a secret the stack file holds encrypted gets decrypted (mldiag verify sets it)."""


@dataclass
class VerifyContext:
    cfg: Any
    """The validated StackConfig."""
    options: dict[str, Any] = field(default_factory=dict)
    """Verify's options: `log_lines`, `all_logs`, and each cloud's (program/clouds: `arm_endpoint`)."""
    _clients: dict[str, Any] = field(default_factory=dict)

    @property
    def log_lines(self) -> int:
        """Recent log lines read per Diagon pod."""
        return int(self.options.get("log_lines", 500))

    @property
    def all_logs(self) -> bool:
        """Read every Diagon pod's log, not a sample plus the pods not ready."""
        return bool(self.options.get("all_logs", False))

    def still_encrypted(self, what: str) -> Unreachable:
        """The reason a target is unreachable when a secret it needs (`what`: `its kubeconfig`) was not
        decrypted: what to do about it."""
        hint = self.options.get(
            ENCRYPTED_HINT, "pass --pulumi-stack ORG/ml-diagnostics/STACK (the Pulumi CLI decrypts it)"
        )
        return Unreachable(f"{what} is a secret the stack file holds encrypted: {hint}")

    def settings(self, cloud: Cloud) -> Any:
        """The stack's settings of a cloud (None when the cloud has none)."""
        return self.cfg.settings(cloud) if cloud.settings is not None else None

    def client(self, cloud: Cloud) -> Any:
        """The cloud's client, one for the whole run."""
        if cloud.name not in self._clients:
            if cloud.client is None:
                raise LookupError(f"the {cloud.name} cloud has no client of its own")
            self._clients[cloud.name] = cloud.client(self.settings(cloud), self.options)
        return self._clients[cloud.name]
