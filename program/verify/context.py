"""What a kind's verify checks get besides their target: the stack config and the run's settings."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class VerifyContext:
    cfg: Any
    """The validated StackConfig."""
    log_lines: int = 500
    """Recent log lines read per Diagon pod."""
    arm_endpoint: str = "https://management.azure.com"
    """Azure Resource Manager URL."""
    _clients: dict[str, Any] = field(default_factory=dict)

    def arm(self) -> Any:
        """One ARM client for the whole run."""
        if "arm" not in self._clients:
            from program.verify.azure import Arm

            self._clients["arm"] = Arm(self.arm_endpoint)
        return self._clients["arm"]
