"""Token budgets: what one LLM call may carry, how phases share it, what the client can take.

Two budgets are kept apart (``specs/token-management.md`` is the reference):

* **Our own LLM calls**: one call may carry
  ``input_limit(max_tokens) = window - runtime_overhead - max_tokens - margin`` input tokens,
  where ``margin = ceil(token_safety_margin * window)`` absorbs tokenizer error and
  ``runtime_overhead`` is what a runtime wrapped around the model puts in its window (0 for the
  provider APIs, which foundry-mcp calls directly; settable). The research's
  *available* budget is that limit for the largest output any phase asks for; each phase's
  *content* (sources, findings, a report excerpt: not the fixed instructions around it) may
  use ``fraction * available`` of it. The four fractions add up to 1: the content of one whole
  iteration would fit in a single window.
* **The calling assistant** (Claude Code, Cursor...) holds our answers in its own window, of
  which ``assistant_overhead`` tokens are already taken by its system prompt, tools and history.
  ``client_budget = (client_window - assistant_overhead) * (1 - token_safety_margin)`` bounds the
  report we write for it (the synthesis call's output) and is reported with the fidelity.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from foundry_mcp.context.errors import ContextExceededError
from foundry_mcp.context.limits import bare_model, model_limits
from foundry_mcp.context.options import (
    PHASE_BUDGET_FRACTIONS,
    TokenBudgetOptions,
)

# The output each phase asks for (capped by the model's max output).
PHASE_OUTPUT_TOKENS: dict[str, int] = {
    "planning": 2048,
    "analysis": 4096,
    "synthesis": 8192,
    "refinement": 2048,
    "summarization": 2048,
}
# What a provider's runtime puts in the model's window before our prompt, by provider kind.
# The provider APIs (OpenAI, Anthropic, Gemini, OpenAI-compatible servers) put nothing: absent
# kinds count 0. A provider that runs the model inside a CLI adds its system prompt's size here.
RUNTIME_OVERHEAD_BY_PROVIDER: dict[str, int] = {
    # Estimates: what each program adds with our system prompt in place of its own and its
    # tools off (Claude Code and Gemini CLI: environment notes, the user's CLAUDE.md/GEMINI.md;
    # Codex keeps its own instructions, which come before ours).
    "claude-cli": 6_000,
    "gemini-cli": 6_000,
    "codex-cli": 12_000,
}
MIN_CLIENT_BUDGET = 1_000
MIN_REPORT_TOKENS = 1_024


def runtime_overhead_for(provider: str, configured: int | None, floor: int | None = None) -> int:
    """``runtime_overhead`` as configured, else the default of ``provider``'s kind; at least
    ``floor`` (an untrusted file's value, which may only raise it)."""
    overhead = configured
    if overhead is None:
        overhead = RUNTIME_OVERHEAD_BY_PROVIDER.get(provider.split(":", 1)[0], 0)
    return max(overhead, floor or 0)


@dataclass(frozen=True)
class TokenBudget:
    """The budgets of one research's model."""

    context_window: int
    max_output: int
    safety_margin: float
    runtime_overhead: int
    assistant_overhead: int
    client_window: int
    phase_fractions: dict[str, float]

    @classmethod
    def from_options(
        cls, options: TokenBudgetOptions, model: str, provider: str, own_model: str | None = None
    ) -> TokenBudget:
        """The budget of ``model`` served by ``provider``.

        The limits resolved when the research started are used for its own model
        (``own_model``, or any model when not given); a phase routed to another model looks
        that model up with the research's ``model_context_overrides``.
        """
        window, output = options.context_window, options.max_output
        if own_model is not None and bare_model(model) != bare_model(own_model):
            window = output = None
        if window is None or output is None:
            limits = model_limits(
                model, provider, options.model_context_overrides, options.model_window_ceilings
            )
            window = window or limits.context_window
            output = output or limits.max_output
        fractions = {**PHASE_BUDGET_FRACTIONS, **options.phase_fractions}
        return cls(
            context_window=window,
            max_output=min(output, window - 1),
            safety_margin=options.safety_margin,
            runtime_overhead=options.runtime_overhead,
            assistant_overhead=options.assistant_overhead,
            client_window=options.client_window,
            phase_fractions=fractions,
        )

    # ------------------------------------------------------------------ our calls

    @property
    def margin_tokens(self) -> int:
        """Tokens kept free in every call for tokenizer error."""
        return math.ceil(self.safety_margin * self.context_window)

    def output_tokens(self, phase: str) -> int:
        """``max_tokens`` for a call of ``phase``: its usual output, within the model's limit.

        The synthesis call writes the report handed back to the client: it is also kept within
        the client budget.
        """
        wanted = PHASE_OUTPUT_TOKENS.get(phase, PHASE_OUTPUT_TOKENS["analysis"])
        tokens = min(wanted, self.max_output)
        if phase == "synthesis":
            tokens = min(tokens, max(MIN_REPORT_TOKENS, self.client_budget))
        return max(1, tokens)

    def input_limit(self, max_tokens: int) -> int:
        """The input tokens one call asking for ``max_tokens`` of output may carry."""
        return (
            self.context_window
            - self.runtime_overhead
            - min(max_tokens, self.max_output)
            - self.margin_tokens
        )

    @property
    def reserved_output(self) -> int:
        """The largest output any phase asks for: reserved in the available budget."""
        return max(self.output_tokens(phase) for phase in self.phase_fractions)

    @property
    def available(self) -> int:
        """Input tokens of one call, with the largest output reserved: what phases share."""
        return self.input_limit(self.reserved_output)

    def phase_budget(self, phase: str) -> int:
        """The content tokens ``phase`` may put in its prompt."""
        available = self.available
        if available <= 0:
            raise ContextExceededError(
                f"The model's context window ({self.context_window:,} tokens) leaves no room for "
                f"research content after {self.runtime_overhead:,} tokens of runtime overhead, "
                f"{self.reserved_output:,} output tokens and a {self.safety_margin:.0%} safety "
                "margin.",
                remediation=(
                    "Use a model with a larger context window (or correct its window in "
                    "[research] model_context_overrides), or lower runtime_overhead or "
                    "token_safety_margin; then resume the research."
                ),
                details={
                    "context_window": self.context_window,
                    "runtime_overhead": self.runtime_overhead,
                },
            )
        return max(1, math.floor(self.phase_fractions.get(phase, 0.0) * available))

    def call_room(self, phase: str) -> int:
        """The input tokens of one call of ``phase`` alone: the whole window but its output, the
        runtime's overhead and the margin. A phase's calls carry its content alone, so it may
        fill this room (its prompt's fixed text included) whatever its share of
        :attr:`available`; a small window then reads less per call, in more calls."""
        return self.input_limit(self.output_tokens(phase))

    # ------------------------------------------------------------------ the client

    @property
    def client_budget(self) -> int:
        """Tokens the calling assistant can take from us after its own prompts and history."""
        room = (self.client_window - self.assistant_overhead) * (1.0 - self.safety_margin)
        return max(MIN_CLIENT_BUDGET, math.floor(room))

    def describe(self) -> dict[str, int | float | dict[str, int]]:
        """Every figure in effect, for status payloads and logs."""
        room = self.available > 0
        return {
            "context_window": self.context_window,
            "max_output": self.max_output,
            "runtime_overhead": self.runtime_overhead,
            "safety_margin": self.safety_margin,
            "safety_margin_tokens": self.margin_tokens,
            "reserved_output": self.reserved_output,
            "available": self.available,
            "phase_budgets": {
                phase: self.phase_budget(phase) if room else 0 for phase in self.phase_fractions
            },
            "client_window": self.client_window,
            "assistant_overhead": self.assistant_overhead,
            "client_budget": self.client_budget,
        }
