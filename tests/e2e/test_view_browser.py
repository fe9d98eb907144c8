"""The research's page in a real browser: Debian's Chromium, driven by Playwright.

Every page is served from a route of the test's own (``http://view.test/``: nothing leaves the
browser), and every test checks that the page asked for nothing else, logged no error and
broke no rule of its content security policy. Screenshots of the finished research in light and
dark are kept under ``test-artifacts/view/`` (and, with ``FOUNDRY_MCP_DOCS_PICTURES=1``, in
``docs/images/``). Without Chromium or Playwright the tests skip, saying so; with
``FOUNDRY_MCP_REQUIRE_CHROMIUM=1`` (``.ci/run``) they fail instead.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from pathlib import Path
from typing import Any

import anyio
import pytest

from foundry_mcp.config import Settings
from foundry_mcp.runtime import research_runtime
from foundry_mcp.view import ViewData, render_page, view_data, view_of
from tests.browser import FLAGS, chromium_or_skip
from tests.view_states import (
    CHECKED,
    HOSTILE_QUOTE,
    HOSTILE_TITLE,
    finished_research,
    hostile_research,
    quote_of,
    running_research,
)

PICTURES_ENV = "FOUNDRY_MCP_DOCS_PICTURES"
ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts" / "view"
URL = "http://view.test/research"
# What the violations of the page's policy and its scripts' errors are collected in: added
# before the page's own scripts run, by the browser (a policy does not apply to it).
WATCH = """
window.__violations = [];
document.addEventListener("securitypolicyviolation", (e) => {
  window.__violations.push(e.violatedDirective + " " + e.blockedURI);
});
"""
# Each citation of the finished report, in order: its number, the sentence and the source.
CITATIONS = [
    (1, CHECKED[0][0], "src-beta0002", "Beta field test", "Supported"),
    (2, CHECKED[1][0], "src-alpha001", "Alpha study", "Partly supported"),
    (3, CHECKED[1][0], "src-gamma003", "Gamma 2026 update", "Partly supported"),
    (3, CHECKED[2][0], "src-gamma003", "Gamma 2026 update", "Supported"),
]


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One headless Chromium for the module."""
    executable = chromium_or_skip()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable, args=FLAGS)
        yield launched
        launched.close()


class Opened:
    """A page of the view in the browser, with what it asked for and what went wrong."""

    def __init__(self, page: Any) -> None:
        self.page = page
        self.requests: list[str] = []
        self.problems: list[str] = []
        page.on("request", lambda request: self.requests.append(request.url))
        page.on("pageerror", lambda error: self.problems.append(f"page error: {error}"))
        page.on(
            "console",
            lambda message: (
                self.problems.append(f"console {message.type}: {message.text}")
                if message.type in ("error", "warning")
                else None
            ),
        )

    def assert_clean(self) -> None:
        """Nothing asked of the network but the page, no error, no policy violated."""
        assert self.requests == [URL]
        assert self.problems == []
        assert self.page.evaluate("window.__violations") == []


@pytest.fixture
def open_view(browser: Any) -> Iterator[Callable[..., Opened]]:
    contexts: list[Any] = []

    def open_(html: str, scheme: str = "light") -> Opened:
        context = browser.new_context(color_scheme=scheme, viewport={"width": 900, "height": 900})
        contexts.append(context)
        page = context.new_page()
        opened = Opened(page)
        page.add_init_script(WATCH)
        page.route(
            "http://view.test/**",
            lambda route: route.fulfill(body=html, content_type="text/html; charset=utf-8"),
        )
        page.goto(URL)
        return opened

    yield open_
    for context in contexts:
        context.close()


def _keep(page: Any, name: str, *, full_page: bool = True) -> Path:
    """A screenshot kept as a test artefact (and, asked for, as a picture of the docs)."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    picture = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(picture), full_page=full_page)
    if os.environ.get(PICTURES_ENV) == "1":
        images = ROOT / "docs" / "images"
        images.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(picture, images / picture.name)
    return picture


def _dialog_text(page: Any) -> str:
    dialog = page.locator("dialog#cite")
    dialog.wait_for(state="visible")
    return str(dialog.inner_text())


def test_every_citation_of_a_finished_research_opens_its_quote(
    open_view: Callable[..., Opened],
) -> None:
    data = view_of(finished_research())
    view = open_view(render_page(data, feed="embedded"))
    page = view.page
    buttons = page.locator("#report button.cite")

    assert buttons.count() == len(re.findall(r"\[\d+\]", data.report or "")) == len(CITATIONS)
    for index, (number, sentence, source_id, title, verdict) in enumerate(CITATIONS):
        button = buttons.nth(index)
        assert button.inner_text() == f"[{number}]"
        for open_it in ("click", "Enter"):
            if open_it == "click":
                button.click()
            else:
                button.focus()
                page.keyboard.press("Enter")
            shown = _dialog_text(page)
            assert title in shown and verdict in shown and sentence in shown
            assert quote_of(sentence, source_id) in shown
            page.keyboard.press("Escape")
            page.locator("dialog#cite").wait_for(state="hidden")
            # Focus goes back to the citation it came from.
            assert page.evaluate("document.activeElement.getAttribute('data-key')") == (
                button.get_attribute("data-key")
            )
    # Newer data leaves an open citation open, its quote shown and the focus in it.
    buttons.nth(1).click()
    newer = data.model_copy(deep=True)
    newer.usage.total.cost_usd = 1.5
    page.evaluate("FoundryView.render", newer.model_dump(mode="json"))
    assert page.locator("header .cost").inner_text() == "$1.50"
    assert quote_of(CITATIONS[1][1], CITATIONS[1][2]) in _dialog_text(page)
    assert page.evaluate("document.activeElement.closest('dialog') !== null")
    page.keyboard.press("Escape")
    # A follow-up's citation shows the passage its answer rests on.
    page.locator("#followups button.cite").click()
    assert "COP 1.9 at -25 C" in _dialog_text(page)
    link = page.locator("dialog#cite a")
    assert link.get_attribute("href") == "https://alpha.example/cold"
    assert link.get_attribute("rel") == "noopener noreferrer"
    view.assert_clean()


def test_markup_and_scripts_in_titles_quotes_and_report_show_as_text(
    open_view: Callable[..., Opened],
) -> None:
    view = open_view(render_page(view_of(hostile_research()), feed="embedded"))
    page = view.page

    assert page.locator("h1").inner_text() == "<b>Heat pumps</b> & <i>cold</i>?"
    assert HOSTILE_TITLE in page.locator("#sources").inner_text()
    assert '<img src=x onerror="window.__pwned=5">' in page.locator("#report").inner_text()
    page.locator("#report button.cite").first.click()
    assert HOSTILE_QUOTE.split(" \u2028")[0] in _dialog_text(page)
    page.keyboard.press("Escape")
    assert page.evaluate("window.__pwned") is None
    assert page.evaluate("document.images.length") == 0
    assert page.evaluate("document.scripts.length") == 2  # the data and the view's own
    hrefs = page.evaluate("[...document.querySelectorAll('a[href]')].map(a => a.href)")
    assert hrefs and all(h.startswith("https://") or h == f"{URL}#main" for h in hrefs)
    view.assert_clean()


def _running(step: int) -> ViewData:
    """The running research at ``step``, 45 s of its run later each."""
    state = running_research(step)
    assert state.started_at is not None
    return view_of(state, now=state.started_at + timedelta(seconds=45 * (step + 1)))


def test_a_running_research_updates_in_place_as_it_progresses(
    open_view: Callable[..., Opened],
) -> None:
    snapshots = [_running(step).model_dump(mode="json") for step in range(4)]
    view = open_view(render_page(_running(0), feed="embedded"))
    page = view.page

    def progress() -> list[float]:
        return [
            float(v)
            for v in page.eval_on_selector_all("#plan progress", "p => p.map(x => x.value)")
        ]

    assert progress() == [0.25, 0.0, 0.0]
    assert "0 of 3 parts done" in page.locator("#plan").inner_text()
    page.evaluate("FoundryView.render", snapshots[1])
    assert progress()[0] == 1.0 and 0 < progress()[1] < 1
    # A reader who opened the first part's findings and stands on them keeps both.
    summary = page.locator("#plan details summary").first
    summary.click()
    _keep(page, "view-running")
    costs = [page.locator("header .cost").inner_text()]
    for step in (2, 3):
        page.evaluate("FoundryView.render", snapshots[step])
        costs.append(page.locator("header .cost").inner_text())
        assert page.evaluate("document.activeElement.textContent") == "Findings so far"
        assert page.locator("#plan details").first.get_attribute("open") is not None
    assert progress() == [1.0, 1.0, 1.0]
    assert costs == ["$0.0300", "$0.0500", "$0.0700"]
    assert page.locator("header .elapsed").inner_text() == "3 min 0 s"
    assert "3 of 3 parts done" in page.locator("#plan").inner_text()
    assert page.locator("#announce").inner_text() == (
        "Research completed, phase synthesis (4 of 5), 3 of 3 parts done."
    )
    # Done, a feed that can ask the server offers the follow-up question, and is asked.
    assert page.locator("form.ask").is_hidden()
    page.evaluate("window.asked = []; FoundryView.onAction(r => { window.asked.push(r); })")
    page.locator("#ask-query").fill("And in Norway?")
    page.locator("form.ask button").click()
    assert page.evaluate("window.asked") == [{"action": "ask", "query": "And in Norway?"}]
    view.assert_clean()


def test_a_research_run_against_the_fakes_has_each_citation_tied_to_its_checked_sentence(
    open_view: Callable[..., Opened], settings: Settings
) -> None:
    async def run() -> ViewData:
        async with research_runtime(settings, warm=False, serving=False) as service:
            started = await service.start("How do heat pumps work in cold climates?")
            status = {"status": "queued"}
            while status["status"] in ("queued", "running"):
                status = await service.status(started["research_id"], wait=True, wait_timeout=5)
            return await view_data(service, started["research_id"])

    # Playwright's own loop runs in this thread: the research runs in another.
    with ThreadPoolExecutor(1) as thread:
        data = thread.submit(anyio.run, run).result()
    view = open_view(render_page(data, feed="embedded"))
    buttons = view.page.locator("#report button.cite")

    assert data.status == "completed" and data.claims
    assert buttons.count() == len(re.findall(r"\[\d+\]", data.report or "")) > 0
    # The page found the checked sentence of every citation the writer made.
    labels = [buttons.nth(i).get_attribute("aria-label") or "" for i in range(buttons.count())]
    assert all(label.endswith("(Supported)") for label in labels), labels
    buttons.first.click()
    assert data.claims[0].quotes[0].text in _dialog_text(view.page)
    view.assert_clean()


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_screenshots_of_the_finished_research_in_light_and_dark(
    open_view: Callable[..., Opened], scheme: str
) -> None:
    view = open_view(render_page(view_of(finished_research()), feed="embedded"), scheme)
    page = view.page
    background = page.evaluate("getComputedStyle(document.documentElement).backgroundColor")
    assert background == ("rgb(255, 255, 255)" if scheme == "light" else "rgb(13, 17, 23)")

    picture = _keep(page, f"view-{scheme}")
    page.locator("#report button.cite").nth(1).click()
    _dialog_text(page)
    _keep(page, f"view-citation-{scheme}", full_page=False)
    assert picture.stat().st_size > 10_000
    view.assert_clean()


@pytest.mark.parametrize(("scheme", "theme"), [("light", "dark"), ("dark", "light")])
def test_a_host_theme_wins_over_the_browsers(
    open_view: Callable[..., Opened], scheme: str, theme: str
) -> None:
    """An MCP Apps host sets data-theme from its own context: the frame follows the host, not
    the browser's preference."""
    view = open_view(render_page(view_of(finished_research()), feed="embedded"), scheme)
    page = view.page
    page.evaluate(f"document.documentElement.dataset.theme = '{theme}'")
    background = page.evaluate("getComputedStyle(document.documentElement).backgroundColor")
    assert background == ("rgb(13, 17, 23)" if theme == "dark" else "rgb(255, 255, 255)")
    view.assert_clean()
