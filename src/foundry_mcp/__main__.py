"""``python -m foundry_mcp``: the same as the ``foundry-mcp`` command."""

import sys

from foundry_mcp.cli.main import main

sys.exit(main())
