"""Structured fan-out for the workflow: a run's concurrent children end with it.

Every specialist that works on several items at once (sub-queries, analysis batches, claims to
check, pages to read) runs them in one anyio task group. When one child raises, the others are
cancelled before the error reaches the caller, and when the caller is cancelled (the run was
cancelled or timed out), so are they: no provider request starts after the run has ended.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine, Iterable
from typing import Any, TypeVar

import anyio

from foundry_mcp.providers.llm.departures import Departure, departure_of
from foundry_mcp.research.llm import trace
from foundry_mcp.research.llm.trace import Step

T = TypeVar("T")


async def fan_out(
    work: Callable[[T], Coroutine[Any, Any, None]], items: Iterable[T], *, in_turn: bool = False
) -> None:
    """Run ``work(item)`` for every item concurrently; return when all are done.

    ``in_turn``, for items that each ask a model: an item's request leaves before the next
    item starts building its own (see :mod:`foundry_mcp.providers.llm.departures`); an item
    waiting on anything else does not hold the next back. Without it, every item starts at
    once (searches, a question's parts: what waits for the others to have begun).

    The first error of a child is raised as it is, not wrapped in an ``ExceptionGroup``, so
    callers keep catching ``ProviderError`` and friends.
    """
    error: BaseException | None = None
    ended: list[Step | None] = []

    async def child(item: T, departure: Departure | None) -> None:
        try:
            await work(item)
        finally:
            if departure is not None:
                departure.ended = True
        ended.append(trace.current())  # the last call of its flow, for the trace's join

    try:
        async with anyio.create_task_group() as group:
            for item in items:
                if not in_turn:
                    group.start_soon(child, item, None)
                    continue
                departure = Departure()
                with departure_of(departure):
                    group.start_soon(child, item, departure)
                await departure.settle()
    except BaseExceptionGroup as grouped:
        error = first_error(grouped)
        if error is None:
            raise
    if error is not None:
        raise error  # outside the handler: its own cause and traceback stay as they were
    trace.joined(ended)


async def together(*steps: Callable[[], Awaitable[object]]) -> None:
    """Run the ``steps`` side by side, as :func:`fan_out` runs its items; return when all are
    done."""
    await fan_out(_run_step, steps)


async def _run_step(step: Callable[[], Awaitable[object]]) -> None:
    await step()


def first_error(grouped: BaseExceptionGroup[BaseException]) -> BaseException | None:
    """The first exception in ``grouped`` (nested groups included) that is not a cancellation."""
    cancelled = anyio.get_cancelled_exc_class()
    for error in grouped.exceptions:
        if isinstance(error, BaseExceptionGroup):
            inner = first_error(error)
            if inner is not None:
                return inner
        elif not isinstance(error, cancelled):
            return error
    return None


async def as_itself(work: Awaitable[None]) -> None:
    """Await ``work``; an error that a task group below wrapped is raised as itself, so the
    caller's handlers judge it by what it is (a run's: not "an internal error" for a
    ``FoundryError``)."""
    try:
        await work
    except BaseExceptionGroup as grouped:
        error = first_error(grouped)
        if error is None:
            raise
        raise error from None
