"""The use cases of deep research, behind ``ResearchService`` (``research_service.py``): the one
face the MCP server and the CLI call (start, status, report, list, events, cancel, resume,
delete, export, restore); ``asking/`` is asking the user (clarifying questions, a plan to
approve), ``starting/`` is starting a research (its request, checks, save and run, the start's
answer)."""
