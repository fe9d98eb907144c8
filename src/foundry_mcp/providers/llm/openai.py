"""OpenAI chat completions, and any OpenAI-compatible server (Ollama, vLLM, LM Studio)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from foundry_mcp.errors import ProviderError
from foundry_mcp.providers.http_errors import status_error
from foundry_mcp.providers.llm.base import LLMRequest, LLMResponse
from foundry_mcp.providers.llm.text import strip_reasoning

if TYPE_CHECKING:
    from openai import AsyncOpenAI

# Servers that are not OpenAI often need no key, but the SDK insists on one.
PLACEHOLDER_KEY = "not-needed"


class OpenAIProvider:
    """An LLM reached through the ``openai`` SDK."""

    def __init__(
        self,
        name: str,
        api_key: str | None,
        base_url: str | None,
        timeout: float,
        max_retries: int,
    ) -> None:
        from openai import AsyncOpenAI

        self.name = name
        self._client: AsyncOpenAI = AsyncOpenAI(
            api_key=api_key or PLACEHOLDER_KEY,
            base_url=base_url,
            timeout=timeout,
            max_retries=max_retries,
        )

    async def complete(self, request: LLMRequest) -> LLMResponse:
        import openai

        kwargs: dict[str, Any] = {
            "model": request.model,
            "messages": [
                {"role": "system", "content": request.system},
                {"role": "user", "content": request.user},
            ],
            "max_tokens": request.max_tokens,
        }
        if request.temperature is not None:
            kwargs["temperature"] = request.temperature
        if request.json_mode:
            kwargs["response_format"] = {"type": "json_object"}
        started = time.perf_counter()
        try:
            completion = await self._client.chat.completions.create(**kwargs)
        except openai.APIStatusError as exc:
            raise status_error(self.name, exc.status_code, _message(exc)) from None
        except openai.APITimeoutError:
            raise ProviderError(
                f"{self.name} did not answer in time.", provider=self.name, retryable=True
            ) from None
        except openai.APIConnectionError as exc:
            raise ProviderError(
                f"Cannot reach {self.name}: {exc}.",
                provider=self.name,
                retryable=True,
                remediation=f"Check the base_url of [providers.{self.name}] and your network.",
            ) from None
        if not completion.choices:
            raise ProviderError(f"{self.name} returned no choices.", provider=self.name)
        text = completion.choices[0].message.content or ""
        usage = completion.usage
        return LLMResponse(
            text=strip_reasoning(text),
            model=completion.model or request.model,
            provider=self.name,
            input_tokens=usage.prompt_tokens if usage else 0,
            output_tokens=usage.completion_tokens if usage else 0,
            latency_s=time.perf_counter() - started,
        )

    async def aclose(self) -> None:
        await self._client.close()


def _message(exc: Exception) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return str(error["message"])
    return str(getattr(exc, "message", exc))
