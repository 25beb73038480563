"""No PATCH can name a field outside seed 004's `updateMask` list (`UPDATE_MASK_PATHS` (components/specs/model_development.py)).

A property test mutates any leaf of the API schema (derived from the one schema), any number of times,
and checks the update plan: the mask only ever holds listed paths, the body only those fields, and a change
anywhere else is a replacement (refused under the PREVENT deletion policy).
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ml_diagnostics.providers.mdc.update_plan import mask_body, plan_update
from ml_diagnostics.providers.model_development_cluster import (
    ModelDevelopmentClusterError,
    ModelDevelopmentClusterProvider,
)
from ml_diagnostics.specs.model_development import (
    API_SCHEMA,
    BOOL,
    INT,
    LIST,
    MAP,
    OPAQUE,
    UPDATE_MASK_PATHS,
    normalize,
    to_camel,
)

BASE: dict[str, Any] = {
    "project": "p",
    "region": "us-central1",
    "model_development_cluster_id": "mdc1",
    "display_name": "cpu cluster",
    "labels": {"team": "ml"},
    "network": {
        "network": "projects/p/global/networks/n",
        "subnetwork": "projects/p/regions/r/subnetworks/s",
    },
    "node_pools": [
        {
            "id": pid,
            "machine_spec": {"machine_type": "n2-standard-8"},
            "scaling_spec": {"min_node_count": 0, "max_node_count": 2},
            "zone": "us-central1-a",
        }
        for pid in ("cpu", "login")
    ],
    "orchestrator_spec": {
        "slurm_spec": {
            "home_directory_storage": "projects/p/locations/z/instances/home",
            "partitions": [{"id": "cpu", "node_pool_ids": ["cpu"]}],
            "login_node_pool_id": "login",
        }
    },
    "runtime_spec": {"service_account": "sa@p.iam.gserviceaccount.com"},
}


def leaves(schema: Any, path: tuple[Any, ...] = ()) -> list[tuple[tuple[Any, ...], Any]]:
    """Every settable leaf: (path with list positions, kind)."""
    if isinstance(schema, dict):
        return [leaf for k, sub in schema.items() for leaf in leaves(sub, (*path, k))]
    if isinstance(schema, list):
        return leaves(schema[0], (*path, 0))
    return [(path, schema)]


LEAVES = leaves(API_SCHEMA)


def value_for(kind: str) -> st.SearchStrategy[Any]:
    return {
        INT: st.integers(0, 50),
        BOOL: st.booleans(),
        LIST: st.lists(st.sampled_from(["a", "b", "cpu"]), max_size=2),
        MAP: st.dictionaries(st.sampled_from(["K", "Weight"]), st.sampled_from(["1", "2"]), max_size=2),
        OPAQUE: st.dictionaries(st.sampled_from(["x"]), st.integers(0, 2), max_size=1),
    }.get(kind, st.sampled_from(["v1", "v2", "cpu", "login"]))


mutation = st.sampled_from(LEAVES).flatmap(lambda leaf: st.tuples(st.just(leaf[0]), value_for(leaf[1])))


def apply(spec: dict[str, Any], path: tuple[Any, ...], value: Any) -> None:
    node: Any = spec
    for part, nxt in zip(path, path[1:], strict=False):
        if isinstance(part, int):
            while len(node) <= part:
                node.append({})
            node = node[part]
        else:
            node = node.setdefault(part, [] if isinstance(nxt, int) else {})
    last = path[-1]
    node[last] = value


def body_paths(body: Any, prefix: str = "") -> set[str]:
    """Dotted camelCase paths in a PATCH body, down to the masked level."""
    out = set()
    for k, v in body.items():
        p = f"{prefix}.{k}" if prefix else k
        if isinstance(v, dict) and p in ("orchestratorSpec", "orchestratorSpec.slurmSpec"):
            out |= body_paths(v, p)
        else:
            out.add(p)
    return out


ALLOWED_BODY = {".".join(to_camel(x) for x in p.split(".")) for p in UPDATE_MASK_PATHS}


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(mutation, min_size=1, max_size=4))
def test_no_patch_names_a_field_outside_the_list(mutations):
    new = copy.deepcopy(BASE)
    for path, value in mutations:
        apply(new, path, value)
    plan = plan_update(normalize(BASE), normalize(new))
    assert set(plan.mask) <= set(UPDATE_MASK_PATHS)
    assert plan.mask == sorted(plan.mask, key=UPDATE_MASK_PATHS.index)
    if plan.replaces:
        assert plan.mask == []
    assert body_paths(mask_body(normalize(new), plan.mask)) <= ALLOWED_BODY
    for path, _ in mutations:
        dotted = ".".join(p for p in path if isinstance(p, str))
        if not any(dotted == m or dotted.startswith(m + ".") for m in UPDATE_MASK_PATHS):
            # outside the list: never in the mask (a replacement if the value actually changed)
            assert not any(m.startswith(dotted) for m in plan.mask)


@pytest.mark.parametrize(
    ("field", "change", "reason"),
    [
        (
            "network",
            lambda s: s["network"].update(subnetwork="projects/p/regions/r/subnetworks/t"),
            "network.subnetwork",
        ),
        (
            "runtime_spec",
            lambda s: s["runtime_spec"].update(service_account="x@p.iam.gserviceaccount.com"),
            "runtime_spec.service_account",
        ),
        (
            "orchestrator_spec",
            lambda s: s["orchestrator_spec"]["slurm_spec"].update(
                home_directory_storage="projects/p/locations/z/instances/h2"
            ),
            "orchestrator_spec.slurm_spec.home_directory_storage",
        ),
    ],
)
def test_fields_outside_the_list_replace_and_are_refused_under_prevent(field, change, reason):
    new = copy.deepcopy(BASE)
    change(new)
    plan = plan_update(normalize(BASE), normalize(new))
    assert (plan.replaces, plan.replace_reasons, plan.mask) == ([field], [reason], [])
    prov = ModelDevelopmentClusterProvider()
    with pytest.raises(ModelDevelopmentClusterError) as e:
        prov.diff("id", {**BASE, "deletion_policy": "PREVENT"}, {**new, "deletion_policy": "PREVENT"})
    assert str(e.value) == (
        f"cluster projects/p/locations/us-central1/modelDevelopmentClusters/mdc1 would be replaced ({reason} "
        "cannot change in place) but its deletion policy is PREVENT; revert the change, or set deletionPolicy "
        "to DELETE and run the update again to allow the replacement"
    )


def test_mask_body_refuses_a_path_outside_the_list():
    with pytest.raises(ValueError, match="update mask names fields the API cannot update: network"):
        mask_body(normalize(BASE), ["labels", "network"])


def test_the_fake_refuses_what_the_api_refuses(api):
    """The loopback fake enforces the same list: a network mask is INVALID_ARGUMENT."""
    import requests

    name = "projects/p/locations/us-central1/modelDevelopmentClusters/mdc1"
    api.put_cluster(name, {"displayName": "x"})
    r = requests.patch(
        f"{api.endpoint}/v1beta1/{name}",
        params={"updateMask": "network"},
        json={"network": {"network": "projects/p/global/networks/other"}},
        timeout=10,
    )
    assert (r.status_code, r.json()["error"]["message"]) == (
        400,
        "update_mask path 'network' is not updatable",
    )
