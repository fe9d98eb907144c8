"""Source bounds: the domains and publication days a research's sources may have.

The model normalises what a caller writes and refuses what is not a domain or not a range;
``allows_url`` / ``allows_date`` / ``apply_bounds`` decide which results are kept.
"""

from __future__ import annotations

from datetime import date
from typing import Any

import pytest
from pydantic import ValidationError

from foundry_mcp.providers.search.base import Publication, SearchResult, native_bounds_of
from foundry_mcp.providers.search.bounds import (
    BOUND_NAMES,
    MAX_DOMAINS,
    SourceBounds,
    apply_bounds,
    normalise_domain,
)
from foundry_mcp.providers.search.google import GoogleSearch
from foundry_mcp.providers.search.keyless import KeylessSearch, bounded_query, timelimit_for
from foundry_mcp.providers.search.local import LocalDocuments
from foundry_mcp.providers.search.semantic_scholar import SemanticScholarSearch
from foundry_mcp.providers.search.tavily import TavilySearch


def _result(url: str | None, publication: Publication | None = None) -> SearchResult:
    return SearchResult(title="t", url=url, publication=publication)


# --------------------------------------------------------------------------- the model


@pytest.mark.parametrize(
    ("written", "domain"),
    [
        ("docs.python.org", "docs.python.org"),
        ("  Docs.Python.ORG  ", "docs.python.org"),
        ("https://www.Example.com/some/path?q=1#top", "example.com"),
        ("http://example.com:8080", "example.com"),
        ("www.example.co.uk.", "example.co.uk"),
        ("example.com/blog", "example.com"),
        ("*.example.org", "example.org"),
        ("bücher.de", "xn--bcher-kva.de"),
    ],
)
def test_domains_are_normalised(written: str, domain: str) -> None:
    assert normalise_domain(written) == domain
    assert SourceBounds(include_domains=[written]).include_domains == [domain]


@pytest.mark.parametrize(
    "junk",
    ["", "   ", "localhost", "not a domain", "exa_mple.com", "-bad.com", "192.168.0.1", "a..b"],
)
def test_junk_is_refused_with_what_is_expected(junk: str) -> None:
    with pytest.raises(ValidationError) as caught:
        SourceBounds(exclude_domains=[junk])
    assert "expected a domain name such as docs.python.org" in str(caught.value)


def test_domains_are_kept_once_in_order_and_at_most_fifty() -> None:
    bounds = SourceBounds(include_domains=["b.org", "https://a.org/x", "www.b.org", "a.org"])
    assert bounds.include_domains == ["b.org", "a.org"]
    assert SourceBounds(include_domains="a.org, b.org").include_domains == ["a.org", "b.org"]
    many = [f"site{n}.example" for n in range(MAX_DOMAINS)]
    assert len(SourceBounds(exclude_domains=many).exclude_domains) == MAX_DOMAINS
    with pytest.raises(ValidationError, match="expected at most 50"):
        SourceBounds(exclude_domains=[*many, "one-more.example"])


def test_a_date_range_must_not_end_before_it_starts() -> None:
    same_day = SourceBounds(published_after=date(2024, 5, 1), published_before=date(2024, 5, 1))
    assert same_day.published_after == same_day.published_before
    with pytest.raises(ValidationError, match="later than published_before"):
        SourceBounds(published_after=date(2024, 5, 2), published_before=date(2024, 5, 1))
    parsed = SourceBounds.model_validate({"published_after": "2023-01-31"})
    assert parsed.published_after == date(2023, 1, 31)


def test_excluding_an_included_domain_entirely_is_refused() -> None:
    with pytest.raises(ValidationError, match=r"excludes the included 'docs\.python\.org'"):
        SourceBounds(include_domains=["docs.python.org"], exclude_domains=["python.org"])
    # Excluding a part of an included domain is what exclusions are for.
    allowed = SourceBounds(include_domains=["python.org"], exclude_domains=["bugs.python.org"])
    assert allowed.allows_url("https://docs.python.org/3/")
    assert not allowed.allows_url("https://bugs.python.org/issue1")


def test_bounds_are_frozen_and_know_when_they_are_empty() -> None:
    bounds = SourceBounds()
    assert bounds.empty and bounds.given == frozenset()
    with pytest.raises(ValidationError):
        bounds.include_domains = ["a.org"]  # type: ignore[misc]
    with pytest.raises(ValidationError):
        SourceBounds(include_domain=["a.org"])  # type: ignore[call-arg]
    dated = SourceBounds(published_before=date(2020, 1, 1), exclude_domains=["a.org"])
    assert not dated.empty
    assert dated.given == {"published_before", "exclude_domains"}


# --------------------------------------------------------------------------- the checks


def test_a_subdomain_counts_as_its_domain_and_a_lookalike_does_not() -> None:
    bounds = SourceBounds(include_domains=["python.org"])
    assert bounds.allows_url("https://python.org/")
    assert bounds.allows_url("https://docs.python.org/3/library/")
    assert bounds.allows_url("http://WWW.Python.Org./about")
    assert not bounds.allows_url("https://notpython.org/")
    assert not bounds.allows_url("https://python.org.evil.example/")
    excluding = SourceBounds(exclude_domains=["example.com"])
    assert not excluding.allows_url("https://news.example.com/a")
    assert excluding.allows_url("https://example.community/a")


@pytest.mark.parametrize(
    "link",
    [
        "file:///home/me/notes/plan.md#L1-L9",
        "mcp://notes/item-42",
        "/home/me/notes/plan.md",
        "notes/plan.md",
        None,
        "",
    ],
)
def test_links_without_a_web_host_are_never_domain_filtered(link: str | None) -> None:
    bounds = SourceBounds(include_domains=["python.org"], exclude_domains=["docs.python.org"])
    assert bounds.allows_url(link)


def test_dates_compare_by_day_else_by_year_and_unknown_dates_pass() -> None:
    bounds = SourceBounds(published_after=date(2022, 3, 1), published_before=date(2023, 6, 30))
    on = Publication(published=date(2022, 3, 1))
    assert bounds.allows_date(on)
    assert bounds.allows_date(Publication(published=date(2023, 6, 30)))
    assert not bounds.allows_date(Publication(published=date(2022, 2, 28)))
    assert not bounds.allows_date(Publication(year=2023, published=date(2023, 7, 1)))
    # Known only by its year: the year is compared with the years of the range.
    assert bounds.allows_date(Publication(year=2022))
    assert bounds.allows_date(Publication(year=2023))
    assert not bounds.allows_date(Publication(year=2021))
    assert not bounds.allows_date(Publication(year=2024))
    # Nothing known of the date: allowed.
    assert bounds.allows_date(None)
    assert bounds.allows_date(Publication(authors=["A. Author"], venue="Journal"))


def test_allows_needs_both_the_domain_and_the_date() -> None:
    bounds = SourceBounds(exclude_domains=["spam.example"], published_after=date(2024, 1, 1))
    recent = Publication(published=date(2024, 2, 1))
    assert bounds.allows(_result("https://ok.example/a", recent))
    assert not bounds.allows(_result("https://spam.example/a", recent))
    assert not bounds.allows(_result("https://ok.example/a", Publication(year=2023)))


def test_apply_bounds_rechecks_domains_always_and_dates_only_where_not_native() -> None:
    bounds = SourceBounds(
        exclude_domains=["spam.example"],
        published_after=date(2024, 1, 1),
        published_before=date(2024, 12, 31),
    )
    old = _result("https://ok.example/old", Publication(published=date(2019, 5, 5)))
    new = _result("https://ok.example/new", Publication(published=date(2024, 5, 5)))
    late = _result("https://ok.example/late", Publication(year=2025))
    spam = _result("https://spam.example/new", Publication(published=date(2024, 5, 5)))
    undated = _result("https://ok.example/undated")
    local = _result("file:///notes/a.md")
    results = [old, new, late, spam, undated, local]

    assert apply_bounds(results, bounds) == [new, undated, local]
    assert apply_bounds(results, bounds, frozenset(BOUND_NAMES)) == [
        old,
        new,
        late,
        undated,
        local,
    ]
    assert apply_bounds(results, bounds, frozenset({"published_after"})) == [
        old,
        new,
        undated,
        local,
    ]
    assert apply_bounds(results, None) == results
    assert apply_bounds(results, SourceBounds()) == results


# --------------------------------------------------------------------------- adapters


def test_each_adapter_names_the_bounds_its_service_applies() -> None:
    assert native_bounds_of(TavilySearch) == BOUND_NAMES
    assert native_bounds_of(GoogleSearch) == BOUND_NAMES
    assert native_bounds_of(SemanticScholarSearch) == {"published_after", "published_before"}
    assert native_bounds_of(KeylessSearch) == {"include_domains", "exclude_domains"}
    assert native_bounds_of(LocalDocuments) == frozenset()
    assert native_bounds_of(object()) == frozenset()


@pytest.mark.parametrize(
    ("days_back", "window"),
    [(-3, "d"), (0, "d"), (1, "w"), (6, "w"), (7, "m"), (27, "m"), (28, "y"), (364, "y")],
)
def test_the_keyless_window_is_the_smallest_that_holds_the_start(
    days_back: int, window: str
) -> None:
    today = date(2025, 3, 15)
    after = date.fromordinal(today.toordinal() - days_back)
    assert timelimit_for(after, today) == window


def test_no_keyless_window_beyond_a_year_or_without_a_start() -> None:
    today = date(2025, 3, 15)
    assert timelimit_for(date(2024, 3, 15), today) is None  # 365 days back
    assert timelimit_for(None, today) is None


@pytest.mark.parametrize(
    ("bounds", "query"),
    [
        ({}, "heat pumps"),
        ({"include_domains": ["a.org"]}, "heat pumps site:a.org"),
        ({"include_domains": ["a.org", "b.org"]}, "heat pumps (site:a.org OR site:b.org)"),
        (
            {"include_domains": ["a.org"], "exclude_domains": ["x.a.org", "c.org"]},
            "heat pumps site:a.org -site:x.a.org -site:c.org",
        ),
    ],
)
def test_the_keyless_query_carries_the_domain_rules(bounds: dict[str, Any], query: str) -> None:
    assert bounded_query("heat pumps", SourceBounds(**bounds)) == query
