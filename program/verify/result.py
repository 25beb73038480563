"""What a verification run finds: one `TargetResult` per configured target, each with its `Check`s. A target
that could not be reached at all carries `unreachable` (the reason) and no checks. Exit codes: 0 every check
passed; 1 a check failed; 2 the stack config is invalid; 3 a target is unreachable (it wins over 1: a
target nobody could look at is not known to work). Rendering is mldiag/verify/report.py. `Unreachable` is
the clients' (program/clouds), named here too for the checks that raise it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from program.clouds import Unreachable

__all__ = ["Check", "TargetResult", "Unreachable"]


@dataclass(frozen=True)
class Check:
    name: str  # e.g. `diagon.logs`
    ok: bool
    detail: str  # what was found
    fix: str = ""  # what to do about it (failed checks)


@dataclass
class TargetResult:
    kind: str  # config key: kubernetesClusters, gkeClusters, azureMl, modelDevelopmentClusters
    name: str
    checks: list[Check] = field(default_factory=list)
    unreachable: str | None = None

    @property
    def label(self) -> str:
        return f"{self.kind}/{self.name}"

    @property
    def failed(self) -> list[Check]:
        return [c for c in self.checks if not c.ok]

    def add(self, name: str, ok: bool, detail: str, fix: str = "") -> Check:
        check = Check(name, ok, detail, "" if ok else fix)
        self.checks.append(check)
        return check
