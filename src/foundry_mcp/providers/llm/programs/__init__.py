"""Assistants' programs as LLM providers (claude, codex, gemini run on their user's login): the
shared base and runner, their errors, and the adapters' registry."""
