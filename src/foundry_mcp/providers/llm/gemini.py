"""Google's Gemini API through the ``google-genai`` SDK."""

from __future__ import annotations

import contextlib
import importlib.util
import re
import time
from typing import TYPE_CHECKING, Any

from foundry_mcp.errors import ProviderError
from foundry_mcp.providers.http.errors import (
    connection_error,
    malformed_error,
    parse_retry_after,
    scrub_secrets,
    status_error,
    timeout_error,
)
from foundry_mcp.providers.http.keep_alive import kept_alive
from foundry_mcp.providers.llm.base import LLMRequest, LLMResponse
from foundry_mcp.providers.llm.departures import departing, report_requests, request_hooks
from foundry_mcp.providers.llm.text import strip_reasoning
from foundry_mcp.providers.llm.warm import rehearse

if TYPE_CHECKING:
    from google.genai import Client

_DELAY = re.compile(r"^\s*(\d+(?:\.\d+)?)s\s*$")

# A generateContent answer as the Gemini API returns it, for the in-memory warm-up.
_WARM_ANSWER: dict[str, Any] = {
    "candidates": [
        {"content": {"role": "model", "parts": [{"text": "{}"}]}, "finishReason": "STOP"}
    ],
    "usageMetadata": {"promptTokenCount": 1, "candidatesTokenCount": 1, "totalTokenCount": 2},
    "modelVersion": "warm-up",
}


class GeminiProvider:
    """Gemini models reached through ``google-genai`` (Gemini API, not Vertex AI).

    The SDK retries nothing here (``HttpRetryOptions(attempts=1)``; without it, an SDK using
    aiohttp would sleep and retry connection errors itself): the resilience policy owns retries.
    """

    def __init__(
        self,
        name: str,
        api_key: str | None,
        base_url: str | None,
        timeout: float,
        max_retries: int = 0,
        http_client: Any = None,
    ) -> None:
        from google import genai
        from google.genai import types

        self.name = name
        self._key = api_key
        self._timeout = timeout
        # Its requests are reported as they leave, for the fan-outs (see departures), when it
        # sends them through httpx: the SDK takes aiohttp instead when that is installed.
        self._reports = http_client is not None or importlib.util.find_spec("aiohttp") is None
        # The client the SDK builds: reporting its requests, keeping idle connections for the
        # next round of calls (providers.http.keep_alive). aiohttp, when installed, keeps its own.
        own_client = (
            None
            if http_client is not None
            else {"event_hooks": request_hooks(), "limits": kept_alive()}
        )
        self._client: Client = genai.Client(
            api_key=api_key,
            vertexai=False,
            http_options=types.HttpOptions(
                base_url=base_url,
                timeout=int(timeout * 1000),
                retry_options=types.HttpRetryOptions(attempts=max_retries + 1),
                httpx_async_client=None if http_client is None else report_requests(http_client),
                async_client_args=own_client,
            ),
        )
        # The API resources load on first access: here, off the event loop.
        self._models = self._client.aio.models

    @classmethod
    def warm_up(cls, model: str, base_url: str | None) -> None:
        """Do the SDK's first-call work now, answered in memory (see ``llm.warm``)."""
        rehearse(cls, model, base_url, _WARM_ANSWER)

    async def complete(self, request: LLMRequest) -> LLMResponse:
        from google.genai import errors, types

        config = types.GenerateContentConfig(
            system_instruction=request.system,
            max_output_tokens=request.max_tokens,
            temperature=request.temperature,
            response_mime_type="application/json" if request.json_mode else None,
        )
        started = time.perf_counter()
        try:
            with departing() if self._reports else contextlib.nullcontext():
                response = await self._models.generate_content(
                    model=request.model, contents=request.user, config=config
                )
        except errors.APIError as exc:
            raise self._api_error(exc) from None
        except ValueError as exc:  # a body that is not JSON, or not a Gemini answer
            raise malformed_error(self.name, type(exc).__name__) from None
        except Exception as exc:  # raw transport errors: httpx2, or aiohttp when installed
            raise _transport_error(self.name, exc, self._timeout) from None
        return self._response(request, response, started)

    def _response(self, request: LLMRequest, response: Any, started: float) -> LLMResponse:
        candidates = getattr(response, "candidates", None)
        if not candidates:
            feedback = getattr(response, "prompt_feedback", None)
            blocked = getattr(feedback, "block_reason", None)
            if blocked:
                raise ProviderError(
                    f"{self.name} refused to answer the prompt (blocked: {blocked}).",
                    provider=self.name,
                    kind="bad_request",
                    remediation="Rephrase the research question, or use another provider.",
                )
            raise malformed_error(self.name, "no candidates")
        parts = getattr(getattr(candidates[0], "content", None), "parts", None) or []
        text = "".join(
            part.text
            for part in parts
            if getattr(part, "text", None) and not getattr(part, "thought", False)
        )
        usage = getattr(response, "usage_metadata", None)
        # Thinking tokens are billed as output.
        output_tokens = (getattr(usage, "candidates_token_count", 0) or 0) + (
            getattr(usage, "thoughts_token_count", 0) or 0
        )
        return LLMResponse(
            text=strip_reasoning(text),
            model=getattr(response, "model_version", None) or request.model,
            provider=self.name,
            input_tokens=getattr(usage, "prompt_token_count", 0) or 0,
            output_tokens=output_tokens,
            latency_s=time.perf_counter() - started,
        )

    def _api_error(self, exc: Any) -> ProviderError:
        status = int(getattr(exc, "code", 0) or 0)
        message = str(getattr(exc, "message", "") or getattr(exc, "status", "") or "")
        response = getattr(exc, "response", None)
        retry_after = parse_retry_after(getattr(response, "headers", None))
        if retry_after is None:
            retry_after = _retry_delay(getattr(exc, "details", None))
        if status == 400 and "api key not valid" in message.lower():
            status = 401  # Gemini answers a bad key with 400 INVALID_ARGUMENT
        if not 100 <= status < 600:
            return malformed_error(self.name, scrub_secrets(message, self._key)[:200])
        return status_error(
            self.name,
            status,
            message,
            retry_after=retry_after,
            code=str(getattr(exc, "status", "") or ""),
            secret=self._key,
        )

    async def aclose(self) -> None:
        await self._client.aio.aclose()


def _retry_delay(details: Any) -> float | None:
    """The ``RetryInfo.retryDelay`` ("13s") Gemini puts in the details of a 429."""
    error = details.get("error", details) if isinstance(details, dict) else None
    items = error.get("details") if isinstance(error, dict) else None
    for item in items if isinstance(items, list) else []:
        delay = item.get("retryDelay") if isinstance(item, dict) else None
        match = _DELAY.match(delay) if isinstance(delay, str) else None
        if match:
            return float(match.group(1))
    return None


def _transport_error(provider: str, exc: Exception, timeout: float) -> ProviderError:
    """Map the SDK's raw transport exceptions (it does not wrap them) by class name.

    They come from httpx2, or from aiohttp when that is installed.
    """
    names = {cls.__name__ for cls in type(exc).__mro__}
    if names & {"TimeoutException", "TimeoutError", "ServerTimeoutError"}:
        return timeout_error(provider, timeout)
    if names & {"DecodingError", "ValidationError", "JSONDecodeError"}:
        return malformed_error(provider, type(exc).__name__)
    if names & {"TransportError", "RequestError", "HTTPError", "ClientError", "OSError"}:
        return connection_error(provider, exc)
    raise exc
