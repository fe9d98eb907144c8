"""A research saved under this process's lease, before its run is scheduled, is this process's.

Saving a new (or resumed) research is awaited off the event loop, so other calls run between
the save and the run's start: a status, a takeover scan. They must see the research as running
here, not as a dead owner's: a status would record it ``interrupted`` and a scan would take it
over from its own process and run it twice.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from foundry_mcp.config import load_settings
from foundry_mcp.research.models import ResearchState, Status
from foundry_mcp.research.service.takeover import Takeover
from foundry_mcp.research.store.protocol import Store
from foundry_mcp.runtime import research_runtime
from tests.support import TERMINAL, wait_until

pytestmark = pytest.mark.anyio


async def test_a_research_being_started_is_neither_interrupted_nor_taken_over(
    research_env: dict[str, str], tmp_path: Path
) -> None:
    settings = load_settings(env=research_env, cwd=tmp_path, home=Path(research_env["HOME"]))
    async with research_runtime(settings, warm=False, serving=False) as service:
        seen: dict[str, Any] = {}
        write = service.io.write

        async def look_in_the_window(call: Callable[[Store], Any], first: bool = False) -> Any:
            result = await write(call, first=first)
            stored = await service.io.read(lambda store: store.active_ids())
            if stored and not seen:  # just after the start's save, before its run starts
                seen["taken"] = await Takeover(service).scan()
                seen["status"] = (await service.status(stored[0]))["status"]
            return result

        service.io.write = look_in_the_window  # type: ignore[method-assign]
        started = await service.start("What is a rope data type?", max_iterations=1)
        service.io.write = write  # type: ignore[method-assign]
        final = await wait_until(service, started["research_id"], TERMINAL)

    assert seen == {"taken": [], "status": "queued"}
    assert final["status"] == "completed", final["error"]


async def test_a_cancel_during_the_runs_first_save_is_recorded_as_cancelled(
    research_env: dict[str, str], tmp_path: Path
) -> None:
    settings = load_settings(env=research_env, cwd=tmp_path, home=Path(research_env["HOME"]))
    async with research_runtime(settings, warm=False, serving=False) as service:
        runner = service.runner
        save = runner._save
        entered, go_on = anyio.Event(), anyio.Event()

        async def slow_first_save(state: ResearchState, **options: bool) -> None:
            if state.status is Status.RUNNING and not entered.is_set():
                entered.set()
                await go_on.wait()  # the save of "running" takes a while (a busy store)
            await save(state, **options)

        runner._save = slow_first_save  # type: ignore[method-assign]
        started = await service.start("What is a rope data type?", max_iterations=1)
        research_id = started["research_id"]
        with anyio.fail_after(10):
            await entered.wait()
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(service.cancel, research_id)
                await anyio.sleep(0.2)  # the cancel reaches the run during its save
                go_on.set()
        final = await wait_until(service, research_id, TERMINAL)

    assert final["status"] == "cancelled", final
