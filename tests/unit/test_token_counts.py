"""A call's token counts: as its provider reported them, estimated only where it did not."""

from __future__ import annotations

from foundry_mcp.context.tokens import estimate_tokens
from foundry_mcp.providers.llm.base import LLMRequest, LLMResponse
from foundry_mcp.research.llm.calls import token_counts

REQUEST = LLMRequest(system="You plan research.", user="How do heat pumps work? " * 20, model="m")


def _response(**counts: int | None) -> LLMResponse:
    return LLMResponse(text="A plan in a few words.", model="m", provider="p", **counts)


def test_reported_counts_are_kept_even_when_zero() -> None:
    assert token_counts(_response(input_tokens=120, output_tokens=0), REQUEST) == (120, 0)


def test_counts_a_provider_did_not_report_are_estimated_from_the_text() -> None:
    estimated_in = estimate_tokens(REQUEST.system + REQUEST.user)
    estimated_out = estimate_tokens("A plan in a few words.")
    assert token_counts(_response(input_tokens=None, output_tokens=None), REQUEST) == (
        estimated_in,
        estimated_out,
    )
    assert token_counts(_response(input_tokens=7, output_tokens=None), REQUEST) == (
        7,
        estimated_out,
    )
