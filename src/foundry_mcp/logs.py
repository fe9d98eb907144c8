"""Logging: where log lines go, how they look, and the research each one is about.

Every record gets two fields, ``research_id`` and ``principal``: given with
``extra=about(research_id, principal)``, or taken from the research whose run is logging (a run
sets :func:`research_context` for everything it calls). The text format shows them after the
message when they are set; ``--log-format json`` writes one JSON object per line with the
time, level, logger, message, research_id and principal. Logs always go to stderr: over stdio,
stdout carries the MCP protocol. A message can quote what a page or a provider said, so a line
is plain text (:mod:`foundry_mcp.plain`), never a control sequence for the terminal.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any, Literal

from foundry_mcp.plain import plain, plain_within

LogFormat = Literal["text", "json"]
LOG_FORMATS: tuple[LogFormat, ...] = ("text", "json")
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s%(research_suffix)s"

_current: ContextVar[tuple[str, str | None] | None] = ContextVar("research_log", default=None)


@contextmanager
def research_context(research_id: str, principal: str | None) -> Iterator[None]:
    """Log lines written inside (and in tasks started inside) are about this research."""
    token = _current.set((research_id, principal))
    try:
        yield
    finally:
        _current.reset(token)


def about(research_id: str | None, principal: str | None) -> dict[str, Any]:
    """``extra=`` fields of a log line about one research."""
    return {"research_id": research_id, "principal": principal}


class ResearchFields(logging.Filter):
    """Gives every record ``research_id`` and ``principal`` (None when it is about none)."""

    def filter(self, record: logging.LogRecord) -> bool:
        current = _current.get()
        research_id = getattr(record, "research_id", current[0] if current else None)
        principal = getattr(record, "principal", current[1] if current else None)
        record.research_id, record.principal = research_id, principal
        shown = [
            f"{label} {value}"
            for label, value in (("research", research_id), ("principal", principal))
            if value
        ]
        record.research_suffix = f" [{', '.join(shown)}]" if shown else ""
        return True


class JsonLines(logging.Formatter):
    """One JSON object per record: time, level, logger, message, research_id, principal."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "research_id": getattr(record, "research_id", None),
            "principal": getattr(record, "principal", None),
        }
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(plain_within(entry), ensure_ascii=False)


class TextLines(logging.Formatter):
    """:data:`TEXT_FORMAT`, as plain text."""

    def format(self, record: logging.LogRecord) -> str:
        return plain(super().format(record))


def configure_logging(level: str, log_format: LogFormat = "text") -> None:
    """Send log records of ``level`` and above to stderr, as text lines or JSON lines."""
    handler = logging.StreamHandler(sys.stderr)
    handler.addFilter(ResearchFields())
    handler.setFormatter(JsonLines() if log_format == "json" else TextLines(TEXT_FORMAT))
    logging.basicConfig(level=level, handlers=[handler])
