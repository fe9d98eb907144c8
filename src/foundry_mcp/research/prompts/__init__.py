"""Prompt templates, one module per agent, written for foundry-mcp (the clarifier's live beside
it, in the room of asking the user: ``research.service.asking.clarifier_prompts``)."""
