"""The loopback control plane itself (dev/e2e/control_plane.py): a port picked free and taken before its
process binds it (by another worker's plane, or an outgoing connection's ephemeral port) costs a new start on
new ports, not the tier."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from dev.e2e import control_plane
from dev.e2e.control_plane import ControlPlane
from tests.fixtures.e2e import E2E_ENABLED, SKIP_REASON

pytestmark = pytest.mark.skipif(not E2E_ENABLED, reason=SKIP_REASON)


def test_a_port_taken_before_etcd_binds_it_is_a_new_start_on_new_ports(
    e2e_bin: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    picks: list[list[int]] = []
    pick = control_plane.free_ports
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()

        def first_pick_taken(n: int) -> list[int]:
            ports = pick(n)
            if not picks:
                ports[0] = taken.getsockname()[1]  # etcd's client port
            picks.append(ports)
            return ports

        monkeypatch.setattr(control_plane, "free_ports", first_pick_taken)
        with ControlPlane(e2e_bin) as cp:
            assert cp.starts == 2
            assert cp.server == f"https://127.0.0.1:{picks[1][2]}"
            assert cp.api("GET", "/readyz").ok


def test_a_port_taken_at_every_start_is_the_error_with_what_the_process_said(
    e2e_bin: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pick = control_plane.free_ports
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        monkeypatch.setattr(control_plane, "free_ports", lambda n: [port, *pick(n)[1:]])
        plane = ControlPlane(e2e_bin)
        with pytest.raises(
            control_plane.PortTaken,
            match=rf"^etcd exited with 1: .*127\.0\.0\.1:{port}.*address already in use",
        ):
            plane.__enter__()
        assert plane.starts == control_plane.STARTS
        assert not plane.procs and not plane.dir.exists()
