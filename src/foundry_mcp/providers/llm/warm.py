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

# An LLM adapter class, built as ``adapter(name, api_key, base_url, timeout, http_client=...)``.
AdapterClass = Callable[..., LLMProvider]


def rehearse(
    adapter: AdapterClass, model: str, base_url: str | None, answer: dict[str, Any]
) -> None:
    """Complete one request with ``model`` through a throw-away ``adapter`` whose HTTP client
    replies ``answer`` (a 200 JSON body in the API's shape) to every request, with no network.

    Run it in a worker thread with no event loop of its own; it raises whatever the call raised.
    """
    import httpx2

    def reply(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, json=answer, request=request)

    async def once() -> None:
        client = httpx2.AsyncClient(transport=httpx2.MockTransport(reply))
        built = adapter("warm-up", "warm-up", base_url, 30.0, http_client=client)
        try:
            await built.complete(
                LLMRequest(
                    system="warm-up", user="warm-up", model=model, max_tokens=16, json_mode=True
                )
            )
        finally:
            await built.aclose()
            await client.aclose()

    asyncio.run(once())
