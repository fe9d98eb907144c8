"""Warming an LLM SDK: one completion answered in memory, so nothing leaves the machine.

An SDK's first call does work the later ones do not: it imports its API resources, builds the
type hints of its request parameters and the validators of its response models (tens of
milliseconds each). :func:`rehearse` runs that first call in the calling worker thread, on a
throw-away adapter whose HTTP client answers from memory, so the first real call made inside
the event loop finds it all done.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from foundry_mcp.providers.llm.base import LLMProvider, LLMRequest

# Builds the adapter to rehearse with, given the in-memory HTTP client its SDK must use.
AdapterFactory = Callable[[Any], LLMProvider]


def rehearse(build: AdapterFactory, model: str, answer: dict[str, Any]) -> None:
    """Complete one request with ``model`` through ``build(client)``; the client replies
    ``answer`` (a 200 JSON body in the API's shape) to every request without any network.

    Run it in a worker thread with no event loop of its own; it raises whatever the call raised.
    """
    import httpx2

    def reply(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, json=answer, request=request)

    async def once() -> None:
        client = httpx2.AsyncClient(transport=httpx2.MockTransport(reply))
        adapter = build(client)
        try:
            await adapter.complete(
                LLMRequest(
                    system="warm-up", user="warm-up", model=model, max_tokens=16, json_mode=True
                )
            )
        finally:
            await adapter.aclose()
            await client.aclose()

    asyncio.run(once())
