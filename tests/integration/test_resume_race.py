"""Two workers resuming one research at once start one run (issue 38), on both stores.

Both workers read the research stopped, so both go on to claim it. The interleaving is made
certain rather than left to chance: the second worker's claim waits on its writer thread (a
write ahead of it holds the thread) until the first worker has resumed the research. Its claim
then finds a lease that runs, the first worker's, and it answers that another process resumed
the research, instead of taking the lease and starting a second run (which fencing would stop
only at the first run's next save). If the first worker's run has already ended when the
second worker's claim comes, the research was saved since the second read it: it is not run
again from that stale reading either.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from foundry_mcp.config import Settings, load_settings
from foundry_mcp.errors import InvalidStateError
from foundry_mcp.research.models import ResearchState, Status
from foundry_mcp.research.service.research_service import ResearchService
from foundry_mcp.runtime import research_runtime
from tests.support import TERMINAL, wait_until

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["sqlite", "postgresql"])
def team_settings(
    request: pytest.FixtureRequest, research_env: dict[str, str], tmp_path: Path
) -> Iterator[Settings]:
    """Settings of workers sharing one store (takeover off: the resumes alone compete)."""
    env = dict(research_env)
    if request.param == "postgresql":
        env["FOUNDRY_MCP_STORE_URL"] = request.getfixturevalue("postgres_url")
    settings = load_settings(env=env, cwd=tmp_path, home=Path(env["HOME"]))
    settings.research.take_over_orphans = False
    yield settings


@asynccontextmanager
async def _two_workers(
    settings: Settings,
) -> AsyncIterator[tuple[ResearchService, ResearchService]]:
    async with (
        research_runtime(settings, warm=False) as first,
        research_runtime(settings, warm=False) as second,
    ):
        yield first, second


def _stopped(service: ResearchService) -> ResearchState:
    """A research interrupted by its server's stop, held by nobody: ready to resume."""
    provider, model = service.providers.resolve_llm(None, None)
    search, _ = service.providers.search_providers()
    state = ResearchState(
        query="How do B-trees stay balanced?",
        llm_provider=provider,
        llm_model=model,
        search_providers=search,
        status=Status.INTERRUPTED,
    )
    service.store.save(state)
    return state


class _HeldResume:
    """A resume on ``worker`` that reads the research, then claims it only once let go."""

    def __init__(self, worker: ResearchService, research_id: str) -> None:
        self.worker = worker
        self.research_id = research_id
        self.read = anyio.Event()
        self.released = threading.Event()
        self.answer: dict[str, Any] | InvalidStateError | None = None

    async def run(self) -> None:
        watch = self.worker.watch
        load_checked = watch.load_checked

        async def read_then_say_so(*args: Any, **kwargs: Any) -> ResearchState:
            state = await load_checked(*args, **kwargs)
            self.read.set()
            return state

        watch.load_checked = read_then_say_so  # type: ignore[method-assign]
        # Its writer thread is held: the claim, its next write, waits behind.
        self.worker.io.write_soon(lambda _: self.released.wait(60), "hold the claim")
        try:
            self.answer = await self.worker.resume(self.research_id)
        except InvalidStateError as exc:
            self.answer = exc


async def _race(
    first: ResearchService, second: ResearchService, *, let_first_finish: bool
) -> tuple[str, Any]:
    """Both workers resume one stopped research: the second reads it, the first resumes it
    (and, with ``let_first_finish``, runs it to its end), then the second claims it. The
    research's id, and the second worker's answer."""
    research_id = _stopped(first).id
    held = _HeldResume(second, research_id)
    async with anyio.create_task_group() as tg:
        tg.start_soon(held.run)
        await held.read.wait()  # the second worker read it stopped, and goes on to claim it
        resumed = await first.resume(research_id)
        assert resumed["resumed_from"] == "interrupted"
        if let_first_finish:
            final = await wait_until(first, research_id, TERMINAL)
            assert final["status"] == "completed", final
        held.released.set()
    return research_id, held.answer


async def test_two_workers_resuming_at_once_start_one_run(team_settings: Settings) -> None:
    async with _two_workers(team_settings) as (first, second):
        research_id, answer = await _race(first, second, let_first_finish=False)
        assert isinstance(answer, InvalidStateError), answer
        assert "resumed by another process" in answer.message
        assert not second.jobs.is_running(research_id)
        final = await wait_until(first, research_id, TERMINAL)
        assert final["status"] == "completed", final
        kinds = [e["kind"] for e in (await first.events(research_id, limit=500))["events"]]
    assert kinds.count("resumed") == 1 and kinds.count("run_started") == 1, kinds


async def test_a_resume_that_read_before_another_run_ended_does_not_run_it_again(
    team_settings: Settings,
) -> None:
    async with _two_workers(team_settings) as (first, second):
        research_id, answer = await _race(first, second, let_first_finish=True)
        assert isinstance(answer, InvalidStateError), answer
        stored = first.store.load(research_id)
        assert stored.status is Status.COMPLETED and stored.report  # not the stale reading
        # The run releases its lease just after its last save: wait for that write.
        with anyio.fail_after(10):
            while first.store.ownership(research_id).token is not None:  # type: ignore[union-attr]
                await anyio.sleep(0.02)
        kinds = [e["kind"] for e in (await first.events(research_id, limit=500))["events"]]
    assert kinds.count("resumed") == 1 and kinds.count("run_started") == 1, kinds
