"""``python -m foundry_mcp``: the same as the ``foundry-mcp`` command."""

import sys

from foundry_mcp.cli import main

sys.exit(main())
