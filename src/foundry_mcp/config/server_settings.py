"""The ``[server]`` table: the team server, ``foundry-mcp serve --http``, and its tokens."""

from __future__ import annotations

from pydantic import (
    Field,
    PrivateAttr,
    SecretStr,
    field_validator,
    model_validator,
)

from foundry_mcp.config.section import Section

PRINCIPAL_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$"
MIN_TOKEN_CHARS = 16
# A team worker runs many people's research at once, each with up to
# ``deep_research_max_concurrent`` LLM calls (3 by default, parts of a report too): 32 lets about
# ten research progress without queueing behind one another; the provider's requests_per_minute
# still paces them (docs/team-server.md, "LLM calls in flight").
TEAM_LLM_MAX_IN_FLIGHT = 32
TOKEN_RECIPE = "python -c 'import secrets; print(secrets.token_urlsafe(32))'"


class ServerTokenSettings(Section):
    """One ``[[server.tokens]]`` entry: a bearer token and the principal (``name``) it stands
    for, with that principal's optional limits."""

    name: str = Field(pattern=PRINCIPAL_NAME_PATTERN)
    token: SecretStr
    max_concurrent_researches: int | None = Field(None, ge=1, le=1000)
    max_cost_usd_per_day: float | None = Field(None, gt=0)

    @field_validator("token")
    @classmethod
    def _strong_enough(cls, value: SecretStr) -> SecretStr:
        # The messages never quote the token.
        secret = value.get_secret_value()
        if len(secret) < MIN_TOKEN_CHARS:
            raise ValueError(
                f"must be at least {MIN_TOKEN_CHARS} characters long; make one with: {TOKEN_RECIPE}"
            )
        if not secret.isascii() or any(not c.isprintable() or c.isspace() for c in secret):
            raise ValueError("must be printable ASCII without spaces")
        if "," in secret:
            raise ValueError(
                "must not contain a comma (FOUNDRY_MCP_TOKENS separates entries by it)"
            )
        return value


class ServerSettings(Section):
    """The ``[server]`` table: the team server, ``foundry-mcp serve --http``."""

    host: str = "127.0.0.1"
    port: int = Field(8765, ge=0, le=65535)  # 0: any free port (the start-up log names it)
    tokens: list[ServerTokenSettings] = Field(default_factory=list)
    # Host and Origin header values accepted besides the loopback ones (DNS-rebinding guard).
    allowed_hosts: list[str] = Field(default_factory=list)
    allowed_origins: list[str] = Field(default_factory=list)
    # Limits of every principal whose token entry sets none.
    max_concurrent_researches: int | None = Field(None, ge=1, le=1000)
    max_cost_usd_per_day: float | None = Field(None, gt=0)
    # Any worker answers any request: no MCP session is kept between requests, so a plain
    # round-robin balancer needs no affinity (docs/team-server.md, "Stateless mode").
    stateless: bool = False
    # LLM calls in flight at once per provider in one team-server process, across every
    # research it runs, for providers whose table sets no max_in_flight (the local default is 8).
    llm_max_in_flight: int = Field(TEAM_LLM_MAX_IN_FLIGHT, ge=1, le=100)
    _team: bool = PrivateAttr(default=False)  # set by ``serve --http`` (``as_team_server``)

    @property
    def team(self) -> bool:
        """Whether this process is the team server (``foundry-mcp serve --http``)."""
        return self._team

    def as_team_server(self) -> ServerSettings:
        """A copy that says this process is the team server (its defaults apply)."""
        copy = self.model_copy()
        copy._team = True
        return copy

    @field_validator("host")
    @classmethod
    def _host_named(cls, value: str) -> str:
        value = value.strip().removeprefix("[").removesuffix("]")
        if not value:
            raise ValueError("must name an address to listen on, e.g. '127.0.0.1'")
        return value

    @model_validator(mode="after")
    def _distinct_tokens(self) -> ServerSettings:
        seen: dict[str, str] = {}
        for entry in self.tokens:
            secret = entry.token.get_secret_value()
            if secret in seen:
                raise ValueError(
                    f"the tokens of {seen[secret]!r} and {entry.name!r} are the same; give "
                    "every entry its own token"
                )
            seen[secret] = entry.name
        return self

    def limits_for(self, name: str) -> tuple[int | None, float | None]:
        """``(max_concurrent_researches, max_cost_usd_per_day)`` of a principal: the strictest
        its token entries set, else the table's own."""
        entries = [entry for entry in self.tokens if entry.name == name]
        concurrent = [e.max_concurrent_researches for e in entries if e.max_concurrent_researches]
        cost = [e.max_cost_usd_per_day for e in entries if e.max_cost_usd_per_day]
        return (
            min(concurrent) if concurrent else self.max_concurrent_researches,
            min(cost) if cost else self.max_cost_usd_per_day,
        )
