"""OpenAI chat completions, and any OpenAI-compatible server (Ollama, vLLM, LM Studio)."""

from __future__ import annotations

import re
import time
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from foundry_mcp.providers.http.errors import malformed_error, sdk_error
from foundry_mcp.providers.http.keep_alive import sdk_http_client
from foundry_mcp.providers.llm.base import LLMRequest, LLMResponse
from foundry_mcp.providers.llm.departures import departing, report_requests
from foundry_mcp.providers.llm.text import strip_reasoning
from foundry_mcp.providers.llm.warm import rehearse

if TYPE_CHECKING:
    from openai import AsyncOpenAI

# Servers that are not OpenAI often need no key, but the SDK insists on one.
PLACEHOLDER_KEY = "not-needed"

# OpenAI's reasoning models take no temperature.
_REASONING_MODEL = re.compile(r"^(o\d|gpt-5)", re.IGNORECASE)

# A chat completion as the API returns it, for the in-memory warm-up.
_WARM_ANSWER: dict[str, Any] = {
    "id": "chatcmpl-warm-up",
    "object": "chat.completion",
    "created": 0,
    "model": "warm-up",
    "choices": [
        {
            "index": 0,
            "finish_reason": "stop",
            "message": {"role": "assistant", "content": "{}"},
        }
    ],
    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
}


class OpenAIProvider:
    """An LLM reached through the ``openai`` SDK.

    The SDK's own retries are off (``max_retries`` defaults to 0): the resilience policy in
    ``providers/policy.py`` is the only one that retries.
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
        import openai
        from openai import AsyncOpenAI

        self.name = name
        self._key = api_key
        self._timeout = timeout
        # OpenAI itself wants max_completion_tokens (its reasoning models refuse max_tokens);
        # compatible servers (Ollama, vLLM, ...) know max_tokens.
        host = (urlsplit(base_url).hostname or "") if base_url else "api.openai.com"
        self._official = host == "openai.com" or host.endswith(".openai.com")
        self._client: AsyncOpenAI = AsyncOpenAI(
            api_key=api_key or PLACEHOLDER_KEY,
            base_url=base_url,
            timeout=timeout,
            max_retries=max_retries,
            # Its requests are reported as they leave, for the fan-outs (see departures).
            http_client=report_requests(http_client or sdk_http_client(openai)),
        )
        from openai.types.chat import ChatCompletion

        self._completion_type = ChatCompletion

    @classmethod
    def warm_up(cls, model: str, base_url: str | None) -> None:
        """Do the SDK's first-call work now, answered in memory (see ``llm.warm``)."""
        rehearse(cls, model, base_url, _WARM_ANSWER)

    async def complete(self, request: LLMRequest) -> LLMResponse:
        import openai

        kwargs: dict[str, Any] = {
            "model": request.model,
            "messages": [
                {"role": "system", "content": request.system},
                {"role": "user", "content": request.user},
            ],
        }
        if self._official:
            kwargs["max_completion_tokens"] = request.max_tokens
        else:
            kwargs["max_tokens"] = request.max_tokens
        if request.temperature is not None and not (
            self._official and _REASONING_MODEL.match(request.model)
        ):
            kwargs["temperature"] = request.temperature
        if request.json_mode:
            kwargs["response_format"] = {"type": "json_object"}
        started = time.perf_counter()
        try:
            with departing():
                # The client's documented request method, not ``chat.completions.create``:
                # that walks its forty-odd typed parameters to build the same body, a
                # millisecond of the loop's time a call.
                completion = await self._client.post(
                    "/chat/completions", body=kwargs, cast_to=self._completion_type
                )
        except (openai.APIError, ValueError) as exc:
            raise sdk_error(
                self.name, exc, openai, timeout=self._timeout, secret=self._key
            ) from None
        try:
            choice = completion.choices[0]
            text = choice.message.content or ""
            usage = completion.usage
        except (AttributeError, IndexError, TypeError):
            raise malformed_error(self.name, "no choices") from None
        return LLMResponse(
            text=strip_reasoning(text),
            model=completion.model or request.model,
            provider=self.name,
            input_tokens=(usage.prompt_tokens or 0) if usage else 0,
            output_tokens=(usage.completion_tokens or 0) if usage else 0,
            latency_s=time.perf_counter() - started,
        )

    async def aclose(self) -> None:
        await self._client.close()
