"""Adopting a cluster created outside Pulumi (`import_` = its full name): `read` returns inputs that show
no diff when the live cluster matches the program, and exactly the differing fields when it does not."""

from __future__ import annotations

import copy
from typing import Any

from dev.fakes.vertex_schema import fill_defaults
from ml_diagnostics.specs.model_development import normalize, to_rest

NAME = "projects/p/locations/us-central1/modelDevelopmentClusters/mdc1"


def differing(a: Any, b: Any, path: str = "") -> list[str]:
    """Paths where two input dicts differ (what the engine's property diff shows)."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b)):
            out += differing(a.get(k), b.get(k), f"{path}.{k}" if path else k)
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [p for i, (x, y) in enumerate(zip(a, b, strict=True)) for p in differing(x, y, f"{path}[{i}]")]
    return [] if a == b else [path]


def created_by_curl(api, spec: dict[str, Any], **changes: Any) -> dict[str, Any]:
    """The cluster as the vendor's curl create leaves it (server-filled fields included)."""
    body = to_rest(spec)
    body.update(changes)
    api.put_cluster(NAME, body)
    fill_defaults(NAME, api.clusters[NAME])
    return api.clusters[NAME]


def program(spec: dict[str, Any]) -> dict[str, Any]:
    """Inputs as the engine hands them to read during an import (numbers as floats)."""
    p = copy.deepcopy(spec)
    for pool in p["node_pools"]:
        pool["scaling_spec"] = {k: float(v) for k, v in pool["scaling_spec"].items()}
    return p


def test_adopting_a_matching_cluster_shows_no_diff(provider, api, spec):
    created_by_curl(api, spec)
    inputs = program(spec)
    res = provider.read(NAME, inputs)
    assert res.id == NAME
    assert differing(normalize(res.inputs), normalize(inputs)) == []
    d = provider.diff(NAME, res.outs, inputs)
    assert (d.changes, d.replaces) == (False, [])
    assert (res.outs["name"], res.outs["state"]) == (NAME, "RUNNING")
    assert [(r.method, r.path) for r in api.api_requests()] == [("GET", f"/v1beta1/{NAME}")]
    # server-filled fields the program leaves unset stay out of the inputs
    assert "provisioning_model" not in res.inputs["node_pools"][0]
    assert "runtime_spec" not in res.inputs


def test_a_differing_cluster_shows_exactly_the_differing_fields(provider, api, spec):
    live = created_by_curl(api, spec, labels={"owner": "someone"})
    live["nodePools"][0]["scalingSpec"]["maxNodeCount"] = 9
    live["orchestratorSpec"]["slurmSpec"]["config"] = {"PriorityWeightAge": "10"}
    live["displayName"] = "made with curl"
    inputs = program(spec)
    res = provider.read(NAME, inputs)
    assert differing(normalize(res.inputs), normalize(inputs)) == [
        "display_name",
        "labels",
        "node_pools[0].scaling_spec.max_node_count",
        "orchestrator_spec.slurm_spec.config",
    ]
    plan_diff = provider.diff(NAME, res.outs, inputs)
    assert (plan_diff.changes, plan_diff.replaces) == (True, [])  # the display name is updated in place


def test_updatable_differences_import_as_an_update(provider, api, spec):
    live = created_by_curl(api, spec, labels={"owner": "someone"})
    live["nodePools"][0]["scalingSpec"]["maxNodeCount"] = 9
    inputs = program(spec)
    res = provider.read(NAME, inputs)
    d = provider.diff(NAME, res.outs, inputs)
    assert (d.changes, d.replaces) == (True, [])
    api.requests.clear()
    provider.update(NAME, res.outs, inputs)
    (patch,) = [r for r in api.api_requests() if r.method == "PATCH"]
    assert patch.query["updateMask"] == "labels,node_pools"
    assert (
        patch.body["labels"] == {} and api.clusters[NAME]["nodePools"][0]["scalingSpec"]["maxNodeCount"] == 2
    )


def test_import_of_a_missing_cluster_finds_nothing(provider, api, spec):
    res = provider.read(NAME, program(spec))
    assert (res.id, res.outs) == (None, {})


def test_import_by_id_alone_reads_everything(provider, api, spec):
    created_by_curl(api, spec)
    res = provider.read(NAME, {"api_endpoint": api.endpoint, "emulator": True})
    assert res.inputs["model_development_cluster_id"] == "mdc1"
    assert [p["id"] for p in res.inputs["node_pools"]] == ["cpu", "login"]
    assert res.inputs["runtime_spec"] == {"service_account": "p-compute@developer.gserviceaccount.com"}
