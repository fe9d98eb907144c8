"""Settings: built-in defaults < ~/.foundry-mcp.toml < ./foundry-mcp.toml < environment.

``./foundry-mcp.toml`` is replaced by the file named in ``FOUNDRY_MCP_CONFIG`` when that is set.
Every key is validated; an invalid file or value raises ``ConfigError`` naming the file (or the
environment variable), the key and the fix. Nothing invalid is silently dropped.

The user's own file, the environment and a file named in ``FOUNDRY_MCP_CONFIG`` are trusted. A
``./foundry-mcp.toml`` in the working directory usually comes with a cloned repository: until
the user trusts it (``foundry-mcp trust``, see :mod:`foundry_mcp.trust`) its protected keys are
ignored and named in ``Settings.ignored_keys``; every other key applies. Relative paths in a file
are taken relative to the folder of that file.
"""

from __future__ import annotations

import copy
import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)

from foundry_mcp.errors import ConfigError
from foundry_mcp.trust import TrustStore

CONFIG_ENV = "FOUNDRY_MCP_CONFIG"
PROJECT_CONFIG = Path("foundry-mcp.toml")

# Keys an untrusted project file may not set: where requests and keys go, what code runs, what
# the server may read or write, and what the user pays.
PROTECTED_PROVIDER_KEYS = ("type", "api_key", "base_url")
PROTECTED_RESEARCH_KEYS = ("supervisor_hooks", "research_dir", "research_archive_dir", "max_cost_usd")
PROTECTED_FETCH_KEYS = ("allow_private_networks",)
PROTECTED_TABLES = ("pricing",)
# Path-valued keys, as (table path, key): relative values are taken from the file's folder.
PATH_KEYS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("research",), "research_dir"),
    (("research",), "research_archive_dir"),
    (("research", "local"), "paths"),
)

# The bounds of each research limit, shared by the configuration, the service and the MCP
# tool's published schema: (lowest, highest).
LIMIT_BOUNDS: dict[str, tuple[int | float, int | float]] = {
    "max_iterations": (1, 10),
    "max_sub_queries": (1, 20),
    "max_sources_per_query": (1, 50),
    "max_concurrent": (1, 10),
    "task_timeout": (10, 86400),
}

ProviderKind = Literal[
    "openai", "anthropic", "gemini", "tavily", "google", "semantic_scholar", "local"
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
}

DEFAULT_MODELS: dict[str, str] = {
    "openai": "gpt-4.1-mini",
    "anthropic": "claude-sonnet-5",
    "gemini": "gemini-2.5-flash",
}

# Environment variables read for each provider, as (variable, key in [providers.<name>]).
PROVIDER_ENV: dict[str, tuple[tuple[str, str], ...]] = {
    "openai": (("OPENAI_API_KEY", "api_key"), ("OPENAI_BASE_URL", "base_url")),
    "anthropic": (("ANTHROPIC_API_KEY", "api_key"), ("ANTHROPIC_BASE_URL", "base_url")),
    "gemini": (("GEMINI_API_KEY", "api_key"), ("GOOGLE_GEMINI_BASE_URL", "base_url")),
    "tavily": (("TAVILY_API_KEY", "api_key"), ("TAVILY_BASE_URL", "base_url")),
    "google": (
        ("GOOGLE_API_KEY", "api_key"),
        ("GOOGLE_CSE_ID", "cse_id"),
        ("GOOGLE_CSE_BASE_URL", "base_url"),
    ),
    "semantic_scholar": (
        ("SEMANTIC_SCHOLAR_API_KEY", "api_key"),
        ("SEMANTIC_SCHOLAR_BASE_URL", "base_url"),
    ),
}

# Environment variables read for [research] keys; list values are comma-separated.
RESEARCH_ENV: dict[str, str] = {
    "FOUNDRY_MCP_RESEARCH_DIR": "research_dir",
    "FOUNDRY_MCP_DEFAULT_PROVIDER": "default_provider",
    "FOUNDRY_MCP_SEARCH_PROVIDERS": "deep_research_providers",
    "FOUNDRY_MCP_MODE": "mode",
}


_LOW = {name: low for name, (low, _) in LIMIT_BOUNDS.items()}
_HIGH = {name: high for name, (_, high) in LIMIT_BOUNDS.items()}


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_default=True)


class FetchSettings(_Section):
    """The ``[research.fetch]`` table: reading full pages for sources."""

    enabled: bool = True
    follow_links: bool = False
    max_bytes: int = Field(10_000_000, ge=1000, le=100_000_000)
    max_redirects: int = Field(5, ge=0, le=20)
    timeout: float = Field(20.0, gt=0, le=300)
    max_concurrent: int = Field(5, ge=1, le=50)
    allow_private_networks: bool = False


class LocalDocumentsSettings(_Section):
    """The ``[research.local]`` table: the user's own documents as a search provider."""

    paths: list[Path] = Field(default_factory=list)
    extensions: list[str] = Field(
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
    max_file_bytes: int = Field(20_000_000, ge=1000)

    @field_validator("paths")
    @classmethod
    def _expand_paths(cls, value: list[Path]) -> list[Path]:
        return [path.expanduser() for path in value]


class ResearchSettings(_Section):
    """The ``[research]`` table: how a deep research runs."""

    default_provider: str = "openai"
    deep_research_max_iterations: int = Field(3, ge=_LOW["max_iterations"], le=_HIGH["max_iterations"])
    deep_research_max_sub_queries: int = Field(
        5, ge=_LOW["max_sub_queries"], le=_HIGH["max_sub_queries"]
    )
    deep_research_max_sources: int = Field(
        5, ge=_LOW["max_sources_per_query"], le=_HIGH["max_sources_per_query"]
    )
    deep_research_max_concurrent: int = Field(
        3, ge=_LOW["max_concurrent"], le=_HIGH["max_concurrent"]
    )
    deep_research_timeout: float = Field(
        600.0, ge=_LOW["task_timeout"], le=_HIGH["task_timeout"]
    )
    deep_research_providers: list[str] = Field(default_factory=lambda: ["tavily"])
    research_dir: Path = Path("~/.foundry-mcp/research")
    deep_research_verify_citations: bool = True
    deep_research_verification_max_claims: int = Field(60, ge=1, le=500)
    deep_research_gate_retries: int = Field(1, ge=0, le=3)
    deep_research_enable_reflection: bool = False
    supervisor_hooks: str | None = None
    deep_research_planning_timeout: float = Field(180.0, ge=1, le=86400)
    deep_research_gathering_timeout: float = Field(300.0, ge=1, le=86400)
    deep_research_analysis_timeout: float = Field(300.0, ge=1, le=86400)
    deep_research_synthesis_timeout: float = Field(300.0, ge=1, le=86400)
    deep_research_refinement_timeout: float = Field(180.0, ge=1, le=86400)
    retention_days: float | None = Field(None, gt=0)
    auto_resume: bool = False

    # Per-phase LLM provider and its fallbacks, as "provider[:model]" specs.
    deep_research_planning_provider: str | None = None
    deep_research_planning_providers: list[str] = Field(default_factory=list)
    deep_research_analysis_provider: str | None = None
    deep_research_analysis_providers: list[str] = Field(default_factory=list)
    deep_research_synthesis_provider: str | None = None
    deep_research_synthesis_providers: list[str] = Field(default_factory=list)
    deep_research_refinement_provider: str | None = None
    deep_research_refinement_providers: list[str] = Field(default_factory=list)
    tavily_search_depth: Literal["basic", "advanced"] = "basic"

    # Research modes (docs/modes.md).
    mode: Literal["auto", "simple", "hierarchical", "hypotheses"] = "auto"
    min_sub_questions: int = Field(2, ge=2, le=5)
    max_sub_questions: int = Field(5, ge=2, le=5)
    sub_question_min_iterations: int = Field(1, ge=1, le=10)
    sub_question_max_iterations: int = Field(3, ge=1, le=10)
    sub_question_max_queries: int = Field(3, ge=1, le=20)
    max_hypotheses_per_task: int = Field(4, ge=1, le=10)
    hypothesis_mode: Literal["adaptive", "exhaustive", "best_first"] = "adaptive"
    exploration_mode: Literal["sequential", "parallel"] = "sequential"
    min_confidence_threshold: int = Field(0, ge=0, le=100)
    max_cost_usd: float | None = Field(None, gt=0)

    # Token management (fitting content into each model's context window).
    token_management_enabled: bool = True
    token_safety_margin: float = Field(0.15, ge=0.0, le=0.9)
    runtime_overhead: int = Field(60_000, ge=0)
    summarization_provider: str | None = None
    summarization_providers: list[str] = Field(default_factory=list)
    summarization_timeout: float = Field(60.0, gt=0, le=3600)
    summarization_cache_enabled: bool = True
    allow_content_dropping: bool = False
    content_archive_enabled: bool = False
    content_archive_ttl_hours: float = Field(168.0, gt=0)
    research_archive_dir: Path | None = None
    model_context_overrides: dict[str, int] = Field(default_factory=dict)

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

    type: ProviderKind | None = None
    api_key: SecretStr | None = None
    base_url: str | None = None
    model: str | None = None
    timeout: float | None = Field(None, gt=0, le=3600)  # None: see timeout_for
    max_retries: int = Field(2, ge=0, le=10)
    cse_id: str | None = None  # Google Custom Search engine id
    requests_per_minute: float | None = Field(None, gt=0)
    max_in_flight: int | None = Field(None, ge=1, le=100)
    circuit_breaker_failures: int = Field(5, ge=1, le=100)
    circuit_breaker_reset_seconds: float = Field(30.0, gt=0, le=3600)
    hedge_requests: bool = True  # search providers only; may cost a credit on slow requests

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


class LoggingSettings(_Section):
    level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "WARNING"


class Settings(_Section):
    """All of foundry-mcp's settings."""

    research: ResearchSettings = Field(default_factory=ResearchSettings)
    providers: dict[str, ProviderSettings] = Field(default_factory=dict)
    pricing: dict[str, PriceSettings] = Field(default_factory=dict)
    logging: LoggingSettings = Field(default_factory=LoggingSettings)
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


# --------------------------------------------------------------------------- loading


class UntrustedProjectConfig(BaseModel):
    """A ``./foundry-mcp.toml`` the user has not trusted, and the keys of it that were ignored."""

    path: Path
    reason: str  # "never trusted" or "changed since it was trusted"
    ignored_keys: list[str]

    def warning(self) -> str:
        return (
            f"{self.path} is not trusted ({self.reason}), so these keys in it were ignored: "
            f"{', '.join(self.ignored_keys)}. If you wrote this file and want them to apply, "
            f"run: foundry-mcp trust {self.path}"
        )


def load_settings(
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    home: Path | None = None,
) -> Settings:
    """Read every configuration layer and return validated settings."""
    env = os.environ if env is None else env
    cwd = Path.cwd() if cwd is None else cwd
    home = Path.home() if home is None else home

    merged: dict[str, Any] = {}
    origin: dict[tuple[str, ...], str] = {}
    sources: list[str] = []
    untrusted: UntrustedProjectConfig | None = None

    explicit = env.get(CONFIG_ENV)
    project_config = Path(explicit).expanduser() if explicit else cwd / PROJECT_CONFIG
    if explicit and not project_config.is_file():
        raise ConfigError(
            f"{CONFIG_ENV} names {project_config}, which does not exist.",
            remediation=f"Point {CONFIG_ENV} at an existing TOML file, or unset it.",
        )
    home_config = home / ".foundry-mcp.toml"
    if home_config.is_file():
        _merge(merged, _read_layer(home_config, _read_bytes(home_config)), origin, str(home_config), ())
        sources.append(str(home_config))
    if project_config.is_file() and _absolute(project_config) != _absolute(home_config):
        data = _read_bytes(project_config)
        layer = _read_layer(project_config, data)
        if not explicit:
            verdict = TrustStore(home).verdict(project_config, data)
            if not verdict.trusted:
                layer, ignored = _without_protected_keys(layer, project_config.parent)
                if ignored:
                    untrusted = UntrustedProjectConfig(
                        path=_absolute(project_config), reason=verdict.reason, ignored_keys=ignored
                    )
        _merge(merged, layer, origin, str(project_config), ())
        sources.append(str(project_config))

    env_layer, env_origin = _environment_layer(env)
    for path_key, label in env_origin.items():
        origin[path_key] = label
    _merge(merged, env_layer, origin, None, ())

    try:
        settings = Settings.model_validate(merged)
    except ValidationError as exc:
        raise _config_error(exc, origin) from None
    settings._sources = sources
    settings._untrusted = untrusted
    return settings


def _absolute(path: Path) -> Path:
    return path.expanduser().resolve()


def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise ConfigError(
            f"{path} cannot be read: {exc.strerror}.",
            remediation=f"Check the permissions of {path}.",
        ) from None


def _read_layer(path: Path, data: bytes) -> dict[str, Any]:
    """One file's settings, with relative paths anchored at the file's folder."""
    layer = _parse_toml(path, data)
    for tables, key in PATH_KEYS:
        table = _table(layer, tables)
        if table is None or key not in table:
            continue
        value = table[key]
        if isinstance(value, str):
            table[key] = str(_anchored(value, path.parent))
        elif isinstance(value, list):
            table[key] = [
                str(_anchored(item, path.parent)) if isinstance(item, str) else item
                for item in value
            ]
    return layer


def _anchored(value: str, folder: Path) -> Path:
    candidate = Path(value).expanduser()
    return candidate if candidate.is_absolute() else folder / candidate


def _table(layer: dict[str, Any], tables: tuple[str, ...]) -> dict[str, Any] | None:
    node: Any = layer
    for name in tables:
        node = node.get(name) if isinstance(node, dict) else None
    return node if isinstance(node, dict) else None


def _without_protected_keys(
    layer: dict[str, Any], project: Path
) -> tuple[dict[str, Any], list[str]]:
    """An untrusted project file's settings without its protected keys, and their names.

    Local document folders inside the project's own folder are kept; others are protected.
    """
    kept = copy.deepcopy(layer)
    ignored: list[str] = []
    providers = kept.get("providers")
    if isinstance(providers, dict):
        for name, table in providers.items():
            for key in PROTECTED_PROVIDER_KEYS:
                if isinstance(table, dict) and table.pop(key, None) is not None:
                    ignored.append(f"[providers.{name}] {key}")
    # A protected key set to its built-in default is dropped without a word: the user's own
    # value (or that same default) applies, and nothing the user should know about happened.
    research = _table(kept, ("research",))
    for key in PROTECTED_RESEARCH_KEYS:
        if research is not None and key in research and not _is_default(
            ResearchSettings, key, research.pop(key)
        ):
            ignored.append(f"[research] {key}")
    fetch = _table(kept, ("research", "fetch"))
    for key in PROTECTED_FETCH_KEYS:
        if fetch is not None and key in fetch and not _is_default(
            FetchSettings, key, fetch.pop(key)
        ):
            ignored.append(f"[research.fetch] {key}")
    local = _table(kept, ("research", "local"))
    if local is not None and isinstance(local.get("paths"), list):
        root = _absolute(project)
        inside = [p for p in local["paths"] if isinstance(p, str) and _is_within(p, root)]
        outside = [p for p in local["paths"] if p not in inside]
        if outside:
            local["paths"] = inside
            listed = ", ".join(str(p) for p in outside)
            ignored.append(f"[research.local] paths outside {root} ({listed})")
    for table in PROTECTED_TABLES:
        if kept.pop(table, None) is not None:
            ignored.append(f"[{table}]")
    return kept, ignored


def protected_keys_in(path: Path, data: bytes) -> list[str]:
    """The protected keys a project file sets (to other than their defaults)."""
    return _without_protected_keys(_read_layer(path, data), path.parent)[1]


def _is_default(section: type[BaseModel], key: str, value: Any) -> bool:
    default = section.model_fields[key].get_default(call_default_factory=True)
    if isinstance(default, Path):
        return isinstance(value, str) and _absolute(Path(value)) == _absolute(default)
    return bool(value == default)


def _is_within(path: str, root: Path) -> bool:
    try:
        return _absolute(Path(path)).is_relative_to(root)
    except (OSError, RuntimeError):  # an unresolvable path or a symlink loop
        return False


def _parse_toml(path: Path, data: bytes) -> dict[str, Any]:
    try:
        return tomllib.loads(data.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(
            f"{path} is not valid TOML: {exc}.",
            remediation=f"Fix the syntax of {path} (see the sample foundry-mcp.toml).",
        ) from None


def _merge(
    target: dict[str, Any],
    layer: Mapping[str, Any],
    origin: dict[tuple[str, ...], str],
    label: str | None,
    prefix: tuple[str, ...],
) -> None:
    """Deep-merge ``layer`` into ``target``, remembering where each leaf came from."""
    for key, value in layer.items():
        path = (*prefix, key)
        if isinstance(value, Mapping) and isinstance(target.get(key), dict):
            _merge(target[key], value, origin, label, path)
            continue
        if isinstance(value, Mapping):
            target[key] = {}
            _merge(target[key], value, origin, label, path)
            continue
        target[key] = value
        if label is not None:
            origin[path] = label


def _environment_layer(
    env: Mapping[str, str],
) -> tuple[dict[str, Any], dict[tuple[str, ...], str]]:
    layer: dict[str, Any] = {}
    origin: dict[tuple[str, ...], str] = {}
    for variable, key in RESEARCH_ENV.items():
        raw = env.get(variable, "").strip()
        if not raw:
            continue
        value: Any = [part.strip() for part in raw.split(",") if part.strip()]
        if key != "deep_research_providers":
            value = raw
        layer.setdefault("research", {})[key] = value
        origin[("research", key)] = f"environment variable {variable}"
    allow_private = env.get("FOUNDRY_MCP_FETCH_ALLOW_PRIVATE", "").strip()
    if allow_private:
        layer.setdefault("research", {}).setdefault("fetch", {})["allow_private_networks"] = (
            allow_private.lower() in ("1", "true", "yes", "on")
        )
        origin[("research", "fetch", "allow_private_networks")] = (
            "environment variable FOUNDRY_MCP_FETCH_ALLOW_PRIVATE"
        )
    for provider, pairs in PROVIDER_ENV.items():
        for variable, key in pairs:
            raw = env.get(variable, "").strip()
            if raw:
                layer.setdefault("providers", {}).setdefault(provider, {})[key] = raw
                origin[("providers", provider, key)] = f"environment variable {variable}"
    return layer, origin


def _config_error(exc: ValidationError, origin: dict[tuple[str, ...], str]) -> ConfigError:
    problems = []
    for error in exc.errors():
        loc = tuple(str(part) for part in error["loc"])
        where = _origin_of(loc, origin)
        key = _describe_key(loc)
        message = error["msg"]
        if error["type"] == "extra_forbidden":
            message = "unknown key (it is not read by foundry-mcp; check the spelling)"
        problems.append(f"{where}: {key}: {message}")
    summary = "; ".join(problems)
    return ConfigError(
        f"Invalid configuration: {summary}.",
        remediation=(
            "Correct or remove the named key; docs/configuration.md lists every key, its type "
            "and default."
        ),
        details={"problems": problems},
    )


def _origin_of(loc: tuple[str, ...], origin: dict[tuple[str, ...], str]) -> str:
    for length in range(len(loc), 0, -1):
        label = origin.get(loc[:length])
        if label:
            return label
    # A whole table that came from one file: find any leaf beneath it.
    for path, label in origin.items():
        if path[: len(loc)] == loc:
            return label
    return "configuration"


def _describe_key(loc: tuple[str, ...]) -> str:
    if len(loc) >= 3 and loc[0] == "providers":
        return f"[providers.{loc[1]}] {'.'.join(loc[2:])}"
    if len(loc) >= 2:
        return f"[{loc[0]}] {'.'.join(loc[1:])}"
    return loc[0] if loc else "(root)"
