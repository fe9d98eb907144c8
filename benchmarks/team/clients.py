"""The clients of a run of ``benchmarks/team/load.py``: each research's own MCP client
(``benchmarks/team/raw.py``, or the SDK's with ``--sdk-clients``), through the balancer, starts
it and polls its status until it ends (``follow``), timing every status call (``poll_status``);
and each principal's list of research at the end (``list_ids``).
"""

from __future__ import annotations

import random
import time
from typing import TYPE_CHECKING, Any

import anyio

from benchmarks.team.infra import BalancedTransport, CallFailed, balanced_client, research_call
from benchmarks.team.raw import RawClient, raw_client
from benchmarks.team.shared import OPTIONS, POLL_SECONDS, TOKENS, Bench, Research, StatusCall
from tests.e2e.teamserver import mcp_client

if TYPE_CHECKING:
    from mcp import Client

# A research in one of these will not move again by itself; ``interrupted`` is not among them:
# the surviving worker must take it over.
FINAL = {"completed", "failed", "cancelled", "timed_out"}


# ----------------------------------------------------------------------------- the clients


async def poll_status(
    bench: Bench, client: Client | RawClient, transport: BalancedTransport, research: Research
) -> str:
    """One ``deep-research-status`` call, timed and recorded; the status it read."""
    sent, began = time.time(), time.perf_counter()
    outcome, code = "broken", ""
    envelope: dict[str, Any] = {}
    try:
        envelope = await research_call(
            client, action="deep-research-status", research_id=research.research_id
        )
        outcome = "ok" if envelope["success"] else "error"
    except CallFailed:
        outcome = "error"
        raise
    finally:
        if outcome == "error" and envelope:
            code = str((envelope.get("data") or {}).get("error_code") or "")
        seconds = time.perf_counter() - began
        bench.calls.append(StatusCall(sent, seconds, transport.last or "?", outcome, code))
    if outcome == "error":
        raise CallFailed(f"status failed on {transport.last}: {envelope['error']}", code)
    status = str(envelope["data"]["status"])
    if not research.seen or research.seen[-1] != status:
        research.seen.append(status)
    return status


async def follow(bench: Bench, research: Research) -> None:
    """Start the research through the balancer and poll its status until it ends. A call that
    broke on the killed worker (it was answering it) opens a new session, which the balancer
    sends to a live worker; any other failure is a client error. Never resumes."""
    token = TOKENS[research.principal]
    while time.monotonic() < bench.deadline:
        began = time.perf_counter()
        # Made before the session opens: a session the kill broke while opening is told
        # from a client error by the worker its last request went to.
        transport = BalancedTransport(bench.balancer)
        try:
            opened = (
                mcp_client(bench.mcp_url, token, transport=transport)
                if bench.args.sdk_clients
                else raw_client(bench.mcp_url, token, transport=transport)
            )
            async with opened as client:
                if not research.research_id:
                    sent = time.perf_counter()
                    started = await research_call(
                        client, action="deep-research", query=research.question, **OPTIONS
                    )
                    if not started["success"]:
                        research.errors.append(f"start refused: {started['error']}")
                        return
                    research.research_id = str(started["data"]["research_id"])
                    if bench.probe is not None:
                        bench.probe.add(research.principal, research.research_id)
                    research.home = transport.last or "?"
                    research.start_seconds = time.perf_counter() - began
                    research.start_call_seconds = time.perf_counter() - sent
                await anyio.sleep(random.uniform(0, POLL_SECONDS))
                while time.monotonic() < bench.deadline:
                    polled, sent_at = time.monotonic(), time.time()
                    try:
                        if await poll_status(bench, client, transport, research) in FINAL:
                            return
                    except CallFailed as exc:
                        if bench.restarting(sent_at, time.time()):
                            research.restart_errors.append(exc.code or str(exc))
                        else:
                            research.errors.append(f"{exc} ({bench.moment(sent_at)})")
                    await anyio.sleep(max(0.05, POLL_SECONDS - (time.monotonic() - polled)))
                research.errors.append("the benchmark's timeout passed")
                return
        except Exception as exc:  # a call broke (the worker died under it) or the session failed
            worker = transport.last
            if worker is not None and bench.workers[worker].killed:
                research.failover_at = time.time()
                continue
            research.errors.append(f"session failed on {worker}: {describe(exc)}")
            await anyio.sleep(1)


def describe(exc: BaseException) -> str:
    """An exception in one line, the first of a group's."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {exc}"[:300]


async def list_ids(bench: Bench, principal: str) -> set[str]:
    """Every research id ``deep-research-list`` shows ``principal`` (through the balancer)."""
    ids: set[str] = set()
    cursor = None
    async with balanced_client(bench.balancer, bench.mcp_url, TOKENS[principal]) as (client, _):
        while True:
            extra: dict[str, Any] = {"cursor": cursor} if cursor else {}
            page = await research_call(client, action="deep-research-list", limit=100, **extra)
            if not page["success"]:
                raise CallFailed(f"list failed for {principal}: {page['error']}")
            ids.update(item["research_id"] for item in page["data"]["items"])
            cursor = page["data"]["next_cursor"]
            if not cursor:
                return ids
