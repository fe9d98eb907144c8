"""The research a search serves, for adapters that keep work per research.

An adapter is shared by every research of the process (``providers.registry``), but some work
belongs to one research: what an MCP source listed, the items it read. The run of a research
enters :func:`serving` around everything it does; tasks started inside inherit it (context
variables are copied into new tasks), so every sub-query and branch of the research sees the
same :class:`ResearchScope`, and another research running at the same time sees its own. What
adapters keep there is dropped with the scope when the run ends.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TypeVar

T = TypeVar("T")


class ResearchScope:
    """What the adapters serving one research keep for it, and where they warn it."""

    def __init__(self, research_id: str, warn: Callable[[str], None] | None = None) -> None:
        self.research_id = research_id
        self._warn = warn
        self._kept: dict[str, object] = {}

    def kept(self, key: str, make: Callable[[], T]) -> T:
        """What is kept under ``key`` (an adapter's name), made on first use."""
        if key not in self._kept:
            self._kept[key] = make()
        return self._kept[key]  # type: ignore[return-value]  # each key holds one type

    def warn(self, message: str) -> None:
        """Add ``message`` to the research's warnings (when it listens)."""
        if self._warn is not None:
            self._warn(message)


_current: ContextVar[ResearchScope | None] = ContextVar("foundry_research_scope", default=None)


@contextmanager
def serving(research_id: str, warn: Callable[[str], None] | None = None) -> Iterator[None]:
    """Searches made inside (and in tasks started inside) serve this research."""
    token = _current.set(ResearchScope(research_id, warn))
    try:
        yield
    finally:
        _current.reset(token)


def current_scope() -> ResearchScope | None:
    """The scope of the research being served; None outside a research's run."""
    return _current.get()
