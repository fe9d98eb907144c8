"""Anthropic's Messages API through the ``anthropic`` SDK."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from foundry_mcp.errors import ProviderError
from foundry_mcp.providers.http_errors import status_error
from foundry_mcp.providers.llm.base import LLMRequest, LLMResponse
from foundry_mcp.providers.llm.text import strip_reasoning

if TYPE_CHECKING:
    from anthropic import AsyncAnthropic


class AnthropicProvider:
    """Claude models reached through the ``anthropic`` SDK."""

    def __init__(
        self,
        name: str,
        api_key: str | None,
        base_url: str | None,
        timeout: float,
        max_retries: int,
    ) -> None:
        from anthropic import AsyncAnthropic

        self.name = name
        self._client: AsyncAnthropic = AsyncAnthropic(
            api_key=api_key, base_url=base_url, timeout=timeout, max_retries=max_retries
        )

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
            message = await self._client.messages.create(**kwargs)
        except anthropic.APIStatusError as exc:
            raise status_error(self.name, exc.status_code, str(exc.message)) from None
        except anthropic.APITimeoutError:
            raise ProviderError(
                f"{self.name} did not answer in time.", provider=self.name, retryable=True
            ) from None
        except anthropic.APIConnectionError as exc:
            raise ProviderError(
                f"Cannot reach {self.name}: {exc}.",
                provider=self.name,
                retryable=True,
                remediation=f"Check the base_url of [providers.{self.name}] and your network.",
            ) from None
        text = "".join(
            block.text for block in message.content if getattr(block, "type", "") == "text"
        )
        return LLMResponse(
            text=strip_reasoning(text),
            model=message.model or request.model,
            provider=self.name,
            input_tokens=message.usage.input_tokens if message.usage else 0,
            output_tokens=message.usage.output_tokens if message.usage else 0,
            latency_s=time.perf_counter() - started,
        )

    async def aclose(self) -> None:
        await self._client.close()
