"""The browser the view's tests drive: the distribution's Chromium, through Playwright.

Chromium comes from Debian's package (``.ci/run`` installs it), never from a download of
Playwright's own. Where it or Playwright is missing the tests that need them are skipped,
saying so; under ``FOUNDRY_MCP_REQUIRE_CHROMIUM=1`` (as in ``.ci/run``) they fail instead.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

CHROMIUM = "/usr/bin/chromium"
REQUIRE_ENV = "FOUNDRY_MCP_REQUIRE_CHROMIUM"
# Chromium as root in a closed network: no sandbox of its own, and none of the background
# connections it keeps trying to hosts this machine cannot reach.
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def unavailable(reason: str, variable: str = REQUIRE_ENV) -> None:
    """Skip the test for ``reason``, or fail it when ``variable`` requires what is missing."""
    if os.environ.get(variable) == "1":
        pytest.fail(f"{reason}, and {variable}=1 requires it")
    pytest.skip(reason)


def chromium_or_skip() -> str:
    """The path of Chromium, once it and Playwright are known to be installed."""
    try:
        import playwright  # noqa: F401
    except ImportError:
        unavailable("Playwright is not installed (pip install -e '.[test]')")
    if not os.path.isfile(CHROMIUM):
        unavailable(f"Chromium is not installed at {CHROMIUM} (Debian: apt-get install chromium)")
    return CHROMIUM


@asynccontextmanager
async def async_chromium() -> AsyncIterator[Any]:
    """A headless Chromium for an async test (Playwright's async API)."""
    executable = chromium_or_skip()
    from playwright.async_api import async_playwright

    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(
            executable_path=executable, headless=True, args=FLAGS
        )
        try:
            yield launched
        finally:
            await launched.close()
