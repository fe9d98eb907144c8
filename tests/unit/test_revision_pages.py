"""A cited page read again: the same, changed, moved, gone or unread (revision/pages.py)."""

from __future__ import annotations

import pytest

from foundry_mcp.config import FetchSettings
from foundry_mcp.providers.pages.fetch import FetchResult, PageFetcher
from foundry_mcp.research.revision.pages import (
    PageState,
    added_text,
    check_page,
    digest,
    refused_status,
    removed_keys,
    text_changed,
    touches,
)
from tests.fakes import FakeResponse, fake_pages

URL = "https://caches.example.org/valkey"
OLD = (
    "Valkey evicted a key in 15 microseconds at the 99th percentile.\n\n"
    "The test ran on eight cores with one million keys. Updated: May."
)


def read(text: str | None = None, *, final_url: str = URL, error: str | None = None) -> FetchResult:
    return FetchResult(url=URL, ok=text is not None, text=text, final_url=final_url, error=error)


def test_spacing_case_and_line_breaks_are_no_change() -> None:
    again = "valkey evicted a key in 15 microseconds at the 99th percentile. The test ran on\n" + (
        "eight   cores with one million keys. Updated: May."
    )
    assert digest(OLD) != digest(again)
    assert not text_changed(OLD, again)
    assert check_page(URL, OLD, read(again)).state is PageState.SAME


def test_a_short_line_changing_alone_is_no_change() -> None:
    assert not text_changed(OLD, OLD.replace("Updated: May.", "Updated: June."))


def test_a_changed_figure_and_an_added_sentence_are_a_change() -> None:
    new = OLD.replace("15 microseconds", "40 microseconds") + (
        " A second run with two million keys doubled the p99."
    )
    assert text_changed(OLD, new)
    check = check_page(URL, OLD, read(new))
    assert check.state is PageState.CHANGED and check.text == new
    added = added_text(OLD, new)
    assert added == (
        "Valkey evicted a key in 40 microseconds at the 99th percentile. […] "
        "A second run with two million keys doubled the p99."
    )
    removed = removed_keys(OLD, new)
    assert removed == {"valkey evicted a key in 15 microseconds at the 99th percentile"}
    # An excerpt cut mid-sentence still shows it touches the removed sentence.
    assert touches("… evicted a key in 15 microseconds at the 99th percentile. The test", removed)
    assert not touches("The test ran on eight cores with one million keys.", removed)


def test_a_redirect_elsewhere_is_a_move_an_upgrade_is_not() -> None:
    moved = check_page(URL, OLD, read(OLD, final_url="https://new.example.org/valkey"))
    assert moved.state is PageState.MOVED and moved.moved_to == "https://new.example.org/valkey"
    upgraded = "https://www.caches.example.org/valkey/"
    assert check_page(URL.replace("https", "http"), OLD, read(OLD, final_url=upgraded)).state is (
        PageState.SAME
    )


@pytest.mark.parametrize(
    ("error", "state"),
    [
        ("the server answered HTTP 404", PageState.GONE),
        ("the server answered HTTP 410", PageState.GONE),
        ("the server answered HTTP 503", PageState.UNREAD),
        ("network error (ConnectError)", PageState.UNREAD),
        ("timed out after 10 s", PageState.UNREAD),
    ],
)
def test_only_404_and_410_say_a_page_is_gone(error: str, state: PageState) -> None:
    assert check_page(URL, OLD, read(error=error)).state is state


@pytest.mark.anyio
async def test_the_fetchers_refusal_is_read_as_its_status() -> None:
    """Pins the fetcher's wording for a refused page, which :func:`refused_status` reads."""
    fetcher = PageFetcher(FetchSettings(allow_private_networks=True, timeout=5.0))
    try:
        with fake_pages({"/gone": FakeResponse(410, body="gone")}) as server:
            url = server.base_url + "/gone"
            gone = await fetcher.fetch(url)
            missing = await fetcher.fetch(server.base_url + "/never-there")
    finally:
        await fetcher.aclose()
    assert refused_status(gone) == 410
    assert refused_status(missing) == 404
    assert check_page(url, OLD, gone).state is PageState.GONE
