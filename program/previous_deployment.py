"""What the last deployment of this stack exported, read through a StackReference to the stack itself.

The engine deletes the resources a program no longer declares only after every create and update of the
same `pulumi up`. Where the order across that boundary matters (manual -> managed on a GKE cluster: the
manual releases must be gone before the managed flag goes on), the program reads what the last deployment
exported and splits the change over two updates. A preview reads the same outputs, so the PR shows it.

The stack's own outputs are read-only here: no other stack is referenced, nothing is written.
"""

from __future__ import annotations

from typing import Any

import pulumi


class PreviousDeployment:
    """One `pulumi:pulumi:StackReference` to this stack, created on first use."""

    def __init__(self) -> None:
        self._ref: pulumi.StackReference | None = None

    @staticmethod
    def stack_name() -> str:
        return f"{pulumi.get_organization()}/{pulumi.get_project()}/{pulumi.get_stack()}"

    def output(self, key: str) -> pulumi.Output[Any]:
        """The value the last deployment exported under `key`; None for a first deployment or a new key."""
        if self._ref is None:
            self._ref = pulumi.StackReference(self.stack_name())
        return self._ref.get_output(key)
