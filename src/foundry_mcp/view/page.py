"""The research's page as one self-contained HTML file (:func:`render_page`).

Its style and scripts are inline and allowed by their sha256 hashes (computed here) under a
content security policy that allows nothing else: no request of its own but, for the polled
feed, to its own origin. The data rides in a ``<script type="application/json">`` whose text
cannot close it: ``<``, ``>``, ``&`` and the line separators U+2028/9 are JSON escapes there.
"""

from __future__ import annotations

import base64
import hashlib
import html
import re
from functools import cache
from pathlib import Path
from typing import Literal

from foundry_mcp.view.model import ViewData

Feed = Literal["embedded", "polled", "app"]

ASSETS = Path(__file__).resolve().parent / "assets"
# The script each feed adds after the view's (written with the browser serving and the MCP App);
# a feed whose script is not there yet gets none.
FEED_SCRIPTS: dict[str, str | None] = {
    "embedded": None,
    "polled": "polled.js",
    "app": "app_bridge.js",
}
DATA_ELEMENT_ID = "foundry-data"
_PLACEHOLDER = re.compile(r"\{\{(csp|title|style|data|scripts)\}\}")
_JSON_ESCAPES = str.maketrans(
    {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
)


@cache
def asset(name: str) -> str | None:
    """The text of ``assets/<name>``, or None when there is no such file."""
    path = ASSETS / name
    return path.read_text(encoding="utf-8") if path.is_file() else None


def _required(name: str) -> str:
    text = asset(name)
    if text is None:
        raise FileNotFoundError(f"the view's asset {name} is missing from {ASSETS}")
    return text


def embedded_json(data: ViewData) -> str:
    """``data`` as JSON that is safe inside a ``<script>`` element of an HTML page."""
    return data.model_dump_json().translate(_JSON_ESCAPES)


def sha256_source(text: str) -> str:
    """The CSP source that allows an inline element whose text is ``text``."""
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return f"'sha256-{base64.b64encode(digest).decode('ascii')}'"


def content_security_policy(style: str, scripts: list[str], feed: Feed) -> str:
    """The page's policy: its own inline style and scripts, data: images, and for the polled
    feed only, requests to its own origin."""
    directives = [
        "default-src 'none'",
        f"style-src {sha256_source(style)}",
        "script-src " + " ".join(sha256_source(script) for script in scripts),
        "img-src data:",
        "base-uri 'none'",
        "form-action 'none'",
    ]
    if feed == "polled":
        directives.append("connect-src 'self'")
    return "; ".join(directives)


def render_page(data: ViewData | None, *, feed: Feed) -> str:
    """The page of a research: ``data`` embedded (or none, for a feed that brings it), the
    view's style and script, and ``feed``'s script."""
    if feed not in FEED_SCRIPTS:
        raise ValueError(f"unknown feed {feed!r}; one of {', '.join(FEED_SCRIPTS)}")
    style = _required("view.css")
    scripts = [_required("view.js")]
    feed_script = FEED_SCRIPTS[feed]
    if feed_script is not None and (text := asset(feed_script)) is not None:
        scripts.append(text)
    for text in (style, *scripts):
        # Ours, but a slip here would end the element early and let the rest run as markup.
        if re.search(r"</(script|style)", text, re.IGNORECASE):
            raise ValueError("a view asset holds a closing </script> or </style> tag")
    data_block = (
        f'<script type="application/json" id="{DATA_ELEMENT_ID}">{embedded_json(data)}</script>'
        if data is not None
        else ""
    )
    values = {
        "csp": html.escape(content_security_policy(style, scripts, feed)),
        "title": html.escape(f"{data.question[:120]} · research" if data else "Research"),
        "style": style,
        "data": data_block,
        "scripts": "\n".join(f"<script>{text}</script>" for text in scripts),
    }
    # One pass, so that nothing substituted is read again as a placeholder.
    return _PLACEHOLDER.sub(lambda m: values[m.group(1)], _required("view.html"))
