"""AsyncStore renews leases on a thread of its own: never queued behind the writes (issue 38)."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any, cast

import anyio
import pytest

from foundry_mcp.research.store.access.aio import AsyncStore
from foundry_mcp.research.store.owners import Owner
from foundry_mcp.research.store.protocol import Store

pytestmark = pytest.mark.anyio


class LeaseRecorder:
    """A stand-in store whose writes can be held, and which notes where renewals ran."""

    def __init__(self) -> None:
        self.renewals: list[tuple[list[str], str]] = []
        self.release = threading.Event()

    def renew(self, owner: Owner, research_ids: Iterable[str], lease_seconds: float) -> set[str]:
        self.renewals.append((list(research_ids), threading.current_thread().name))
        return {"deepres-000000000001"}

    def close(self) -> None:
        self.release.set()


async def test_a_renewal_is_made_while_the_writer_thread_is_held() -> None:
    recorder = LeaseRecorder()
    io = AsyncStore(cast(Store, recorder))

    def held(_: Any) -> None:
        recorder.release.wait(10)  # a write waiting for the store

    io.write_soon(held, "wait for the store")
    with anyio.fail_after(1):
        asked = await io.renew(Owner(), iter(["deepres-000000000001"]), 20)
    assert asked == {"deepres-000000000001"}
    assert recorder.renewals == [(["deepres-000000000001"], "store-lease_0")]
    recorder.release.set()
    io.close()
