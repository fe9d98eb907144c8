"""A research's page: one view of a research, the same in the browser and inside an assistant.

The room's parts, and how they fit:

* :mod:`.model` is the page's vocabulary, :class:`~.model.ViewData`; :mod:`.data` reads it:
  :func:`~.data.view_data` asks the research service (status, then the saved state) and
  :func:`~.data.view_of` builds it from a ``ResearchState``: the plan and its parts with their progress
  and findings, the report with its citations, each cited sentence's verdict and quotes, the
  sources and what was read of each, the cost by phase, the versions and the follow-ups. It is
  bounded: a huge research gives a page of at most about a megabyte, and says what it left out.
* :mod:`.page` assembles the page (:func:`~.page.render_page`): one self-contained HTML file
  from ``assets/`` (view.html, view.css, view.js), its scripts allowed by hash under a strict
  content security policy, and no network request of its own beyond what its feed needs.
* ``assets/view.js`` draws everything from one ViewData JSON: ``window.FoundryView.render(data)``
  (again with newer data, it updates in place, keeping the focus, the open citation and what
  was unfolded) and ``window.FoundryView.onAction(handler, options)``: a feed that can ask the
  server gets ``{action: "ask", query}`` from the follow-up form (shown once the research is
  completed; ``options.ask === false`` hides it), and with ``options.open`` also
  ``{action: "open", url}`` instead of the browser following a source's link (a host that opens
  links itself). The handler may return a promise; its rejection is shown as text.
* :mod:`.app` is the page as an MCP App (its addresses and the negotiation) and :mod:`.serving`
  the page served live over HTTP (loopback, or a team server's signed links).

One page, three ways to feed it (``render_page(..., feed=...)``):

* ``embedded``: the data is in the file (a finished research exported, a snapshot); no script
  but the view's.
* ``polled``: served by a loopback or team server that the page polls for newer data
  (``assets/polled.js``, written with the browser serving; the page may connect to its own
  origin only).
* ``app``: passed by an MCP Apps host (extension ``io.modelcontextprotocol/ui``) through its
  bridge (``assets/app_bridge.js``, written with the MCP App), which also carries the actions
  the host lets the view call.

Who builds what: this room builds the data and the page; the server layer serves the page as
an MCP App resource and the command line serves it to a browser. Neither changes the page: a
feed script only calls ``FoundryView.render`` and ``FoundryView.onAction``.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from foundry_mcp.view.data import ViewData, view_data, view_of
    from foundry_mcp.view.page import render_page

__all__ = ["ViewData", "render_page", "view_data", "view_of"]

# Read on first use: the server imports ``view.app`` as it starts, and the research code that
# ``data`` and ``page`` stand on is imported later, in the background (see ``server.host``).
_HOMES = {"ViewData": "data", "view_data": "data", "view_of": "data", "render_page": "page"}


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"{__name__}.{_HOMES[name]}"), name)
