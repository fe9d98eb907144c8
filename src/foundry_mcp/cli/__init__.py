"""The command line: ``foundry-mcp`` and its commands (main parses and dispatches; commands, doctor,
migrate and bench are the bodies; progress and wording speak to a terminal)."""
