"""Main-text extraction: the whole trafilatura chain imports, and a broken install is loud."""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator

import pytest

from foundry_mcp.providers.pages import extract

PAGE = """<html><head><title>Cold-climate heat pumps</title></head><body>
<nav><a href="/">Home</a> | <a href="/shop">Shop the catalogue</a> | <a href="/c">Contact</a></nav>
<article><h1>Cold-climate heat pumps</h1>
<p>Field trials in Norway showed that air-source heat pumps kept a seasonal coefficient of
performance above 2.5 through a winter whose coldest week averaged minus eighteen degrees.</p>
<p>Defrost cycles cost between five and ten percent of the delivered heat in humid weather, and
the installers interviewed said careful sizing mattered more than the brand of the unit.</p>
<p>Households that kept a wood stove as backup used it on fewer than ten days of the season.</p>
</article>
<footer>Copyright 2026 Example Heating Ltd. All rights reserved. Shop the catalogue.</footer>
</body></html>"""


@pytest.fixture
def fresh_import_state() -> Iterator[None]:
    """Forget whether trafilatura imported, before and after the test."""
    extract._import_problem.clear()
    yield
    extract._import_problem.clear()


def test_the_whole_extractor_chain_imports(fresh_import_state: None) -> None:
    import lxml_html_clean  # noqa: F401
    import trafilatura  # noqa: F401

    assert extract.extractor_problem() is None
    text = extract.html_to_text(PAGE, "https://example.org/heat-pumps")
    assert "seasonal coefficient of performance above 2.5" in " ".join(text.split())
    assert "Shop the catalogue" not in text  # boilerplate gone: trafilatura did the work


def test_a_failed_import_is_one_warning_and_pages_are_still_read(
    fresh_import_state: None, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # What production sees when lxml lacks its HTML cleaner: `import trafilatura` raises.
    monkeypatch.setitem(sys.modules, "trafilatura", None)
    with caplog.at_level(logging.WARNING, logger=extract.__name__):
        first = extract.html_to_text(PAGE)
        second = extract.html_to_text(PAGE)
    assert "seasonal coefficient of performance above 2.5" in " ".join(first.split())
    assert first == second
    assert "Shop the catalogue" in first  # the simpler extractor keeps the menu
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "trafilatura cannot be imported" in warnings[0].getMessage()
    problem = extract.extractor_problem()
    assert problem is not None and "lxml_html_clean" in problem
