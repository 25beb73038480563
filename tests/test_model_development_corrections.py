"""Model Development Cluster updates that follow Google's API definition (magic-modules) where seed 004's mask
list is silent: a display-name change is an in-place PATCH (an API that refuses it changes nothing), the
Managed Lustre export config is settable and updatable, and an API that refuses `updateMode` leaves no
half-applied update."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from ml_diagnostics.providers.model_development_cluster import ModelDevelopmentClusterError
from program.config import ConfigError, parse

NAME = "projects/p/locations/us-central1/modelDevelopmentClusters/mdc1"
LUSTRE = "projects/p/locations/us-central1-a/instances/scratch"


def created(provider, api, spec) -> dict[str, Any]:
    outs = provider.create(copy.deepcopy(spec)).outs
    api.requests.clear()
    return outs


def patches(api) -> list[Any]:
    return [r for r in api.api_requests() if r.method == "PATCH"]


def test_a_display_name_change_is_an_in_place_update(provider, api, spec):
    outs = created(provider, api, spec)
    new = {**copy.deepcopy(spec), "display_name": "renamed"}
    d = provider.diff(NAME, outs, new)
    assert (d.changes, d.replaces, d.delete_before_replace) == (True, [], False)
    provider.update(NAME, outs, new)
    (patch,) = patches(api)
    assert patch.query["updateMask"] == "displayName" or patch.query["updateMask"] == "display_name"
    assert patch.body == {"displayName": "renamed"}
    assert api.clusters[NAME]["displayName"] == "renamed"
    assert not [r for r in api.api_requests() if r.method in ("DELETE", "POST")]


def test_an_api_refusing_the_display_name_mask_changes_nothing(provider, api, spec):
    outs = created(provider, api, spec)
    api.refuse_mask = {"displayName", "display_name"}
    before = copy.deepcopy(api.clusters[NAME])
    new = {**copy.deepcopy(spec), "display_name": "renamed", "labels": {"team": "x"}}
    with pytest.raises(ModelDevelopmentClusterError) as e:
        provider.update(NAME, outs, new)
    assert "cannot be updated" in str(e.value) and "display_name" in str(e.value)
    assert len(patches(api)) == 1  # one PATCH with both fields: the refusal applied neither
    assert api.clusters[NAME] == before


def test_an_api_refusing_update_mode_leaves_no_half_applied_update(provider, api, spec):
    outs = created(provider, api, spec)
    api.reject_update_mode = True
    before = copy.deepcopy(api.clusters[NAME])
    new = copy.deepcopy(spec)
    new["labels"] = {"team": "x"}
    new["node_pools"][0]["scaling_spec"]["max_node_count"] = 4
    with pytest.raises(ModelDevelopmentClusterError) as e:
        provider.update(NAME, outs, new)
    assert 'Unknown name "updateMode"' in str(e.value)
    (patch,) = patches(api)  # every masked field in one PATCH, not retried without updateMode
    assert set(patch.query["updateMask"].split(",")) == {"labels", "node_pools"}
    assert patch.query["updateMode"] == "USER_AND_SERVICE"
    assert api.clusters[NAME] == before


def test_the_lustre_export_config_is_created_and_updated_through_its_mask(provider, api, spec):
    spec = copy.deepcopy(spec)
    spec["node_pools"][0]["lustres"] = [LUSTRE]
    spec["lustre_export_config"] = {
        "destination_bucket": "ml-backups",
        "days_of_week": ["MONDAY", "THURSDAY"],
        "lustres": [LUSTRE],
        "start_time": {"hours": 2, "minutes": 30},
    }
    outs = created(provider, api, spec)
    assert api.clusters[NAME]["lustreExportConfig"] == {
        "destinationBucket": "ml-backups",
        "daysOfWeek": ["MONDAY", "THURSDAY"],
        "lustres": [LUSTRE],
        "startTime": {"hours": 2, "minutes": 30},
    }
    new = copy.deepcopy(spec)
    new["lustre_export_config"]["days_of_week"] = ["SUNDAY"]
    d = provider.diff(NAME, outs, new)
    assert (d.changes, d.replaces) == (True, [])
    provider.update(NAME, outs, new)
    (patch,) = patches(api)
    assert patch.query["updateMask"] in ("lustreExportConfig", "lustre_export_config")
    assert patch.body["lustreExportConfig"]["daysOfWeek"] == ["SUNDAY"]
    assert api.clusters[NAME]["lustreExportConfig"]["daysOfWeek"] == ["SUNDAY"]


def _target(**lustre: Any) -> dict[str, Any]:
    pool = {
        "id": "cpu",
        "machineSpec": {"machineType": "n2-standard-8"},
        "scalingSpec": {"minNodeCount": 0, "maxNodeCount": 2},
        "zone": "us-central1-a",
        "lustres": [LUSTRE],
    }
    login = {**pool, "id": "login", "lustres": []}
    return {
        "name": "cpu",
        "project": "mldiag-dev",
        "region": "us-central1",
        "modelDevelopmentClusterId": "devcpu",
        "network": {"network": "projects/mldiag-dev/global/networks/n"},
        "nodePools": [pool, login],
        "orchestratorSpec": {
            "slurmSpec": {
                "homeDirectoryStorage": "projects/mldiag-dev/locations/us-central1-a/instances/home",
                "partitions": [{"id": "cpu", "nodePoolIds": ["cpu"]}],
                "loginNodePoolId": "login",
            }
        },
        "lustreExportConfig": lustre,
    }


def test_the_lustre_export_config_is_validated_with_its_key_paths():
    key = "ml-diagnostics:modelDevelopmentClusters"
    other = "projects/mldiag-dev/locations/us-central1-a/instances/other"
    with pytest.raises(ConfigError) as e:
        parse(
            {
                "ml-diagnostics:environment": "dev",
                key: [_target(destinationBucket="b1", startTime={"hours": 24})],
            }
        )
    assert e.value.problems == [f"{key}[0].lustreExportConfig.startTime.hours: must be at most 23"]
    bad = _target(destinationBucket="gs://ml-backups", daysOfWeek=["MONDAY", "MONDAY"], lustres=[other])
    with pytest.raises(ConfigError) as e:
        parse({"ml-diagnostics:environment": "dev", key: [bad]})
    assert sorted(e.value.problems) == sorted(
        [
            f"{key}[0].lustreExportConfig.daysOfWeek: MONDAY is given more than once",
            f"{key}[0].lustreExportConfig.destinationBucket: the bucket's name, without gs://",
            f"{key}[0].lustreExportConfig.lustres[0]: '{other}' is attached to no node pool (nodePools[].lustres)",
        ]
    )
    with pytest.raises(ConfigError) as e:
        parse({"ml-diagnostics:environment": "dev", key: [_target(daysOfWeek=["MONDAY"])]})
    assert e.value.problems == [f"{key}[0].lustreExportConfig.destinationBucket: required key is missing"]
    ok = parse(
        {
            "ml-diagnostics:environment": "dev",
            key: [_target(destinationBucket="ml-backups", lustres=[LUSTRE])],
        }
    )
    assert ok.model_development_clusters[0].spec()["lustre_export_config"] == {
        "destination_bucket": "ml-backups",
        "lustres": [LUSTRE],
    }
