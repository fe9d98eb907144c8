"""``Store.takeover_candidates``: the research a worker's takeover scan has to look at, read with
their ownership and without their states, on SQLite and on a real PostgreSQL server; and the
owner's node, which tells where an owner's pid can be checked (issue 31, item 5).
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from foundry_mcp.config.research_settings import ResearchSettings
from foundry_mcp.research.models import Status
from foundry_mcp.research.store.opening import open_store
from foundry_mcp.research.store.owners import Owner, Ownership, split_host, this_node
from foundry_mcp.research.store.protocol import Store
from tests.support import exited_pid, stored_state

HOUR = 3600.0


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    url = request.getfixturevalue("postgres_url") if request.param == "postgresql" else None
    opened = open_store(ResearchSettings(research_dir=tmp_path / "research", store_url=url))
    yield opened
    opened.close()


def _ids(found: list[tuple[str, Ownership]]) -> set[str]:
    return {research_id for research_id, _ in found}


def test_only_research_that_may_need_a_new_worker_is_read(store: Store) -> None:
    me = Owner()
    elsewhere = Owner(host="worker-b", node="0123456789abcdef")
    live = stored_state(1, status=Status.RUNNING)
    store.create(live, elsewhere, lease_seconds=60)  # another machine's, lease running
    expired = stored_state(2, status=Status.RUNNING)
    store.create(expired, elsewhere, lease_seconds=-1)  # its worker stopped renewing
    released = stored_state(3, status=Status.QUEUED)
    store.create(released, elsewhere, lease_seconds=60)
    store.release(released.id, elsewhere)  # active, nobody holds it
    stopped = stored_state(4, status=Status.INTERRUPTED)
    store.create(stopped, elsewhere, lease_seconds=60)
    store.release(stopped.id, elsewhere)  # a clean stop: interrupted, lease released
    done = stored_state(5, status=Status.COMPLETED)
    store.create(done, elsewhere, lease_seconds=-1)
    cancelling = stored_state(6, status=Status.RUNNING)
    store.create(cancelling, elsewhere, lease_seconds=-1)
    store.request_cancel(cancelling.id)  # stopping: left to the reads
    mine = stored_state(7, status=Status.RUNNING)
    store.create(mine, me, lease_seconds=60)  # this node's: its pid tells whether it lives

    found = store.takeover_candidates(me, HOUR, 50)
    assert _ids(found) == {expired.id, released.id, stopped.id, mine.id}
    ownership = dict(found)
    assert ownership[expired.id].token == elsewhere.token
    assert ownership[expired.id].host == "worker-b"
    assert ownership[expired.id].node == "0123456789abcdef"
    assert ownership[released.id].token is None
    assert ownership[mine.id].is_alive(me, running_here=True)
    assert not ownership[expired.id].is_alive(me, running_here=False)

    # An interrupted research outside the window is a person's to resume.
    assert _ids(store.takeover_candidates(me, 0.0, 50)) == {expired.id, released.id, mine.id}
    # The limit holds, most recently updated first.
    assert len(store.takeover_candidates(me, HOUR, 2)) == 2


def test_a_dead_owner_on_this_node_is_seen_before_its_lease_runs_out(store: Store) -> None:
    me = Owner()
    ghost = Owner(pid=exited_pid())  # this node, a process that has exited
    state = stored_state(1, status=Status.RUNNING)
    store.create(state, ghost, lease_seconds=60)
    found = dict(store.takeover_candidates(me, HOUR, 50))
    assert state.id in found and found[state.id].node == me.node
    assert not found[state.id].is_alive(me, running_here=False)


def test_a_host_name_alone_never_declares_an_owner_dead(store: Store) -> None:
    """Two containers with one host name, each with its own pids: the other's pid is not ours
    to check, so its lease decides."""
    me = Owner()
    twin = Owner(host=me.host, pid=exited_pid(), node="fedcba9876543210")
    state = stored_state(1, status=Status.RUNNING)
    store.create(state, twin, lease_seconds=60)
    ownership = store.ownership(state.id)
    assert ownership is not None and ownership.host == me.host
    assert ownership.is_alive(me, running_here=False)  # its pid is gone here, not there
    assert state.id not in _ids(store.takeover_candidates(me, HOUR, 50))


def test_a_lease_written_before_nodes_is_decided_by_the_lease(store: Store) -> None:
    me = Owner()
    old = Owner(pid=exited_pid(), node=None)  # as a row of an older foundry-mcp
    state = stored_state(1, status=Status.RUNNING)
    store.create(state, old, lease_seconds=60)
    ownership = store.ownership(state.id)
    assert ownership is not None and ownership.node is None and ownership.host == me.host
    assert ownership.is_alive(me, running_here=False)
    store.create(stored_state(2, status=Status.RUNNING), old, lease_seconds=-1)
    time.sleep(0.01)
    assert len(store.takeover_candidates(me, HOUR, 50)) == 1


def test_the_node_names_this_boot_and_pid_namespace() -> None:
    node = this_node()
    assert node == this_node() and len(node) == 16
    assert Owner().node == node
    assert split_host(Owner(host="h", node="n").stored_host) == ("h", "n")
    assert split_host("old-host") == ("old-host", None)
    assert split_host(None) == (None, None)
    if Path("/proc/self/ns/pid").exists():
        # Another pid namespace (a container on this machine) is another node.
        unshared = subprocess.run(
            [
                "unshare",
                "--pid",
                "--fork",
                "--mount-proc",
                sys.executable,
                "-c",
                "from foundry_mcp.research.store.owners import this_node; print(this_node())",
            ],
            capture_output=True,
            text=True,
        )
        if unshared.returncode == 0:
            assert unshared.stdout.strip() not in ("", node)
