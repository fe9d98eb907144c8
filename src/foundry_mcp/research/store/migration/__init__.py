"""``foundry-mcp migrate``: a SQLite research store copied into PostgreSQL (copy), and checked
(check)."""
