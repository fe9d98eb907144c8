"""The use cases of deep research, behind ``ResearchService``: the one face the MCP server and
the CLI call (start, status, report, list, events, cancel, resume, delete, export, restore)."""

from foundry_mcp.research.service.research_service import ResearchService

__all__ = ["ResearchService"]
