"""The workflow's fan-out: children end with their parent, errors arrive unwrapped."""

from __future__ import annotations

import anyio
import anyio.lowlevel
import httpx2
import pytest

from foundry_mcp.errors import ProviderError
from foundry_mcp.providers.llm.departures import Departure, departing, departure_of, report_requests
from foundry_mcp.research.llm.fanout import as_itself, fan_out, together

pytestmark = pytest.mark.anyio


async def test_an_error_cancels_the_siblings_and_is_raised_as_it_is() -> None:
    finished: list[int] = []
    cancelled: list[int] = []

    async def work(n: int) -> None:
        try:
            await anyio.sleep(0.05 if n == 0 else 5)
        except anyio.get_cancelled_exc_class():
            cancelled.append(n)
            raise
        if n == 0:
            raise ProviderError("every provider failed", provider="p", kind="transient")
        finished.append(n)

    with anyio.fail_after(2), pytest.raises(ProviderError) as caught:
        await fan_out(work, range(4))
    assert caught.value.message == "every provider failed"  # not an ExceptionGroup
    assert sorted(cancelled) == [1, 2, 3] and finished == []


async def test_cancelling_the_caller_cancels_every_child() -> None:
    cancelled: list[int] = []

    async def work(n: int) -> None:
        try:
            await anyio.sleep(5)
        except anyio.get_cancelled_exc_class():
            cancelled.append(n)
            raise

    with anyio.move_on_after(0.05) as scope:
        await fan_out(work, range(3))
    assert scope.cancelled_caught and sorted(cancelled) == [0, 1, 2]


async def test_every_child_runs_to_the_end_beside_the_others() -> None:
    done: list[int] = []
    finished = [anyio.Event() for _ in range(3)]

    async def work(n: int) -> None:
        if n < 2:  # ends only after the next child ended: possible only if all run at once
            await finished[n + 1].wait()
        done.append(n)
        finished[n].set()

    with anyio.fail_after(5):
        await fan_out(work, range(3))
    assert done == [2, 1, 0]


async def test_a_run_sees_an_error_a_task_group_wrapped_as_itself() -> None:
    async def wrapped() -> None:
        async with anyio.create_task_group() as group:
            group.start_soon(anyio.sleep_forever)
            raise ProviderError("the provider refused the key", kind="auth", provider="openai")

    with pytest.raises(ProviderError, match="refused the key"):
        await as_itself(wrapped())


async def test_steps_run_together_side_by_side_and_a_failure_comes_as_itself() -> None:
    met = anyio.Event()

    async def waits() -> None:
        await met.wait()  # returns only if the other step runs meanwhile

    async def meets() -> None:
        met.set()

    with anyio.fail_after(2):
        await together(waits, meets)

    async def fails() -> None:
        raise ProviderError("no search answered", provider="p", kind="transient")

    with anyio.fail_after(2), pytest.raises(ProviderError):
        await together(waits, fails)


def _sdk_client(sent: list[str]) -> httpx2.AsyncClient:
    """An HTTP client that reports its requests (as the LLM adapters' do) and answers them in
    memory, noting each request as it is sent."""

    def answer(request: httpx2.Request) -> httpx2.Response:
        sent.append(f"send {request.url.path.strip('/')}")
        return httpx2.Response(200, json={})

    return report_requests(httpx2.AsyncClient(transport=httpx2.MockTransport(answer)))


async def test_each_child_s_request_leaves_before_the_next_child_builds_its_prompt() -> None:
    happened: list[str] = []
    client = _sdk_client(happened)

    async def call(n: int) -> None:
        happened.append(f"build {n}")  # the prompt, before the call
        for _ in range(4):  # on the way to its SDK: a lock, a check of the budget
            await anyio.lowlevel.checkpoint()
        with departing():
            for _ in range(3):  # an SDK yields to the loop before its request leaves
                await anyio.lowlevel.checkpoint()
            await client.post(f"http://model.test/{n}")

    async with client:
        await fan_out(call, range(3), in_turn=True)
    assert happened == ["build 0", "send 0", "build 1", "send 1", "build 2", "send 2"]


async def test_a_child_waiting_on_anything_else_does_not_hold_the_next_back() -> None:
    started: list[int] = []
    go_on = anyio.Event()

    async def call(n: int) -> None:
        started.append(n)
        if n == 0:
            await go_on.wait()  # a lock, a thread, a search: not a request leaving
        else:
            go_on.set()

    with anyio.fail_after(2):
        await fan_out(call, range(2), in_turn=True)
    assert started == [0, 1]


async def test_a_request_that_does_not_leave_holds_the_next_child_only_briefly() -> None:
    started: list[float] = []

    async def call(n: int) -> None:
        started.append(anyio.current_time())
        if n == 0:
            with departing():
                await anyio.sleep(1)  # connecting, say: the request has not left

    with anyio.fail_after(3):
        await fan_out(call, range(2), in_turn=True)
    assert started[1] - started[0] < 0.5


async def test_a_reporting_client_tells_the_departure_before_the_request_is_sent() -> None:
    departure = Departure()
    seen: list[bool] = []

    def answer(request: httpx2.Request) -> httpx2.Response:
        seen.append(departure.left.is_set())  # as the request reaches the transport
        return httpx2.Response(200, json={})

    async with report_requests(
        httpx2.AsyncClient(transport=httpx2.MockTransport(answer))
    ) as client:
        with departure_of(departure), departing():
            assert departure.sending
            await client.post("http://model.test/")
    assert seen == [True] and not departure.sending


async def test_without_in_turn_every_child_starts_at_once() -> None:
    """Searches and a question's parts start together: a search that returns at once still
    finds its siblings begun (the gatherer's settling counts on it)."""
    happened: list[str] = []

    async def call(n: int) -> None:
        happened.append(f"begin {n}")
        with departing():
            for _ in range(3):
                await anyio.lowlevel.checkpoint()
        happened.append(f"end {n}")

    await fan_out(call, range(3))
    assert happened[:3] == ["begin 0", "begin 1", "begin 2"]
