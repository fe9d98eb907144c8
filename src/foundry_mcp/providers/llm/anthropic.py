"""Anthropic's Messages API through the ``anthropic`` SDK."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from foundry_mcp.providers.http.errors import malformed_error, sdk_error
from foundry_mcp.providers.http.keep_alive import sdk_http_client
from foundry_mcp.providers.llm.base import LLMRequest, LLMResponse
from foundry_mcp.providers.llm.departures import departing, report_requests
from foundry_mcp.providers.llm.text import strip_reasoning
from foundry_mcp.providers.llm.warm import rehearse

if TYPE_CHECKING:
    from anthropic import AsyncAnthropic

# A message as the Messages API returns it, for the in-memory warm-up.
_WARM_ANSWER: dict[str, Any] = {
    "id": "msg_warm_up",
    "type": "message",
    "role": "assistant",
    "model": "warm-up",
    "content": [{"type": "text", "text": "{}"}],
    "stop_reason": "end_turn",
    "stop_sequence": None,
    "usage": {"input_tokens": 1, "output_tokens": 1},
}


class AnthropicProvider:
    """Claude models reached through the ``anthropic`` SDK (its own retries off by default)."""

    def __init__(
        self,
        name: str,
        api_key: str | None,
        base_url: str | None,
        timeout: float,
        max_retries: int = 0,
        http_client: Any = None,
    ) -> None:
        import anthropic
        from anthropic import AsyncAnthropic

        self.name = name
        self._key = api_key
        self._timeout = timeout
        self._client: AsyncAnthropic = AsyncAnthropic(
            api_key=api_key,
            base_url=base_url,
            timeout=timeout,
            max_retries=max_retries,
            # Its requests are reported as they leave, for the fan-outs (see departures).
            http_client=report_requests(http_client or sdk_http_client(anthropic)),
        )
        # The API resources load on first access: here, off the event loop.
        self._messages = self._client.messages

    @classmethod
    def warm_up(cls, model: str, base_url: str | None) -> None:
        """Do the SDK's first-call work now, answered in memory (see ``llm.warm``)."""
        rehearse(cls, model, base_url, _WARM_ANSWER)

    async def complete(self, request: LLMRequest) -> LLMResponse:
        import anthropic

        kwargs: dict[str, Any] = {
            "model": request.model,
            "system": request.system,
            "messages": [{"role": "user", "content": request.user}],
            "max_tokens": request.max_tokens,
        }
        # The Messages API of anthropic >= 2 takes no temperature; the model's default applies.
        started = time.perf_counter()
        try:
            with departing():
                message = await self._messages.create(**kwargs)
        except (anthropic.APIError, ValueError) as exc:
            raise sdk_error(
                self.name, exc, anthropic, timeout=self._timeout, secret=self._key
            ) from None
        try:
            text = "".join(
                block.text for block in message.content if getattr(block, "type", "") == "text"
            )
            usage = message.usage
        except (AttributeError, TypeError):
            raise malformed_error(self.name, "no content") from None
        return LLMResponse(
            text=strip_reasoning(text),
            model=message.model or request.model,
            provider=self.name,
            input_tokens=(usage.input_tokens or 0) if usage else 0,
            output_tokens=(usage.output_tokens or 0) if usage else 0,
            latency_s=time.perf_counter() - started,
        )

    async def aclose(self) -> None:
        await self._client.close()
