"""The supervisor and its specialist agents."""
