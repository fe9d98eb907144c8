"""All of foundry-mcp's settings: the root of the tables, and what loading them found.

Each table is defined beside its kin: ``research_settings`` (``[research]``, ``[research.fetch]``,
``[research.local]``), ``provider_settings`` (``[providers.*]``, ``[pricing.*]``),
``server_settings`` (``[server]``); ``[logging]`` and ``[report]`` are small enough to live here.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, Field, PrivateAttr, field_validator

from foundry_mcp.config.effects import (
    SPENDS,
    Effect,
    Harmless,
    Protected,
)
from foundry_mcp.config.mcp_source_settings import SOURCE_NAME_PATTERN, McpSourceSettings
from foundry_mcp.config.provider_settings import (
    KNOWN_PROVIDER_KINDS,
    MCP_PREFIX,
    PriceSettings,
    ProviderKind,
    ProviderSettings,
)
from foundry_mcp.config.research_settings import ResearchSettings
from foundry_mcp.config.section import Section
from foundry_mcp.config.server_settings import ServerSettings


class UntrustedProjectConfig(BaseModel):
    """A ``./foundry-mcp.toml`` the user has not trusted, and the keys of it that were ignored."""

    path: Path
    reason: str  # "never trusted" or "changed since it was trusted"
    ignored_keys: list[str]

    def warning(self) -> str:
        return (
            f"{self.path} is not trusted ({self.reason}), so these keys in it were ignored: "
            f"{', '.join(self.ignored_keys)}. A project file you have not trusted may lower "
            "limits and turn costly features off, but not delete, run, spend, read or send "
            "more. If you wrote this file and want them to apply, run: "
            f"foundry-mcp trust {self.path}"
        )


class ProjectNarrowing(BaseModel):
    """What an untrusted project file set for the keys whose effect only the code using them
    can judge (rule ``NarrowsWhereUsed``). Each applies only where it leads to less than the
    user's own settings: fewer search services, a smaller model window, a larger runtime
    overhead. Unset (None, empty): the file did not set the key, or there is no such file."""

    file: Path | None = None
    deep_research_providers: list[str] | None = None
    model_context_overrides: dict[str, int] = Field(default_factory=dict)
    runtime_overhead: int | None = None

    def refusal(self, key: str, outcome: str) -> str:
        """The warning of a value of the file that would not narrow: ``outcome`` says what it
        would have done and what applies instead."""
        return (
            f"{self.file} is not trusted, so its [research] {key} was ignored: {outcome} A "
            "project file you have not trusted may narrow your own choice, not change it. If "
            f"you wrote this file and want it to apply, run: foundry-mcp trust {self.file}"
        )


class LoggingSettings(Section):
    level: Annotated[
        Literal["DEBUG", "INFO", "WARNING", "ERROR"],
        Harmless("how much is logged to stderr; secrets are never logged"),
    ] = "WARNING"


class ReportSettings(Section):
    # Quote, under each source of the report, the passages that back it.
    quotes: Annotated[bool, Harmless("what the report shows of its sources")] = False


class Settings(Section):
    """All of foundry-mcp's settings."""

    research: ResearchSettings = Field(default_factory=ResearchSettings)
    report: ReportSettings = Field(default_factory=ReportSettings)
    providers: dict[str, ProviderSettings] = Field(default_factory=dict)
    pricing: Annotated[dict[str, PriceSettings], SPENDS] = Field(default_factory=dict)
    logging: LoggingSettings = Field(default_factory=LoggingSettings)
    server: Annotated[ServerSettings, Protected(Effect.EXPOSES)] = Field(
        default_factory=ServerSettings
    )
    # Other MCP servers read as sources: programs the user runs, so only the user's own files
    # may name them.
    mcp_sources: Annotated[dict[str, McpSourceSettings], Protected(Effect.RUNS)] = Field(
        default_factory=dict
    )
    _sources: list[str] = PrivateAttr(default_factory=list)
    _untrusted: UntrustedProjectConfig | None = PrivateAttr(default=None)
    _narrowing: ProjectNarrowing = PrivateAttr(default_factory=ProjectNarrowing)
    # Where each key that was set came from: a file's path or "environment variable NAME".
    _origins: dict[tuple[str, ...], str] = PrivateAttr(default_factory=dict)

    @property
    def sources(self) -> list[str]:
        """The configuration files that were read, in order of precedence."""
        return self._sources

    @property
    def untrusted(self) -> UntrustedProjectConfig | None:
        """The project file whose protected keys were ignored, if any were."""
        return self._untrusted

    @property
    def narrowing(self) -> ProjectNarrowing:
        """What an untrusted project file may only narrow where it is used (empty without one)."""
        return self._narrowing

    def origin_of(self, *key: str) -> str | None:
        """Where ``key`` (e.g. ``"research", "default_provider"``) was set: a file's path or
        ``environment variable NAME``; None when it has its default."""
        return self._origins.get(key)

    def trust_warnings(self) -> list[str]:
        """One warning naming the ignored keys and the fix, or none."""
        return [self._untrusted.warning()] if self._untrusted else []

    @field_validator("mcp_sources")
    @classmethod
    def _source_names(cls, value: dict[str, McpSourceSettings]) -> dict[str, McpSourceSettings]:
        bad = [name for name in value if not re.match(SOURCE_NAME_PATTERN, name)]
        if bad:
            raise ValueError(
                f"MCP source names are lower-case letters, digits, - and _ (at most 40): "
                f"{', '.join(repr(name) for name in bad)}"
            )
        return value

    def provider(self, name: str) -> ProviderSettings:
        """The settings of a provider, empty ones when it has no table."""
        return self.providers.get(name) or ProviderSettings()

    def provider_kind(self, name: str) -> ProviderKind | None:
        """The API flavour of a provider name, or None if unknown; ``mcp`` for the search of
        a configured MCP source (``mcp.<name>``)."""
        if name.startswith(MCP_PREFIX) and name.removeprefix(MCP_PREFIX) in self.mcp_sources:
            return "mcp"
        declared = self.providers.get(name)
        if declared is not None and declared.type is not None:
            return declared.type
        return KNOWN_PROVIDER_KINDS.get(name)
