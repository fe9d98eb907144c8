"""``python -m foundry_mcp``: the same as the ``foundry-mcp`` command."""

from foundry_mcp.cli.main import run

run()
