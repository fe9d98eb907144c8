"""The formats a research is exported in, named apart from the exports themselves: the server's
argument model names them to publish its schema, before any research is read."""

from __future__ import annotations

from typing import Literal, get_args

ExportFormat = Literal["markdown", "json", "bibtex", "ris"]
EXPORT_FORMATS: tuple[str, ...] = get_args(ExportFormat)
