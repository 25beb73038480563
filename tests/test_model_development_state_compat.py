"""State written before the provider split still loads: the pickled providers in tests/data/google were
produced by the code of commit eb4c009 (`serialize_provider` of the objects the resources build), together
with the inputs/outputs that code stored. Each is unpickled in a fresh interpreter, as the engine's dynamic
provider host does (`dill.loads(base64.b64decode(props["__provider"]))`), and then used.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "google"


def state(name: str) -> dict[str, Any]:
    return json.loads((DATA / f"{name}_state_eb4c009.json").read_text())


def run_in_fresh_interpreter(script: str, *args: Any) -> Any:
    out = subprocess.run(
        [sys.executable, "-c", script, *(json.dumps(a) for a in args)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
        cwd=str(ROOT),
    )
    return json.loads(out.stdout)


def test_model_development_cluster_state_unpickles_and_diffs():
    s = state("model_development_cluster")
    news = {k: v for k, v in s["inputs"].items() if k != "__provider"}
    changed = {**news, "labels": {"team": "research"}}
    renamed = {**news, "display_name": "other"}
    script = """
import base64, json, sys, dill
olds, news, changed, renamed = (json.loads(a) for a in sys.argv[1:])
p = dill.loads(base64.b64decode(olds["__provider"]))
same = p.diff("id", olds, news)
upd = p.diff("id", olds, changed)
rep = p.diff("id", olds, renamed)
print(json.dumps({
    "type": [type(p).__module__, type(p).__name__],
    "check": [f.reason for f in p.check(olds, news).failures],
    "same": [same.changes, same.replaces],
    "update": [upd.changes, upd.replaces],
    "replace": [rep.changes, rep.replaces, rep.delete_before_replace],
}))
"""
    got = run_in_fresh_interpreter(script, s["outputs"], news, changed, renamed)
    assert got == {
        "type": ["ml_diagnostics.providers.model_development_cluster", "ModelDevelopmentClusterProvider"],
        "check": [],
        "same": [False, []],
        "update": [True, []],
        "replace": [True, [], False],  # a display name is updated in place now
    }


def test_gke_managed_diagnostics_state_unpickles_and_diffs():
    s = state("gke_managed_diagnostics")
    news = {k: v for k, v in s["inputs"].items() if k != "__provider"}
    script = """
import base64, json, sys, dill
olds, news = (json.loads(a) for a in sys.argv[1:])
p = dill.loads(base64.b64decode(olds["__provider"]))
same = p.diff("id", olds, news)
off = p.diff("id", olds, {**news, "enabled": False})
print(json.dumps({
    "type": [type(p).__module__, type(p).__name__],
    "same": [same.changes, same.replaces],
    "off": [off.changes, off.replaces],
}))
"""
    got = run_in_fresh_interpreter(script, s["outputs"], news)
    assert got == {
        "type": ["ml_diagnostics.providers.gke_managed_diagnostics", "ManagedMlDiagnosticsProvider"],
        "same": [False, []],
        "off": [True, []],
    }


def test_old_state_provider_refreshes_and_updates_against_the_fake(api):
    """The unpickled provider talks to the (emulated) API: refresh finds no drift, a label change PATCHes."""
    s = state("model_development_cluster")
    api.operation_seconds, api.finish_at_once = 0, True  # the wall clock: no first poll to wait for
    api.put_cluster(s["id"], s["cluster"])
    olds = {**s["outputs"], "api_endpoint": api.endpoint, "emulator": True}  # googleApi emulator mode
    news = {
        k: v
        for k, v in olds.items()
        if k not in ("__provider", "name", "state", "create_time", "update_time")
    }
    script = """
import base64, json, sys, dill
olds, news = (json.loads(a) for a in sys.argv[1:])
p = dill.loads(base64.b64decode(olds["__provider"]))
read = p.read(olds["name"], olds)
diff = p.diff(read.id, read.outs, news)
news["labels"] = {"team": "research"}
upd = p.update(read.id, read.outs, news)
print(json.dumps({"diff": [diff.changes, diff.replaces], "labels": upd.outs["labels"], "state": upd.outs["state"]}))
"""
    got = run_in_fresh_interpreter(script, olds, news)
    assert got == {"diff": [False, []], "labels": {"team": "research"}, "state": "RUNNING"}
    (patch,) = [r for r in api.api_requests() if r.method == "PATCH"]
    assert patch.query == {"updateMask": "labels", "updateMode": "USER_AND_SERVICE"}
    assert api.clusters[s["id"]]["labels"] == {"team": "research"}
