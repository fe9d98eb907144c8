"""When a request is on its way: what lets a fan-out start its next call without delaying the
one before.

When a research starts several calls at once (the writers of a report, the checks of its
claims, the analyses of a round), each call first builds its prompt, then goes through its
SDK, which yields to the event loop several times before the request leaves. Started together,
the calls take turns at every yield: the first request leaves only once every prompt is built,
10 to 35 ms late, with nothing of the research in flight meanwhile. So a fan-out of model
calls (:func:`foundry_mcp.research.llm.fanout.fan_out` with ``in_turn``) starts each call with
a :class:`Departure` of its own and, when the call is being sent, waits for it to leave before
starting the next.

An adapter wraps its SDK call in :func:`departing` when its HTTP client reports the requests it
sends (:func:`report_requests`, an ``httpx`` event hook, called as a request leaves for the
connection pool). Anything else a call waits on (a lock, a thread, a search) does not hold its
siblings back.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Protocol, TypeVar

import anyio
import anyio.lowlevel

# How long a fan-out waits for a call being sent before it starts the next anyway: a safety
# net, since a request leaves within a millisecond or two of its SDK's work.
SEND_WAIT_SECONDS = 0.02
# The turns of the event loop a call is given to reach its SDK before the next call starts
# anyway: a research's calls reach it within twelve (their locks and checks yield on the way);
# one that has not by then waits on something else (a search, a reading, the store).
TURNS_TO_SEND = 16


class Departure:
    """Whether a call is being sent, whether its request has left, and whether it ended."""

    def __init__(self) -> None:
        self.sending = False
        self.left = anyio.Event()
        self.ended = False

    async def settle(self) -> None:
        """Return once the call has sent its request, ended, or shown it waits on something
        else: the call runs for up to :data:`TURNS_TO_SEND` turns of the event loop to reach
        its SDK (its prompt built, a lock or two taken), and then up to
        :data:`SEND_WAIT_SECONDS` for its request to leave."""
        for _ in range(TURNS_TO_SEND):
            await anyio.lowlevel.checkpoint()
            if self.sending or self.left.is_set() or self.ended:
                break
        if self.sending and not self.left.is_set():
            with anyio.move_on_after(SEND_WAIT_SECONDS):
                await self.left.wait()


class _HookedClient(Protocol):
    """An ``httpx`` async client, as far as its event hooks go."""

    @property
    def event_hooks(self) -> Any: ...

    @event_hooks.setter
    def event_hooks(self, hooks: Any) -> None: ...


_Client = TypeVar("_Client", bound=_HookedClient)

_current: ContextVar[Departure | None] = ContextVar("foundry_mcp_departure", default=None)


@contextmanager
def departure_of(departure: Departure) -> Iterator[None]:
    """Tasks started within the block report their requests to ``departure``."""
    token = _current.set(departure)
    try:
        yield
    finally:
        _current.reset(token)


@contextmanager
def departing() -> Iterator[None]:
    """Around an SDK call whose client reports its requests: the call is being sent until its
    request leaves (or the call ends without one)."""
    departure = _current.get()
    if departure is None or departure.left.is_set():
        yield
        return
    departure.sending = True
    try:
        yield
    finally:
        departure.sending = False
        departure.left.set()


def request_hooks() -> dict[str, list[Any]]:
    """The event hooks of :func:`report_requests`, for an ``httpx`` client an SDK builds itself
    from the arguments it is given."""
    return {"request": [_request_left], "response": []}


async def _request_left(request: Any) -> None:
    departure = _current.get()
    if departure is not None:
        departure.left.set()


def report_requests(client: _Client) -> _Client:
    """``client`` (an ``httpx`` async client) with a hook that tells the current departure its
    request has left; the client itself."""
    hooks = client.event_hooks
    if _request_left not in hooks["request"]:
        hooks["request"].append(_request_left)
        client.event_hooks = hooks
    return client
