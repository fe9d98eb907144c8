"""Sites the caller asks to favour: validated, matched by domain or address, ranked up and
protected when sources compete for a tight budget."""

from __future__ import annotations

import pytest

from foundry_mcp.errors import InputError
from foundry_mcp.research.llm.calls import CallLog, ResearchLLM
from foundry_mcp.research.models import ResearchOptions, ResearchState, Source
from foundry_mcp.research.service.inputs import check_preferred_sources
from foundry_mcp.research.workflow.fitting.fitter import Fitting
from foundry_mcp.research.workflow.fitting.sources import is_preferred, prepare_round


def test_domains_and_address_prefixes_are_accepted_and_normalised() -> None:
    assert check_preferred_sources(None) == []
    assert check_preferred_sources(["Docs.Python.org", " https://peps.python.org/pep-0703/"]) == [
        "docs.python.org",
        "https://peps.python.org/pep-0703/",
    ]
    assert check_preferred_sources("python.org, *.arxiv.org,python.org") == [
        "python.org",
        "*.arxiv.org",
    ]


@pytest.mark.parametrize(
    ("value", "says"),
    [
        (["not a domain"], "neither a domain nor an http(s) address"),
        (["ftp://example.org/"], "neither a domain"),
        ([f"site{n}.example.org" for n in range(21)], "at most 20"),
        (42, "must be a list"),
    ],
)
def test_anything_else_is_refused_saying_what_to_give(value: object, says: str) -> None:
    with pytest.raises(InputError) as raised:
        check_preferred_sources(value)
    assert says in raised.value.message
    assert raised.value.details["field"] == "preferred_sources"
    assert raised.value.remediation


def test_a_domain_covers_its_subdomains_and_a_prefix_its_pages() -> None:
    preferred = ["python.org", "https://example.com/guides/"]
    assert is_preferred("https://docs.python.org/3/library/asyncio.html", preferred)
    assert is_preferred("https://PYTHON.org/about", preferred)
    assert is_preferred("https://example.com/guides/caching", preferred)
    assert not is_preferred("https://notpython.org/", preferred)  # not a subdomain
    assert not is_preferred("https://example.com/blog/caching", preferred)
    assert not is_preferred(None, preferred)
    assert not is_preferred("https://docs.python.org/", [])


class _Unused:
    name = "openai"

    async def complete(self, request: object) -> object:
        raise AssertionError("no call is made while sources are ranked")


@pytest.mark.anyio
async def test_a_preferred_source_gets_the_user_boost_and_protection() -> None:
    state = ResearchState(
        query="How does asyncio schedule tasks?",
        llm_provider="openai",
        llm_model="gpt-4.1-mini",
        options=ResearchOptions(preferred_sources=["docs.python.org"]),
    )
    text = "asyncio schedules tasks on an event loop. " * 40
    sources = [
        Source(title=f"blog {n}", url=f"https://blog{n}.example.org/asyncio", content=text)
        for n in range(6)
    ] + [Source(title="docs", url="https://docs.python.org/3/library/asyncio.html", content=text)]
    state.sources = sources
    fitting = await Fitting.open(ResearchLLM(_Unused(), "gpt-4.1-mini", state, CallLog()), state)

    ready = prepare_round(fitting, sources)

    docs = ready.items[sources[-1].id]
    assert docs.protected and docs.user_priority == 1.0
    assert all(not ready.items[s.id].protected for s in sources[:-1])
    assert docs.priority > max(ready.items[s.id].priority for s in sources[:-1])
    assert sources[-1].id in ready.top  # among the round's best, kept at 30% or more
