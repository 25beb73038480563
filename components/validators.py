"""Shared validators of identifiers, one per kind, from the documented rules of each system.

Each `*_problem(value)` returns why the value is not allowed (None when fine); `check(problem, value)` raises it
as the ValueError pydantic reports with the key path. Every check bounds the length before any regex, and the
regexes have no nested unbounded repetition, so their cost is linear in the (bounded) input.
This module imports nothing from the project: targets, the stack config and components may all use it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

QUOTE_LIMIT = 120


def quote(value: object, limit: int = QUOTE_LIMIT) -> str:
    """repr() of a user value, cut to about `limit` characters so a huge value never floods an error."""
    text = repr(value) if not isinstance(value, str) or len(value) <= limit else repr(value[:limit])
    if isinstance(value, str) and len(value) > limit:
        return f"{text[:-1]}...{text[-1]} ({len(value)} characters)"
    return text if len(text) <= limit + 2 else text[:limit] + "..."


def check(problem: Callable[[str], str | None], value: str) -> str:
    """Raises the problem (a ValueError, reported by pydantic with the key path) or returns the value."""
    if (msg := problem(value)) is not None:
        raise ValueError(msg)
    return value


# --- names of this program ------------------------------------------------------------------------------

_SHORT_NAME = re.compile(r"[a-z]([a-z0-9-]{0,38}[a-z0-9])?")
SHORT_NAME_RULE = "1-40 lowercase letters, digits and '-', starting with a letter and not ending with '-'"


def short_name_problem(v: str) -> str | None:
    """Target names, GKE cluster and node pool names (GKE: 1-40 characters, RFC 1035 label)."""
    if len(v) > 40 or not _SHORT_NAME.fullmatch(v):
        return f"{quote(v)} is not allowed: must be {SHORT_NAME_RULE}"
    return None


target_name_problem = short_name_problem


# --- Kubernetes ------------------------------------------------------------------------------------------

_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")
_DNS_SUBDOMAIN_PART = _DNS_LABEL
_LABEL_NAME = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?")


def dns_label_problem(v: str, what: str = "a Kubernetes name") -> str | None:
    """RFC 1123 label: namespaces, service accounts."""
    if len(v) > 63 or not _DNS_LABEL.fullmatch(v):
        return (
            f"{quote(v)} is not {what}: 1-63 lowercase letters, digits and '-', "
            "starting and ending with a letter or digit"
        )
    return None


def namespace_problem(v: str) -> str | None:
    return dns_label_problem(v, "a Kubernetes namespace name")


def _dns_subdomain_ok(v: str) -> bool:
    return 0 < len(v) <= 253 and all(
        len(part) <= 63 and _DNS_SUBDOMAIN_PART.fullmatch(part) for part in v.split(".")
    )


def dns_subdomain_problem(v: str, what: str = "a Kubernetes object name") -> str | None:
    """RFC 1123 subdomain: secret names, label key prefixes."""
    if not _dns_subdomain_ok(v):
        return f"{quote(v)} is not {what}: up to 253 characters of lowercase letters, digits, '-' and '.'"
    return None


def label_key_problem(key: str) -> str | None:
    prefix, _, name = key.rpartition("/")
    if (prefix and not _dns_subdomain_ok(prefix)) or len(name) > 63 or not _LABEL_NAME.fullmatch(name):
        return (
            f"{quote(key)} is not a Kubernetes label key: [prefix/]name, name 1-63 of [A-Za-z0-9-_.] starting "
            "and ending with a letter or digit, prefix a DNS subdomain"
        )
    return None


def label_value_problem(v: str) -> str | None:
    if v and (len(v) > 63 or not _LABEL_NAME.fullmatch(v)):
        return (
            f"{quote(v)} is not a Kubernetes label value: up to 63 of [A-Za-z0-9-_.] starting and ending "
            "with a letter or digit"
        )
    return None


def k8s_labels_problems(labels: Mapping[str, str], path: str) -> list[tuple[str, str]]:
    """(relative path, message) for every bad key or value of a Kubernetes label map."""
    problems = []
    for k, v in labels.items():
        if p := label_key_problem(k) or label_value_problem(v):
            problems.append((f"{path}.{k}" if path else k, p))
    return problems
