"""The research's page without a browser: its data from a state and from the service, its
bounds, the embedded JSON that no text can break out of, the policy's hashes and its size."""

from __future__ import annotations

import base64
import hashlib
import json
import re

import pytest

from foundry_mcp.config import Settings
from foundry_mcp.errors import ResearchNotFoundError
from foundry_mcp.research.models import (
    BranchStatus,
    ClaimCheck,
    EvidenceQuote,
    Finding,
    Hypothesis,
    HypothesisVerdict,
    ReportMetadata,
    Source,
    SubQuery,
    SubQueryStatus,
)
from foundry_mcp.research.principal import Principal
from foundry_mcp.runtime import research_runtime
from foundry_mcp.view import data as view_data_module
from foundry_mcp.view import page as view_page
from foundry_mcp.view import render_page, view_data, view_of
from tests.support import stored_state
from tests.view_states import (
    CHECKED,
    HOSTILE_QUOTE,
    HOSTILE_TITLE,
    finished_research,
    hostile_research,
    quote_of,
    running_research,
)

NEW_FINDING = "2026 models reach COP 1.8 at -30 C."
DATA_BLOCK = re.compile(r'<script type="application/json" id="foundry-data">(.*?)</script>', re.S)
INLINE = re.compile(r"<(script|style)>(.*?)</\1>", re.S)


def _csp(page: str) -> dict[str, list[str]]:
    meta = re.search(r'http-equiv="Content-Security-Policy" content="([^"]*)"', page)
    assert meta is not None
    return {
        part.split()[0]: part.split()[1:]
        for part in meta.group(1).replace("&#x27;", "'").split("; ")
    }


def _hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


# --------------------------------------------------------------------------- the data


def test_a_finished_research_reads_as_the_page_shows_it() -> None:
    data = view_of(finished_research())

    assert (data.status, data.live, data.version, data.mode) == ("completed", False, 3, "simple")
    assert data.report is not None and "## Sources" not in data.report  # the page lists them
    assert "[3]" in data.report
    assert [(c.sentence, c.verdict, c.numbers) for c in data.claims] == [
        (CHECKED[0][0], "supported", [1]),
        (CHECKED[1][0], "partial", [2, 3]),
        (CHECKED[2][0], "supported", [3]),
    ]
    assert [(q.number, q.text) for q in data.claims[1].quotes] == [
        (2, quote_of(CHECKED[1][0], "src-alpha001")),
        (3, quote_of(CHECKED[1][0], "src-gamma003")),
    ]
    assert data.verdicts == {"supported": 2, "partial": 1}
    # Cited first, in the report's numbering; then what was found and not cited.
    assert [(s.number, s.title) for s in data.sources] == [
        (1, "Beta field test"),
        (2, "Alpha study"),
        (3, "Gamma 2026 update"),
        (None, "Delta forum"),
    ]
    beta, alpha, gamma = (s.read for s in data.sources[:3])
    assert alpha is not None and (alpha.passages, alpha.passages_read, alpha.tokens) == (
        10,
        4,
        1200,
    )
    assert not alpha.whole and beta is not None and beta.whole and gamma is None
    assert [p.phase for p in data.usage.by_phase] == [
        "planning",
        "gathering",
        "analysis",
        "synthesis",
    ]
    assert data.usage.total.cost_usd == pytest.approx(0.046)
    assert data.usage.search_calls == 9
    assert [(v.number, v.label) for v in data.versions] == [
        (1, "research"),
        (2, "rewrite: brief for the CFO"),
        (3, "refresh"),
    ]
    assert data.follow_ups[0].numbers == [2] and data.follow_ups[0].quotes[0].number == 2
    assert data.plan.brief is not None
    assert [(p.kind, p.status, p.sources, p.findings) for p in data.plan.parts] == [
        ("search", "completed", 2, ["Heat pumps keep a COP above 2 at -15 C.", NEW_FINDING]),
        ("search", "completed", 2, ["Field tests show 30% lower bills in Norway."]),
    ]
    assert data.elapsed_s == 192.0
    assert data.omitted == []


def test_a_running_research_shows_its_parts_progress_and_findings() -> None:
    before, after = view_of(running_research(1)), view_of(running_research(2))

    assert before.live and before.status == "running"
    assert [p.status for p in before.plan.parts] == ["completed", "researching", "pending"]
    assert [p.kind for p in before.plan.parts] == ["sub_question"] * 3
    done, running, waiting = (p.progress for p in before.plan.parts)
    assert done == 1.0 and 0 < running < 1 and waiting == 0.0
    assert before.plan.parts[0].findings == ["Finding 0 of part 0", "Finding 1 of part 0"]
    assert before.plan.parts[1].detail == "analysis, iteration 1 of 2"
    assert [p.progress for p in after.plan.parts][:2] == [1.0, 1.0]
    assert after.usage.total.cost_usd > before.usage.total.cost_usd
    assert after.findings == 4 > before.findings == 2
    assert view_of(running_research(3)).live is False


def test_the_parts_of_a_simple_research_are_its_searches_and_of_another_its_hypotheses() -> None:
    found = Source(id="src-found001", title="A page")
    simple = stored_state(
        sub_queries=[
            SubQuery(query="heat pump cop", status=SubQueryStatus.COMPLETED, source_ids=[found.id]),
            SubQuery(query="heat pump bills"),
        ],
        sources=[found],
        findings=[Finding(content="COP 3", source_ids=[found.id])],
    )
    parts = view_of(simple).plan.parts
    assert [(p.kind, p.text, p.status, p.progress, p.findings) for p in parts] == [
        ("search", "heat pump cop", "completed", 1.0, ["COP 3"]),
        ("search", "heat pump bills", "pending", 0.0, []),
    ]
    hypotheses = stored_state(
        hypotheses=[
            Hypothesis(
                statement="Cold kills efficiency",
                status=BranchStatus.COMPLETED,
                verdict=HypothesisVerdict.PARTIALLY_SUPPORTED,
                final_confidence=40,
            )
        ]
    )
    (part,) = view_of(hypotheses).plan.parts
    assert (part.kind, part.progress, part.detail) == (
        "hypothesis",
        1.0,
        "partially supported, confidence 40%",
    )


def test_a_huge_research_makes_a_bounded_page_and_says_what_it_left_out() -> None:
    sources = [Source(id=f"src-{i:08x}", title="T" * 5_000) for i in range(1_000)]
    ids = [s.id for s in sources]
    quote = EvidenceQuote(source_id=ids[0], text="q" * 20_000, start=0, end=20_000)
    state = stored_state(
        sources=sources,
        report="word [1] " * 200_000,
        report_metadata=ReportMetadata(cited_source_ids=ids),
        claim_checks=[ClaimCheck(sentence="s" * 10_000, source_ids=ids[:50], quotes=[quote] * 10)]
        * 2_000,
        findings=[Finding(content="f" * 5_000)] * 500,
        warnings=[f"warning {i}" for i in range(500)],
    )

    data = view_of(state)
    size = len(render_page(data, feed="embedded").encode())

    assert size < 1_500_000, size
    assert len(data.claims) == view_data_module.MAX_CLAIMS
    assert len(data.sources) == view_data_module.MAX_SOURCES
    assert all(
        len(q.text) <= view_data_module.MAX_QUOTE_CHARS for c in data.claims for q in c.quotes
    )
    assert all(len(c.quotes) <= view_data_module.MAX_QUOTES_PER_CLAIM for c in data.claims)
    assert len(data.warnings) <= view_data_module.MAX_LIST
    said = " ".join(data.omitted)
    assert "report is cut" in said and "checked sentences" in said and "sources" in said
    assert "20 of 500 warnings" in said


# --------------------------------------------------------------------------- the service


@pytest.mark.anyio
async def test_the_service_gives_the_page_its_data_and_hides_another_principals(
    settings: Settings,
) -> None:
    state = finished_research()
    state.principal = "alice"
    async with research_runtime(settings, warm=False, serving=False) as service:
        service.store.save(state)
        data = await view_data(service, state.id)
        mine = await view_data(service, state.id, Principal("alice"))
        with pytest.raises(ResearchNotFoundError):
            await view_data(service, state.id, Principal("bob"))

    assert data == mine
    assert data.research_id == state.id and data.status == "completed"
    assert len(data.claims) == 3 and data.claims[0].quotes[0].number == 1
    assert [v.number for v in data.versions] == [1, 2, 3]


# --------------------------------------------------------------------------- the page


def test_hostile_text_cannot_leave_the_embedded_json() -> None:
    data = view_of(hostile_research())
    page = render_page(data, feed="embedded")

    (block,) = DATA_BLOCK.findall(page)
    assert not set(block) & {"<", ">", "&", "\u2028", "\u2029"}
    assert json.loads(block) == data.model_dump(mode="json")
    assert HOSTILE_TITLE in json.loads(block)["sources"][1]["title"]
    assert json.loads(block)["claims"][0]["quotes"][0]["text"] == HOSTILE_QUOTE
    # Only the data and the view's own script; the question is escaped in the title.
    assert len(re.findall(r"<script", page)) == 2
    assert "<title>&lt;b&gt;Heat pumps&lt;/b&gt; &amp; &lt;i&gt;cold" in page


@pytest.mark.parametrize("feed", ["embedded", "polled", "app"])
def test_the_policy_allows_exactly_the_pages_own_inline_style_and_scripts(
    feed: view_page.Feed, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = view_page.asset
    feeds = {"polled.js": "window.polled = 1;", "app_bridge.js": None}  # the bridge not written
    monkeypatch.setattr(
        view_page, "asset", lambda name: feeds[name] if name in feeds else real(name)
    )

    page = render_page(view_of(finished_research()), feed=feed)
    policy = _csp(page)
    inline = INLINE.findall(page)

    scripts = [text for tag, text in inline if tag == "script"]
    assert sorted(policy["script-src"]) == sorted(_hash(text) for text in scripts)
    assert policy["style-src"] == [_hash(text) for tag, text in inline if tag == "style"]
    assert policy["default-src"] == ["'none'"] and policy["img-src"] == ["data:"]
    assert "'unsafe-inline'" not in str(policy) and "'unsafe-eval'" not in str(policy)
    assert policy.get("connect-src") == (["'self'"] if feed == "polled" else None)
    assert ("window.polled = 1;" in scripts) == (feed == "polled")
    assert len(scripts) == (2 if feed == "polled" else 1)


def test_a_feed_without_data_gets_the_page_alone_and_it_is_small() -> None:
    empty = render_page(None, feed="app")
    with_data = render_page(view_of(finished_research()), feed="embedded")

    assert 'id="foundry-data"' not in empty and "<title>Research</title>" in empty
    assert len(empty.encode()) < 60_000
    assert len(with_data.encode()) - len(empty.encode()) < 20_000


def test_an_unknown_feed_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown feed"):
        render_page(None, feed="websocket")  # type: ignore[arg-type]


def _schemes() -> dict[str, dict[str, str]]:
    """The colour variables of view.css, light and dark."""
    css = view_page.asset("view.css") or ""
    (light,) = re.findall(r":root \{(.*?)\}", css, re.S)
    (preferred,) = re.findall(r':root:not\(\[data-theme="light"\]\) \{(.*?)\}', css, re.S)
    (dark,) = re.findall(r':root\[data-theme="dark"\] \{(.*?)\}', css, re.S)
    # The system's dark and a host's dark are the same colours.
    assert preferred.split() == [w for w in dark.split() if w not in ("color-scheme:", "dark;")]
    return {
        name: dict(re.findall(r"--([\w-]+):\s*(#[0-9a-f]{6})", block))
        for name, block in (("light", light), ("dark", dark))
    }


def _contrast(one: str, two: str) -> float:
    def luminance(colour: str) -> float:
        channels = [int(colour[i : i + 2], 16) / 255 for i in (1, 3, 5)]
        r, g, b = (c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels)
        return 0.2126 * r + 0.7152 * g + 0.0722 * b

    high, low = sorted((luminance(one), luminance(two)), reverse=True)
    return (high + 0.05) / (low + 0.05)


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_text_and_controls_meet_the_contrast_of_wcag_aa(scheme: str) -> None:
    colours = _schemes()[scheme]
    text = [("fg", "bg"), ("muted", "bg"), ("link", "bg"), ("fg", "panel"), ("muted", "panel")]
    text += [("link", "panel"), ("bad-fg", "bg")]
    text += [(f"{kind}-fg", f"{kind}-bg") for kind in ("ok", "part", "bad", "none", "run")]
    for fore, back in text:
        assert _contrast(colours[fore], colours[back]) >= 4.5, (scheme, fore, back)
    for fore, back in [("focus", "bg"), ("bar", "bg"), ("bar", "bar-bg")]:  # not text: 3:1
        assert _contrast(colours[fore], colours[back]) >= 3, (scheme, fore, back)
