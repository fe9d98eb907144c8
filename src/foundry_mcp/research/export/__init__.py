"""Exports of a research for other tools: markdown, JSON, BibTeX and RIS.

``document`` renders a research in each format (its JSON shape is ``ResearchExport``, whose
schema is :func:`schema`), ``citations`` writes the BibTeX and RIS entries of its sources, and
``files`` puts an export inline or into a file of the workspace.
"""

from foundry_mcp.research.export.document import (
    EXPORT_FORMATS,
    ExportFormat,
    ResearchExport,
    cited,
    render,
    schema,
    to_model,
)

__all__ = [
    "EXPORT_FORMATS",
    "ExportFormat",
    "ResearchExport",
    "cited",
    "render",
    "schema",
    "to_model",
]
