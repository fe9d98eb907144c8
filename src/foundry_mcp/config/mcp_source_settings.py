"""The ``[mcp_sources.<name>]`` tables: other MCP servers a research reads from.

Each names how to reach one server (``command`` for stdio, or ``url`` and ``headers`` for
streamable HTTP) and, where its tools do not say so themselves, which of them search, list and
read. A server is a program the user runs: only the user's own configuration may name one (the
whole table is protected; an untrusted project file's is ignored with a warning).
"""

from __future__ import annotations

import re
import shlex
from urllib.parse import urlsplit

from pydantic import Field, SecretStr, field_validator, model_validator

from foundry_mcp.config.section import Section

SOURCE_NAME_PATTERN = r"^[a-z0-9][a-z0-9_-]{0,39}$"
TOOL_NAME_PATTERN = r"^[A-Za-z0-9_.\-/]{1,128}$"


class McpSourceSettings(Section):
    """One MCP server read as a source of a research."""

    # What it holds, for the planner to aim searches at it, e.g. "the team's decision records".
    description: str = Field("", max_length=300)
    # How to reach it: a command started over stdio, or a Streamable HTTP endpoint.
    command: list[str] = Field(default_factory=list, max_length=64)
    env: dict[str, str] = Field(default_factory=dict)  # added to the command's environment
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, SecretStr] = Field(default_factory=dict)  # e.g. Authorization
    # Which tools serve: found from the server's tools/list where they say so; set by hand.
    search_tool: str | None = Field(None, pattern=TOOL_NAME_PATTERN)
    list_tool: str | None = Field(None, pattern=TOOL_NAME_PATTERN)
    read_tool: str | None = Field(None, pattern=TOOL_NAME_PATTERN)
    # Fixed arguments given to every tool that takes them, e.g. {repo_path = "/src/project"}.
    arguments: dict[str, str] = Field(default_factory=dict)
    # Tools that may be called although they are not marked read-only (readOnlyHint).
    allowed_tools: list[str] = Field(default_factory=list, max_length=50)
    timeout_s: float = Field(30.0, gt=0, le=600)  # each call
    start_timeout_s: float = Field(60.0, gt=0, le=600)  # starting or reaching the server
    max_reads: int = Field(5, ge=1, le=50)  # items read for one search of a list-only server

    @field_validator("command", mode="before")
    @classmethod
    def _words(cls, value: object) -> object:
        """A command given as one string is split as a shell would (no shell runs it)."""
        if isinstance(value, str):
            return shlex.split(value)
        return value

    @field_validator("url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is None:
            return None
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(
                "must be an http:// or https:// address, e.g. http://127.0.0.1:8931/mcp"
            )
        return value

    @field_validator("allowed_tools")
    @classmethod
    def _tool_names(cls, value: list[str]) -> list[str]:
        bad = [name for name in value if not re.match(TOOL_NAME_PATTERN, name)]
        if bad:
            raise ValueError(f"not tool names: {', '.join(repr(name) for name in bad)}")
        return value

    @model_validator(mode="after")
    def _one_way_in(self) -> McpSourceSettings:
        if bool(self.command) == bool(self.url):
            raise ValueError(
                "give either command (a program started over stdio, as a list of words) or url "
                "(a Streamable HTTP endpoint), not both or neither"
            )
        return self

    @property
    def transport(self) -> str:
        """``stdio`` or ``http``."""
        return "stdio" if self.command else "http"
