"""Prompt templates, one module per agent, written for foundry-mcp."""
