"""`module:attribute` references imported on first use: the table's entries name their heavier parts so
(a component factory, verify's checks and clients), and validating a stack file imports no cloud SDK."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Lazy:
    """`module:attribute` (or a whole `module`), imported on first use."""

    ref: str

    def load(self) -> Any:
        module, _, attr = self.ref.partition(":")
        loaded = importlib.import_module(module)
        return getattr(loaded, attr) if attr else loaded

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.load()(*args, **kwargs)
