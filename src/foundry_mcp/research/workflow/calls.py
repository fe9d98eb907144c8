"""Provider calls made on behalf of one research: usage accounting and timing."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

from foundry_mcp.errors import ProviderError
from foundry_mcp.providers.llm.base import LLMProvider, LLMRequest
from foundry_mcp.research.models import ResearchState

log = logging.getLogger(__name__)


@dataclass
class CallLog:
    """Start and end times (``time.perf_counter``) of every provider call, by kind."""

    intervals: list[tuple[str, float, float]] = field(default_factory=list)

    def add(self, kind: str, started: float, ended: float) -> None:
        self.intervals.append((kind, started, ended))

    def count(self, kind: str) -> int:
        return sum(1 for k, _, _ in self.intervals if k == kind)

    def busy_seconds(self) -> float:
        """Time during which at least one provider call was in flight (union of intervals)."""
        total = 0.0
        current_start: float | None = None
        current_end = 0.0
        for _, start, end in sorted(self.intervals, key=lambda item: item[1]):
            if current_start is None or start > current_end:
                if current_start is not None:
                    total += current_end - current_start
                current_start, current_end = start, end
            else:
                current_end = max(current_end, end)
        if current_start is not None:
            total += current_end - current_start
        return total


class ResearchLLM:
    """The LLM of one research: sends prompts and books tokens to the research's usage."""

    def __init__(
        self, provider: LLMProvider, model: str, state: ResearchState, calls: CallLog
    ) -> None:
        self.provider = provider
        self.model = model
        self._state = state
        self._calls = calls

    async def ask(
        self, purpose: str, system: str, user: str, *, json_mode: bool, max_tokens: int = 4096
    ) -> str:
        """Send one prompt and return the model's text."""
        request = LLMRequest(
            system=system,
            user=user,
            model=self.model,
            max_tokens=max_tokens,
            json_mode=json_mode,
            purpose=purpose,
        )
        started = time.perf_counter()
        try:
            response = await self.provider.complete(request)
        except ProviderError as exc:
            self._state.emit(
                "llm_error",
                {"purpose": purpose, "provider": self.provider.name, "error": exc.message},
            )
            raise
        finally:
            self._calls.add("llm", started, time.perf_counter())
        self._state.usage.add(response.input_tokens, response.output_tokens)
        self._state.emit(
            "llm_call",
            {
                "purpose": purpose,
                "provider": response.provider,
                "model": response.model,
                "input_tokens": response.input_tokens,
                "output_tokens": response.output_tokens,
                "latency_s": round(response.latency_s, 3),
            },
        )
        log.debug(
            "llm call %s/%s for %s: %d in, %d out, %.2fs",
            response.provider,
            response.model,
            purpose,
            response.input_tokens,
            response.output_tokens,
            response.latency_s,
        )
        return response.text
