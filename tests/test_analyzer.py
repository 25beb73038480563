"""The analyzer driver: the policy pack subprocess is always stopped, and Configure is built like the CLI's."""

from __future__ import annotations

import os

import pytest
from pulumi.runtime.proto import analyzer_pb2

from mldiag.engine.analyzer import PolicyConfigError, PolicyPackProcess, build_configure_request
from mldiag.engine.runtime import RecordedResource


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie still answers kill(0); read its state
    with open(f"/proc/{pid}/stat") as f:
        return f.read().split()[2] != "Z"


def test_pack_serves_and_is_stopped_after_use():
    with PolicyPackProcess() as pack:
        pid = pack.proc.pid
        info = pack.info()
        assert info.name == "ml-diagnostics"
        assert "k8s-images-pinned" in {p.name for p in info.policies}
    assert pack.proc is None
    assert not _alive(pid)


def test_pack_is_stopped_when_the_caller_fails():
    pid = None
    with pytest.raises(RuntimeError, match="boom"), PolicyPackProcess() as pack:
        pid = pack.proc.pid
        raise RuntimeError("boom")
    assert pid is not None and not _alive(pid)


@pytest.mark.parametrize(
    ("program", "start_timeout", "error"),
    [
        pytest.param(
            "import sys\nprint('no port here', file=sys.stderr)\nsys.exit(3)\n",
            20,
            "exited before printing its port:\nno port here",
            id="dies-before-printing-a-port",
        ),
        pytest.param(
            "import time\ntime.sleep(60)\n",
            1,
            "did not print its port within 1s",
            id="hangs-past-the-timeout",
        ),
    ],
)
def test_pack_that_fails_to_start_is_reported_and_gone(tmp_path, program, start_timeout, error):
    (tmp_path / "__main__.py").write_text(program)
    pack = PolicyPackProcess(policy_dir=tmp_path, start_timeout=start_timeout)
    with pytest.raises(RuntimeError, match=error):
        pack.start()
    assert pack.proc is None


def _info() -> analyzer_pb2.AnalyzerInfo:
    info = analyzer_pb2.AnalyzerInfo(name="p")
    pol = info.policies.add(name="a", enforcementLevel=analyzer_pb2.ADVISORY)
    pol.configSchema.properties.update(
        {"cap": {"type": "integer", "default": 256}, "mode": {"enum": ["x", "y"]}}
    )
    info.policies.add(name="b", enforcementLevel=analyzer_pb2.MANDATORY)
    return info


def test_configure_merges_all_level_policy_levels_and_schema_defaults():
    req, levels = build_configure_request(
        _info(), {"all": "advisory", "a": {"enforcementLevel": "mandatory"}}
    )
    assert levels == {"a": "mandatory", "b": "advisory"}
    assert dict(req.policyConfig["a"].properties) == {"cap": 256}
    assert req.policyConfig["a"].enforcementLevel == analyzer_pb2.MANDATORY
    req, levels = build_configure_request(_info(), {})
    assert levels == {"a": "advisory", "b": "mandatory"}


def test_configure_validates_nested_options_with_the_policy_schema():
    info = analyzer_pb2.AnalyzerInfo(name="p")
    pol = info.policies.add(name="a", enforcementLevel=analyzer_pb2.ADVISORY)
    pol.configSchema.properties.update(
        {"kinds": {"type": "array", "items": {"enum": ["DELETE", "PREVENT"]}, "default": ["PREVENT"]}}
    )
    pol.configSchema.required.append("kinds")
    req, _ = build_configure_request(info, {"a": {"kinds": ["DELETE"]}})
    assert list(req.policyConfig["a"].properties["kinds"]) == ["DELETE"]
    with pytest.raises(PolicyConfigError) as e:
        build_configure_request(info, {"a": {"kinds": ["DELETE", "NEVER"]}})
    assert (
        str(e.value)
        == "invalid policy pack config:\n  - a.kinds.1: 'NEVER' is not one of ['DELETE', 'PREVENT']"
    )


def test_configure_rejects_bad_levels_types_and_unknown_names():
    with pytest.raises(PolicyConfigError, match="unknown policies: c; known: a, b"):
        build_configure_request(_info(), {"c": "advisory"})
    with pytest.raises(PolicyConfigError) as e:
        build_configure_request(_info(), {"a": {"cap": "big", "mode": "z", "extra": 1}, "b": "fatal"})
    text = str(e.value)
    assert "a.cap: 'big' is not of type 'integer'" in text
    assert "a.mode: 'z' is not one of ['x', 'y']" in text
    assert "a.extra: unknown property; allowed: cap, mode" in text
    assert "b: enforcement level 'fatal' must be one of advisory, mandatory, remediate, disabled" in text


def _daemon_set(i: int, image: str) -> RecordedResource:
    inputs = {
        "metadata": {"name": f"agent-{i}", "namespace": "ops"},
        "spec": {
            "template": {"spec": {"containers": [{"name": "a", "image": image}], "hostPID": i % 2 == 0}}
        },
    }
    urn = f"urn:pulumi:dev::ml-diagnostics::kubernetes:apps/v1:DaemonSet::agent-{i}"
    return RecordedResource(
        urn, "kubernetes:apps/v1:DaemonSet", f"agent-{i}", True, None, None, [], {}, inputs, inputs
    )


def test_requests_sent_ahead_are_answered_as_one_at_a_time_in_order(monkeypatch):
    """Analyze requests sent IN_FLIGHT ahead: the same violations, each with its resource, in the same order."""
    from mldiag.engine import analyzer

    resources = [
        _daemon_set(i, "busybox:latest" if i % 3 else "busybox@sha256:" + "0" * 64) for i in range(50)
    ]
    with PolicyPackProcess() as pack:
        pack.configure(pack.info(), {})
        ahead = pack.analyze(resources)
        monkeypatch.setattr(analyzer, "IN_FLIGHT", 1)
        one_by_one = pack.analyze(resources)
    assert ahead == one_by_one
    pinned = [v.urn for v in ahead if v.policy == "k8s-images-pinned"]
    assert pinned == [r.urn for i, r in enumerate(resources) if i % 3]
    assert len(ahead) > 2 * analyzer.IN_FLIGHT


def test_a_pack_that_fails_mid_analysis_is_reported_and_nothing_is_left_running(monkeypatch):
    import grpc

    with PolicyPackProcess() as pack:
        pack.configure(pack.info(), {})
        pack.proc.kill()
        pack.proc.wait()
        with pytest.raises(grpc.RpcError):
            pack.analyze([_daemon_set(i, "busybox:latest") for i in range(40)])
