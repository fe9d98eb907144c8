"""What a person sees: documents drawn on a terminal, JSON into a pipe, a research's progress.

``views`` and ``versions`` are imported when first asked for (``display.views``): they bring in
rich, which a command printing JSON into a pipe never needs.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from foundry_mcp.cli.display import versions, views

__all__ = ["versions", "views"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
