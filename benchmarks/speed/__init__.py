"""The speed benchmark: the critical path, concurrency, overhead and tokens of a research."""
