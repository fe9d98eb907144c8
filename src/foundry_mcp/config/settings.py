"""The settings models: every key, its type, default and bounds, and the constants they share."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    SecretStr,
    field_validator,
    model_validator,
)

from foundry_mcp.config.effects import (
    DELETES,
    LOWER_READS,
    LOWER_RUNS,
    LOWER_SPENDS,
    LOWER_THAN_SET,
    OFF_READS,
    OFF_RUNS,
    OFF_SPENDS,
    PACKING,
    PLACES,
    RUNS,
    SAFEGUARD,
    SENDS,
    SPENDS,
    Effect,
    Harmless,
    Narrows,
    Ordered,
    Protected,
    WithinProject,
)

if TYPE_CHECKING:
    from foundry_mcp.config.untrusted import UntrustedProjectConfig

# The bounds of each research limit, shared by the configuration, the service and the MCP
# tool's published schema: (lowest, highest).
LIMIT_BOUNDS: dict[str, tuple[int | float, int | float]] = {
    "max_iterations": (1, 10),
    "max_sub_queries": (1, 20),
    "max_sources_per_query": (1, 50),
    "max_concurrent": (1, 10),
    "task_timeout": (10, 86400),
}
# The longest research question, and the longest long-poll of a status read (seconds): the
# service enforces them and the MCP tool publishes them in its schema.
MAX_QUERY_CHARS = 200_000
MAX_WAIT_SECONDS = 60.0

ProviderKind = Literal[
    "openai",
    "anthropic",
    "gemini",
    "tavily",
    "google",
    "semantic_scholar",
    "local",
    "ddgs",
    "claude-cli",
    "codex-cli",
    "gemini-cli",
]

# The API flavour of each provider name we know; other names must say `type = ...`.
KNOWN_PROVIDER_KINDS: dict[str, ProviderKind] = {
    "openai": "openai",
    "anthropic": "anthropic",
    "gemini": "gemini",
    "tavily": "tavily",
    "google": "google",
    "semantic_scholar": "semantic_scholar",
    "local": "local",
    "ddgs": "ddgs",  # web search with no key ("web (no key)")
    # Assistants' programs that answer on their user's subscription (providers/llm/cli_*.py).
    "claude-cli": "claude-cli",
    "codex-cli": "codex-cli",
    "gemini-cli": "gemini-cli",
}
CLI_LLM_KINDS: frozenset[ProviderKind] = frozenset({"claude-cli", "codex-cli", "gemini-cli"})
# The model of a program-backed provider when none is named: the program's own choice.
CLI_DEFAULT_MODEL = "default"

DEFAULT_MODELS: dict[str, str] = {
    "openai": "gpt-4.1-mini",
    "anthropic": "claude-sonnet-5",
    "gemini": "gemini-2.5-flash",
}


_LOW = {name: low for name, (low, _) in LIMIT_BOUNDS.items()}
_HIGH = {name: high for name, (_, high) in LIMIT_BOUNDS.items()}


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_default=True)


class FetchSettings(_Section):
    """The ``[research.fetch]`` table: reading full pages for sources."""

    enabled: Annotated[bool, OFF_READS] = True
    follow_links: Annotated[bool, OFF_READS] = False
    max_bytes: Annotated[int, LOWER_READS] = Field(10_000_000, ge=1000, le=100_000_000)
    max_redirects: Annotated[int, LOWER_READS] = Field(5, ge=0, le=20)
    timeout: Annotated[float, LOWER_READS] = Field(20.0, gt=0, le=300)
    max_concurrent: Annotated[int, LOWER_READS] = Field(5, ge=1, le=50)
    allow_private_networks: Annotated[bool, OFF_READS] = False


class LocalDocumentsSettings(_Section):
    """The ``[research.local]`` table: the user's own documents as a search provider."""

    paths: Annotated[list[Path], WithinProject(Effect.READS)] = Field(default_factory=list)
    extensions: Annotated[list[str], Narrows(Effect.READS)] = Field(
        default_factory=lambda: [
            ".md",
            ".markdown",
            ".txt",
            ".rst",
            ".html",
            ".htm",
            ".pdf",
            ".py",
            ".js",
            ".ts",
            ".go",
            ".rs",
            ".java",
            ".c",
            ".h",
            ".cpp",
            ".toml",
            ".yaml",
        ]
    )
    max_file_bytes: Annotated[int, LOWER_READS] = Field(20_000_000, ge=1000)

    @field_validator("paths")
    @classmethod
    def _expand_paths(cls, value: list[Path]) -> list[Path]:
        return [path.expanduser() for path in value]


class ResearchSettings(_Section):
    """The ``[research]`` table: how a deep research runs."""

    default_provider: Annotated[str, SPENDS] = "openai"
    deep_research_max_iterations: Annotated[int, LOWER_SPENDS] = Field(
        3, ge=_LOW["max_iterations"], le=_HIGH["max_iterations"]
    )
    deep_research_max_sub_queries: Annotated[int, LOWER_SPENDS] = Field(
        5, ge=_LOW["max_sub_queries"], le=_HIGH["max_sub_queries"]
    )
    deep_research_max_sources: Annotated[int, LOWER_SPENDS] = Field(
        5, ge=_LOW["max_sources_per_query"], le=_HIGH["max_sources_per_query"]
    )
    deep_research_max_concurrent: Annotated[int, LOWER_SPENDS] = Field(
        3, ge=_LOW["max_concurrent"], le=_HIGH["max_concurrent"]
    )
    deep_research_timeout: Annotated[float, LOWER_SPENDS] = Field(
        600.0, ge=_LOW["task_timeout"], le=_HIGH["task_timeout"]
    )
    # The search providers in priority order (the specification's: Tavily, Google, Semantic
    # Scholar); those of the default list take part once they have their keys. The keyless web
    # search (ddgs), last, takes part only while none of them has a key.
    deep_research_providers: Annotated[list[str], Narrows(Effect.SENDS)] = Field(
        default_factory=lambda: ["tavily", "google", "semantic_scholar", "ddgs"]
    )
    # "priority": a search goes to the first usable provider, the next one on failure;
    # "all": to every provider at once, their results merged.
    deep_research_search_strategy: Annotated[
        Literal["priority", "all"], Ordered(Effect.SPENDS, ("priority", "all"))
    ] = "priority"
    research_dir: Annotated[Path, PLACES] = Path("~/.foundry-mcp/research")
    # Keep research in a PostgreSQL database shared by a team's servers, instead of SQLite in
    # research_dir: "postgresql://user:password@host:5432/database". Its password is a secret.
    store_url: Annotated[SecretStr | None, PLACES] = None
    deep_research_verify_citations: Annotated[bool, SAFEGUARD] = True
    deep_research_parallel_writing: Annotated[
        bool, Harmless("the same calls, run at once or one after another")
    ] = True
    deep_research_verification_max_claims: Annotated[int, SAFEGUARD] = Field(60, ge=1, le=500)
    deep_research_gate_retries: Annotated[int, LOWER_SPENDS] = Field(1, ge=0, le=3)
    deep_research_enable_reflection: Annotated[bool, OFF_SPENDS] = True
    supervisor_hooks: Annotated[str | None, RUNS] = None
    deep_research_planning_timeout: Annotated[float, LOWER_SPENDS] = Field(180.0, ge=1, le=86400)
    deep_research_gathering_timeout: Annotated[float, LOWER_SPENDS] = Field(300.0, ge=1, le=86400)
    deep_research_analysis_timeout: Annotated[float, LOWER_SPENDS] = Field(300.0, ge=1, le=86400)
    deep_research_synthesis_timeout: Annotated[float, LOWER_SPENDS] = Field(300.0, ge=1, le=86400)
    deep_research_refinement_timeout: Annotated[float, LOWER_SPENDS] = Field(180.0, ge=1, le=86400)
    retention_days: Annotated[float | None, DELETES] = Field(None, gt=0)
    auto_resume: Annotated[bool, OFF_RUNS] = False
    # Workers sharing a store resume research whose worker died (research/service/takeover.py).
    # None: on with a PostgreSQL store_url, off with SQLite.
    take_over_orphans: Annotated[bool | None, Ordered(Effect.RUNS, (False, None, True))] = None
    # Seconds between scans for research to take over, jittered.
    take_over_interval: Annotated[
        float, Harmless("how often a server looks; take_over_orphans decides what it takes")
    ] = Field(5.0, ge=0.1, le=3600)
    # A worker running this many research takes no more over.
    take_over_max_running: Annotated[int | None, LOWER_RUNS] = Field(None, ge=1, le=1000)
    # How long a running research's lease lasts without renewal: the longest another worker
    # waits before taking over the research of a worker that died (renewed every quarter).
    lease_seconds: Annotated[float, RUNS] = Field(20.0, ge=2, le=600)

    # Per-phase LLM provider and its fallbacks, as "provider[:model]" specs.
    deep_research_planning_provider: Annotated[str | None, SPENDS] = None
    deep_research_planning_providers: Annotated[list[str], SPENDS] = Field(default_factory=list)
    deep_research_analysis_provider: Annotated[str | None, SPENDS] = None
    deep_research_analysis_providers: Annotated[list[str], SPENDS] = Field(default_factory=list)
    deep_research_synthesis_provider: Annotated[str | None, SPENDS] = None
    deep_research_synthesis_providers: Annotated[list[str], SPENDS] = Field(default_factory=list)
    deep_research_refinement_provider: Annotated[str | None, SPENDS] = None
    deep_research_refinement_providers: Annotated[list[str], SPENDS] = Field(default_factory=list)
    tavily_search_depth: Annotated[
        Literal["basic", "advanced"], Ordered(Effect.SPENDS, ("basic", "advanced"))
    ] = "basic"

    # Research modes (docs/modes.md).
    mode: Annotated[Literal["auto", "simple", "hierarchical", "hypotheses"], SPENDS] = "auto"
    min_sub_questions: Annotated[int, SPENDS] = Field(2, ge=2, le=5)
    max_sub_questions: Annotated[int, LOWER_SPENDS] = Field(5, ge=2, le=5)
    sub_question_min_iterations: Annotated[int, LOWER_SPENDS] = Field(1, ge=1, le=10)
    sub_question_max_iterations: Annotated[int, LOWER_SPENDS] = Field(3, ge=1, le=10)
    sub_question_max_queries: Annotated[int, LOWER_SPENDS] = Field(3, ge=1, le=20)
    max_hypotheses_per_task: Annotated[int, LOWER_SPENDS] = Field(4, ge=1, le=10)
    hypothesis_mode: Annotated[Literal["adaptive", "exhaustive", "best_first"], SPENDS] = "adaptive"
    exploration_mode: Annotated[
        Literal["sequential", "parallel"], Ordered(Effect.SPENDS, ("sequential", "parallel"))
    ] = "sequential"
    min_confidence_threshold: Annotated[
        int, Harmless("leaves weak hypotheses out; it spends nothing more")
    ] = Field(0, ge=0, le=100)
    max_cost_usd: Annotated[float | None, LOWER_SPENDS] = Field(None, gt=0)
    max_time_s: Annotated[float | None, LOWER_SPENDS] = Field(None, ge=5, le=86400)

    # Token management (fitting content into each model's context window).
    token_management_enabled: Annotated[bool, OFF_SPENDS] = True
    token_safety_margin: Annotated[float, PACKING] = Field(0.15, ge=0.0, le=0.9)
    # Tokens of the model's window a runtime around it takes; None: the provider's own (0 for
    # the APIs).
    runtime_overhead: Annotated[int | None, PACKING] = Field(None, ge=0)
    assistant_overhead: Annotated[int, PACKING] = Field(60_000, ge=0)
    summarization_provider: Annotated[str | None, SPENDS] = None
    summarization_providers: Annotated[list[str], SPENDS] = Field(default_factory=list)
    summarization_timeout: Annotated[float, LOWER_SPENDS] = Field(60.0, gt=0, le=3600)
    summarization_cache_enabled: Annotated[bool, Ordered(Effect.SPENDS, (True, False))] = True
    allow_content_dropping: Annotated[
        bool, Harmless("lets a research read less rather than fail")
    ] = False
    content_archive_enabled: Annotated[
        bool,
        Harmless(
            "keeps copies of shortened pages in the archive folder; it deletes and sends nothing"
        ),
    ] = False
    content_archive_ttl_hours: Annotated[float, DELETES] = Field(168.0, gt=0)
    research_archive_dir: Annotated[Path | None, PLACES] = None
    model_context_overrides: Annotated[dict[str, int], PACKING] = Field(default_factory=dict)

    fetch: FetchSettings = Field(default_factory=FetchSettings)
    local: LocalDocumentsSettings = Field(default_factory=LocalDocumentsSettings)

    def phase_providers(self, phase: str) -> list[str]:
        """The LLM provider specs for a phase, primary first; empty means the research's own."""
        primary = getattr(self, f"deep_research_{phase}_provider", None)
        fallbacks = getattr(self, f"deep_research_{phase}_providers", [])
        return [spec for spec in [primary, *fallbacks] if spec]

    def phase_timeouts(self) -> dict[str, float]:
        """The per-phase timeouts, by phase name."""
        return {
            "planning": self.deep_research_planning_timeout,
            "gathering": self.deep_research_gathering_timeout,
            "analysis": self.deep_research_analysis_timeout,
            "synthesis": self.deep_research_synthesis_timeout,
            "refinement": self.deep_research_refinement_timeout,
        }

    @model_validator(mode="after")
    def _ordered_bounds(self) -> ResearchSettings:
        if self.min_sub_questions > self.max_sub_questions:
            raise ValueError("min_sub_questions must not be larger than max_sub_questions")
        if self.sub_question_min_iterations > self.sub_question_max_iterations:
            raise ValueError(
                "sub_question_min_iterations must not be larger than sub_question_max_iterations"
            )
        return self

    @field_validator("research_dir", "research_archive_dir")
    @classmethod
    def _expand(cls, value: Path | None) -> Path | None:
        return value.expanduser() if value is not None else None

    @field_validator("store_url")
    @classmethod
    def _postgresql_url(cls, value: SecretStr | None) -> SecretStr | None:
        # The messages never quote the URL: it may hold a password.
        if value is None or not value.get_secret_value().strip():
            return None
        scheme, separator, _ = value.get_secret_value().strip().partition("://")
        if not separator or scheme.lower() not in ("postgresql", "postgres"):
            shown = f"a {scheme.lower()!r} URL" if separator and scheme.isalnum() else "no URL"
            raise ValueError(
                f"must be a PostgreSQL URL, postgresql://user:password@host:5432/database "
                f"(this is {shown})"
            )
        return SecretStr(value.get_secret_value().strip())

    @field_validator("model_context_overrides")
    @classmethod
    def _positive_windows(cls, value: dict[str, int]) -> dict[str, int]:
        for model, window in value.items():
            if window < 1000:
                raise ValueError(f"context window of {model!r} must be at least 1000 tokens")
        return value

    @field_validator("default_provider")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must name a provider, e.g. 'openai' or 'anthropic:claude-sonnet-4-5'")
        return value.strip()


class ProviderSettings(_Section):
    """One ``[providers.<name>]`` table."""

    type: Annotated[ProviderKind | None, SENDS] = None
    api_key: Annotated[SecretStr | None, SENDS] = None
    base_url: Annotated[str | None, SENDS] = None
    model: Annotated[str | None, SPENDS] = None
    # Seconds one request may take; None: see timeout_for.
    timeout: Annotated[float | None, LOWER_THAN_SET] = Field(None, gt=0, le=3600)
    max_retries: Annotated[int, LOWER_SPENDS] = Field(2, ge=0, le=10)
    cse_id: Annotated[str | None, SENDS] = None  # Google Custom Search engine id
    requests_per_minute: Annotated[float | None, LOWER_THAN_SET] = Field(None, gt=0)
    max_in_flight: Annotated[int | None, LOWER_THAN_SET] = Field(None, ge=1, le=100)
    circuit_breaker_failures: Annotated[
        int, Harmless("when a failing provider is paused; it sends and spends nothing more")
    ] = Field(5, ge=1, le=100)
    circuit_breaker_reset_seconds: Annotated[
        float, Harmless("how long a failing provider stays paused")
    ] = Field(30.0, gt=0, le=3600)
    # Search providers only: a slow search is sent again, which may cost a credit.
    hedge_requests: Annotated[bool, OFF_SPENDS] = True
    # The program of a claude-cli, codex-cli or gemini-cli provider (None: found on PATH).
    command: Annotated[str | None, RUNS] = None
    # The keyless web search (type "ddgs"): its region ("us-en", "de-de", "wt-wt" for none),
    # safe search, and the ddgs backends asked in order (None: the adapter's defaults).
    region: Annotated[
        str | None,
        Harmless(
            "the region the keyless search asks results for; the question goes to the same engines"
        ),
    ] = Field(None, pattern=r"^[A-Za-z]{2}-[A-Za-z]{2}$")
    safesearch: Annotated[
        Literal["on", "moderate", "off"] | None,
        Harmless("the safe-search level of the keyless search"),
    ] = None
    backends: Annotated[list[str] | None, SENDS] = None
    news_backends: Annotated[list[str] | None, SENDS] = None

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if not value.startswith(("http://", "https://")):
            raise ValueError("must start with http:// or https://")
        return value.rstrip("/")

    def key(self) -> str | None:
        """The API key in clear, for handing to an SDK only."""
        if self.api_key is None:
            return None
        secret = self.api_key.get_secret_value().strip()
        return secret or None

    def timeout_for(self, role: Literal["llm", "search"]) -> float:
        """Seconds one request may take: ``timeout``, else 120 for an LLM and 30 for a search."""
        if self.timeout is not None:
            return self.timeout
        return 30.0 if role == "search" else 120.0


class PriceSettings(_Section):
    """One ``[pricing."provider:model"]`` table: US dollars per million tokens."""

    input_per_mtok: float = Field(ge=0)
    output_per_mtok: float = Field(ge=0)


PRINCIPAL_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$"
MIN_TOKEN_CHARS = 16
TOKEN_RECIPE = "python -c 'import secrets; print(secrets.token_urlsafe(32))'"


class ServerTokenSettings(_Section):
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


class ServerSettings(_Section):
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


class LoggingSettings(_Section):
    level: Annotated[
        Literal["DEBUG", "INFO", "WARNING", "ERROR"],
        Harmless("how much is logged to stderr; secrets are never logged"),
    ] = "WARNING"


class ReportSettings(_Section):
    # Quote, under each source of the report, the passages that back it.
    quotes: Annotated[bool, Harmless("what the report shows of its sources")] = False


class Settings(_Section):
    """All of foundry-mcp's settings."""

    research: ResearchSettings = Field(default_factory=ResearchSettings)
    report: ReportSettings = Field(default_factory=ReportSettings)
    providers: dict[str, ProviderSettings] = Field(default_factory=dict)
    pricing: Annotated[dict[str, PriceSettings], SPENDS] = Field(default_factory=dict)
    logging: LoggingSettings = Field(default_factory=LoggingSettings)
    server: Annotated[ServerSettings, Protected(Effect.EXPOSES)] = Field(
        default_factory=ServerSettings
    )
    _sources: list[str] = PrivateAttr(default_factory=list)
    _untrusted: UntrustedProjectConfig | None = PrivateAttr(default=None)

    @property
    def sources(self) -> list[str]:
        """The configuration files that were read, in order of precedence."""
        return self._sources

    @property
    def untrusted(self) -> UntrustedProjectConfig | None:
        """The project file whose protected keys were ignored, if any were."""
        return self._untrusted

    def trust_warnings(self) -> list[str]:
        """One warning naming the ignored keys and the fix, or none."""
        return [self._untrusted.warning()] if self._untrusted else []

    def provider(self, name: str) -> ProviderSettings:
        """The settings of a provider, empty ones when it has no table."""
        return self.providers.get(name) or ProviderSettings()

    def provider_kind(self, name: str) -> ProviderKind | None:
        """The API flavour of a provider name, or None if unknown."""
        declared = self.providers.get(name)
        if declared is not None and declared.type is not None:
            return declared.type
        return KNOWN_PROVIDER_KINDS.get(name)
