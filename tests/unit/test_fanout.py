"""The workflow's fan-out: children end with their parent, errors arrive unwrapped."""

from __future__ import annotations

import anyio
import pytest

from foundry_mcp.errors import ProviderError
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
