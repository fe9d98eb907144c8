"""The team server: MCP over streamable HTTP (http), and what a stateless server answers without
an MCP session (handshake, quick_answers)."""
