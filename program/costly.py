"""The resource types whose replacement or deletion costs most, as a kind or a shared part declares them: the
offline diff's headline names each one. Below the kinds and the in-cluster parts, which both declare some."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Costly:
    """A resource type whose replacement or deletion costs most: the offline diff's headline names each one."""

    type: str
    """Type token, API version left out (azure-native's `module/v20230501` matches `module`)."""
    one: str
    many: str
    parents: tuple[str, ...] = ()
    """Only resources whose parent component has one of these types (none: every resource of the type)."""
    name_path: str = ""
    """The input that names it for a reviewer (a namespace's `metadata.name`); default: the resource name."""
