"""The protocol every LLM adapter implements, and the request/response it speaks."""

from __future__ import annotations

from typing import Protocol

from pydantic import BaseModel, Field


class LLMRequest(BaseModel):
    """One completion request: a system and a user prompt for one model."""

    system: str
    user: str
    model: str
    max_tokens: int = 4096
    temperature: float | None = 0.2
    json_mode: bool = False
    purpose: str = ""  # e.g. "planning"; for logs and usage records only


class LLMResponse(BaseModel):
    """The model's text and what it cost."""

    text: str
    model: str
    provider: str
    # None: the provider did not say (the research's call layer then estimates it).
    input_tokens: int | None = 0
    output_tokens: int | None = 0
    latency_s: float = Field(default=0.0, ge=0)


class LLMProvider(Protocol):
    """An LLM API behind one method."""

    name: str

    async def complete(self, request: LLMRequest) -> LLMResponse:
        """Run one completion; raise ``ProviderError`` (from ``foundry_mcp.errors``) on failure."""
        ...

    async def aclose(self) -> None:
        """Release the HTTP client."""
        ...
