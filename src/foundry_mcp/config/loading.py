"""Reading every layer into one validated ``Settings``, and naming the source of a bad key."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from foundry_mcp.config.files import absolute, read_bytes, read_layer
from foundry_mcp.config.settings import ProjectNarrowing, Settings, UntrustedProjectConfig
from foundry_mcp.config.suggestions import unknown_key_message
from foundry_mcp.config.untrusted import without_protected_keys
from foundry_mcp.errors import ConfigError
from foundry_mcp.trust import TrustStore

CONFIG_ENV = "FOUNDRY_MCP_CONFIG"
PROJECT_CONFIG = Path("foundry-mcp.toml")

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
    # Where an assistant's program is, when it is not on PATH as claude, codex or gemini.
    "claude-cli": (("FOUNDRY_MCP_CLAUDE_CLI", "command"),),
    "codex-cli": (("FOUNDRY_MCP_CODEX_CLI", "command"),),
    "gemini-cli": (("FOUNDRY_MCP_GEMINI_CLI", "command"),),
}

# Environment variables read for [research] keys; list values are comma-separated.
RESEARCH_ENV: dict[str, str] = {
    "FOUNDRY_MCP_RESEARCH_DIR": "research_dir",
    "FOUNDRY_MCP_DEFAULT_PROVIDER": "default_provider",
    "FOUNDRY_MCP_SEARCH_PROVIDERS": "deep_research_providers",
    "FOUNDRY_MCP_MODE": "mode",
    "FOUNDRY_MCP_STORE_URL": "store_url",
}

# Environment variables read for [server] lists (comma-separated): the names a reverse proxy
# forwards, for the DNS-rebinding check.
SERVER_ENV: dict[str, str] = {
    "FOUNDRY_MCP_ALLOWED_HOSTS": "allowed_hosts",
    "FOUNDRY_MCP_ALLOWED_ORIGINS": "allowed_origins",
}

# The team server's bearer tokens, "name:token" entries separated by commas; it replaces
# [server] tokens as a whole.
TOKENS_ENV = "FOUNDRY_MCP_TOKENS"


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
    set_aside: dict[str, Any] = {}

    explicit = env.get(CONFIG_ENV)
    project_config = Path(explicit).expanduser() if explicit else cwd / PROJECT_CONFIG
    if explicit and not project_config.is_file():
        raise ConfigError(
            f"{CONFIG_ENV} names {project_config}, which does not exist.",
            remediation=f"Point {CONFIG_ENV} at an existing TOML file, or unset it.",
        )
    home_config = home / ".foundry-mcp.toml"
    if home_config.is_file():
        _merge(
            merged, read_layer(home_config, read_bytes(home_config)), origin, str(home_config), ()
        )
        sources.append(str(home_config))
    if project_config.is_file() and absolute(project_config) != absolute(home_config):
        data = read_bytes(project_config)
        layer = read_layer(project_config, data)
        if not explicit:
            verdict = TrustStore(home).verdict(project_config, data)
            if not verdict.trusted:
                sifted = without_protected_keys(layer, project_config.parent, merged)
                layer, set_aside = sifted.kept, sifted.set_aside
                if sifted.ignored:
                    untrusted = UntrustedProjectConfig(
                        path=absolute(project_config),
                        reason=verdict.reason,
                        ignored_keys=sifted.ignored,
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
    try:
        narrowing = _narrowing(set_aside, project_config)
    except ValidationError as exc:
        raise _config_error(exc, {("research",): str(project_config)}) from None
    settings._sources = sources
    settings._untrusted = untrusted
    settings._origins = origin
    settings._narrowing = narrowing
    return settings


def _narrowing(set_aside: dict[str, Any], project_config: Path) -> ProjectNarrowing:
    """The set-aside values of an untrusted project file, validated as the keys they are."""
    given = set_aside.get("research", {})
    if not given:
        return ProjectNarrowing()
    research = Settings.model_validate({"research": given}).research
    values = {key: getattr(research, key) for key in research.model_fields_set}
    return ProjectNarrowing(file=absolute(project_config), **values)


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
    for variable, key in SERVER_ENV.items():
        raw = env.get(variable, "").strip()
        if raw:
            layer.setdefault("server", {})[key] = [p.strip() for p in raw.split(",") if p.strip()]
            origin[("server", key)] = f"environment variable {variable}"
    tokens = env.get(TOKENS_ENV, "").strip()
    if tokens:
        layer.setdefault("server", {})["tokens"] = _token_entries(tokens)
        origin[("server", "tokens")] = f"environment variable {TOKENS_ENV}"
    for provider, pairs in PROVIDER_ENV.items():
        for variable, key in pairs:
            raw = env.get(variable, "").strip()
            if raw:
                layer.setdefault("providers", {}).setdefault(provider, {})[key] = raw
                origin[("providers", provider, key)] = f"environment variable {variable}"
    return layer, origin


def _token_entries(raw: str) -> list[dict[str, str]]:
    """``name:token,name:token`` as ``[server] tokens`` entries; the error never quotes a token."""
    entries = []
    items = [item.strip() for item in raw.split(",") if item.strip()]
    for number, item in enumerate(items, start=1):
        name, colon, token = item.partition(":")
        if not (colon and name.strip() and token.strip()):
            raise ConfigError(
                f"Invalid configuration: environment variable {TOKENS_ENV}: entry {number} is "
                "not of the form name:token.",
                remediation=(
                    f"Set {TOKENS_ENV} to comma-separated name:token pairs, e.g. "
                    "alice:<token>,bob:<token> (see docs/team-server.md)."
                ),
            )
        entries.append({"name": name.strip(), "token": token.strip()})
    return entries


def _config_error(exc: ValidationError, origin: dict[tuple[str, ...], str]) -> ConfigError:
    problems = []
    for error in exc.errors():
        loc = tuple(str(part) for part in error["loc"])
        where = _origin_of(loc, origin)
        key = _describe_key(loc)
        message = error["msg"]
        if error["type"] == "extra_forbidden":
            message = unknown_key_message(loc)
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
