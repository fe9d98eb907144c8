"""The ``[research]`` table and its ``[research.fetch]`` and ``[research.local]`` tables: how a
deep research runs, reads pages and reads the user's own documents."""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Annotated, Literal, TypedDict

from pydantic import (
    Field,
    SecretStr,
    field_validator,
    model_validator,
)

from foundry_mcp.config.effects import (
    DELETES,
    HIGHER_READS,
    LOWER_READS,
    LOWER_RUNS,
    LOWER_SPENDS,
    LOWER_SPENDS_ZERO_UNLIMITED,
    NARROWS_READS,
    OFF_READS,
    OFF_RUNS,
    OFF_SENDS,
    OFF_SPENDS,
    PLACES,
    RUNS,
    SAFEGUARD,
    SPENDS,
    Effect,
    Harmless,
    Narrows,
    NarrowsWhereUsed,
    Ordered,
    Protected,
    WithinProject,
)
from foundry_mcp.config.section import Section

# The bounds of each research limit, shared by the configuration, the service and the MCP
# tool's published schema: (lowest, highest).
LIMIT_BOUNDS: dict[str, tuple[int | float, int | float]] = {
    "max_iterations": (1, 10),
    "max_sub_queries": (1, 20),
    "max_sources_per_query": (1, 50),
    "max_concurrent": (1, 10),
    "task_timeout": (10, 86400),
    "reading_budget": (2_000, 2_000_000),
}
# The [research] key that holds each limit's default.
LIMIT_KEYS: dict[str, str] = {
    "max_iterations": "deep_research_max_iterations",
    "max_sub_queries": "deep_research_max_sub_queries",
    "max_sources_per_query": "deep_research_max_sources",
    "max_concurrent": "deep_research_max_concurrent",
    "task_timeout": "deep_research_timeout",
    "reading_budget": "deep_research_reading_budget",
}


class LimitArgs(TypedDict, total=False):
    """The limits a caller may give a start or a resume; one left out, or None, keeps the
    research's own (or the configuration's). Bounds: ``LIMIT_BOUNDS``."""

    max_iterations: int | None
    max_sub_queries: int | None
    max_sources_per_query: int | None
    max_concurrent: int | None
    task_timeout: float | None
    reading_budget: int | None


# The longest research question, and the longest long-poll of a status read (seconds): the
# service enforces them and the MCP tool publishes them in its schema.
MAX_QUERY_CHARS = 200_000
MAX_WAIT_SECONDS = 60.0

# The page text a research reads in one round at standard effort (tokens): the passages of its
# pages worth most to the question (benchmarks/docpages/bench.py measures what it keeps).
STANDARD_READING_BUDGET = 32_000
WHOLE_PAGES = 0  # the reading budget that reads whole pages (a file cannot write None)

_LOW = {name: low for name, (low, _) in LIMIT_BOUNDS.items()}
_HIGH = {name: high for name, (_, high) in LIMIT_BOUNDS.items()}


def check_reading_budget(value: int) -> int:
    """``value`` when it is :data:`WHOLE_PAGES` or within the reading budget's bounds."""
    low, high = LIMIT_BOUNDS["reading_budget"]
    if value != WHOLE_PAGES and not low <= value <= high:
        raise ValueError(
            f"a reading budget is {WHOLE_PAGES} (whole pages) or {low:,} to {high:,} tokens "
            f"(got {value:,})"
        )
    return value


class FetchSettings(Section):
    """The ``[research.fetch]`` table: reading full pages for sources."""

    enabled: Annotated[bool, OFF_READS] = True
    follow_links: Annotated[bool, OFF_READS] = False
    max_bytes: Annotated[int, LOWER_READS] = Field(10_000_000, ge=1000, le=100_000_000)
    # The longest page text a source keeps (a search provider's or a fetched page's): a
    # safety limit, far above any article, so a fact near the end of a long page is read.
    max_page_chars: Annotated[int, LOWER_READS] = Field(2_000_000, ge=10_000, le=50_000_000)
    max_redirects: Annotated[int, LOWER_READS] = Field(5, ge=0, le=20)
    timeout: Annotated[float, LOWER_READS] = Field(20.0, gt=0, le=300)
    max_concurrent: Annotated[int, LOWER_READS] = Field(5, ge=1, le=50)
    allow_private_networks: Annotated[bool, OFF_READS] = False


class LocalDocumentsSettings(Section):
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


class ResearchSettings(Section):
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
    # Tokens of page text a research reads in one round, the passages worth most first
    # (research/workflow/reading/); 0: whole pages, as far as the model's window allows.
    deep_research_reading_budget: Annotated[int, LOWER_SPENDS_ZERO_UNLIMITED] = Field(
        STANDARD_READING_BUDGET, ge=WHOLE_PAGES, le=_HIGH["reading_budget"]
    )
    # Processes of its own that choose what a research reads of its pages (CPU work over long
    # pages, off the server's event loop: context/reading/elsewhere.py); 0: the server's threads.
    reading_processes: Annotated[int, LOWER_RUNS] = Field(2, ge=0, le=16)
    # The search providers in priority order (the specification's: Tavily, Google, Semantic
    # Scholar); those of the default list take part once they have their keys. The keyless web
    # search (ddgs), last, takes part only while none of them has a key. An untrusted file's
    # list only narrows the services the user's own settings choose (search_selection.py).
    deep_research_providers: Annotated[list[str], NarrowsWhereUsed(Effect.SENDS)] = Field(
        default_factory=lambda: ["tavily", "google", "semantic_scholar", "ddgs"]
    )
    # "priority": a search goes to the first usable provider, the next one on failure;
    # "all": to every provider at once, their results merged.
    deep_research_search_strategy: Annotated[
        Literal["priority", "all"], Ordered(Effect.SPENDS, ("priority", "all"))
    ] = "priority"
    # Off: words that only the user's own documents and MCP sources hold are left out of the
    # queries sent to public search services (research/workflow/agents/privacy.py).
    private_text_in_public_searches: Annotated[bool, OFF_SENDS] = False
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
    # Seconds the parts of a research may go without moving (no provider call in flight, no
    # work saved) before those still running are stopped and the research goes on without them.
    deep_research_stall_timeout: Annotated[float, LOWER_SPENDS] = Field(120.0, ge=1, le=86400)
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
    # Source bounds of every research (a call's own are added; docs/usage.md): the only
    # domains it reads, those it never reads, and the days its sources were published between.
    include_domains: Annotated[list[str], Protected(Effect.READS)] = Field(
        default_factory=list, max_length=50
    )
    exclude_domains: Annotated[list[str], Protected(Effect.READS)] = Field(
        default_factory=list, max_length=50
    )
    published_after: Annotated[date | None, Protected(Effect.READS)] = None
    published_before: Annotated[date | None, Protected(Effect.READS)] = None

    # Talking with the user (docs/usage.md): a vague question is clarified first when the
    # client can be asked; how long a question waits for its answer.
    clarify: Annotated[
        Literal["auto", "off", "always"], Ordered(Effect.SPENDS, ("off", "auto", "always"))
    ] = "auto"
    clarify_timeout: Annotated[
        float, Harmless("how long a question to the user waits; the research goes on after")
    ] = Field(180.0, ge=5, le=3600)

    # Token management (fitting content into each model's context window).
    token_management_enabled: Annotated[bool, OFF_SPENDS] = True
    token_safety_margin: Annotated[float, HIGHER_READS] = Field(0.15, ge=0.0, le=0.9)
    # Tokens of the model's window a runtime around it takes; None: the provider's own (0 for
    # the APIs). An untrusted file's value applies only above the provider's own.
    runtime_overhead: Annotated[int | None, NARROWS_READS] = Field(None, ge=0)
    # Tokens of the calling assistant's window already taken; what is left bounds the report
    # (and the output every call reserves, so either way it changes what a round reads).
    assistant_overhead: Annotated[int, Protected(Effect.READS)] = Field(60_000, ge=0)
    summarization_provider: Annotated[str | None, SPENDS] = None
    summarization_providers: Annotated[list[str], SPENDS] = Field(default_factory=list)
    summarization_timeout: Annotated[float, LOWER_SPENDS] = Field(60.0, gt=0, le=3600)
    summarization_cache_enabled: Annotated[bool, Ordered(Effect.SPENDS, (True, False))] = True
    allow_content_dropping: Annotated[
        bool, Harmless("lets a research read less rather than fail")
    ] = False
    # Keeps copies of shortened pages in the archive folder.
    content_archive_enabled: Annotated[bool, Ordered(Effect.KEEPS, (False, True))] = False
    content_archive_ttl_hours: Annotated[float, DELETES] = Field(168.0, gt=0)
    research_archive_dir: Annotated[Path | None, PLACES] = None
    # An untrusted file's windows apply only where they are smaller than the model's own.
    model_context_overrides: Annotated[dict[str, int], NARROWS_READS] = Field(default_factory=dict)

    fetch: FetchSettings = Field(default_factory=FetchSettings)
    local: LocalDocumentsSettings = Field(default_factory=LocalDocumentsSettings)

    def phase_providers(self, phase: str) -> list[str]:
        """The LLM provider specs for a phase, primary first; empty means the research's own."""
        primary = getattr(self, f"deep_research_{phase}_provider", None)
        fallbacks = getattr(self, f"deep_research_{phase}_providers", [])
        return [spec for spec in [primary, *fallbacks] if spec]

    def default_limits(self) -> dict[str, int | float | None]:
        """The research limits of a call that gives none, by limit name (a reading budget of
        :data:`WHOLE_PAGES` as None: no budget)."""
        limits = {name: getattr(self, key) for name, key in LIMIT_KEYS.items()}
        if limits["reading_budget"] == WHOLE_PAGES:
            limits["reading_budget"] = None
        return limits

    @field_validator("deep_research_reading_budget")
    @classmethod
    def _whole_or_bounded(cls, value: int) -> int:
        return check_reading_budget(value)

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
