"""A fitting round knows each page by its hash: a page the store holds is not hashed again."""

from __future__ import annotations

import pytest

from foundry_mcp.context.tokens import content_hash
from foundry_mcp.research.llm.calls import CallLog, ResearchLLM
from foundry_mcp.research.models import ResearchState, Source
from foundry_mcp.research.workflow.fitting import fitter
from foundry_mcp.research.workflow.fitting.fitter import Fitting
from foundry_mcp.research.workflow.fitting.sources import prepare_round

HELD = " ".join(["A page the store holds: heat pumps move heat against its gradient."] * 30)
NEW = " ".join(["A page found in this round: their efficiency falls in the cold."] * 30)


class _Unused:
    name = "openai"

    async def complete(self, request: object) -> object:
        raise AssertionError("no call is made while sources are measured")


def _held(text: str) -> Source:
    """A source as a save left it: its text kept by the store under its hash."""
    source = Source(title="held", content=text)
    source.content_hash = content_hash(text)
    source.keep_text(text)
    return source


@pytest.mark.anyio
async def test_only_texts_the_store_does_not_hold_as_they_are_are_hashed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    held, new = _held(HELD), Source(title="new", content=NEW)
    padded = _held(f"\n{HELD}\n")  # read without its padding: not the text the store holds
    state = ResearchState(query="heat pumps", llm_provider="openai", llm_model="gpt-4.1-mini")
    state.sources = [held, new, padded]
    fitting = await Fitting.open(ResearchLLM(_Unused(), "gpt-4.1-mini", state, CallLog()), state)
    hashed: list[str] = []

    def hashing(text: str) -> str:
        hashed.append(text)
        return content_hash(text)

    monkeypatch.setattr(fitter, "content_hash", hashing)

    ready = prepare_round(fitting, state.sources)

    assert hashed == [NEW, HELD]  # the padded page's text as read
    assert ready.hashes == {
        held.id: content_hash(HELD),
        new.id: content_hash(NEW),
        padded.id: content_hash(HELD),
    }

    held.content = NEW + HELD  # changed since the save: the store's hash is not its
    hashed.clear()
    ready = prepare_round(fitting, state.sources)
    assert hashed == [NEW + HELD, NEW, HELD]
    assert ready.hashes[held.id] == content_hash(NEW + HELD)
