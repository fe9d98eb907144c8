"""foundry-mcp: deep research for coding assistants, served over MCP."""

__version__ = "0.1.0"

__all__ = ["__version__"]
