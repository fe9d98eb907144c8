"""What an untrusted ``./foundry-mcp.toml`` may not set, and how its protected keys are dropped.

Until the user trusts the file (``foundry-mcp trust``, see :mod:`foundry_mcp.trust`), its
protected keys are ignored and named in an :class:`UntrustedProjectConfig`; every other key
applies.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from foundry_mcp.config.files import absolute, read_layer, table
from foundry_mcp.config.settings import FetchSettings, ResearchSettings

# Keys an untrusted project file may not set: where requests and keys go, what code runs, what
# the server may read or write, and what the user pays.
PROTECTED_PROVIDER_KEYS = ("type", "api_key", "base_url", "command")
PROTECTED_RESEARCH_KEYS = (
    "supervisor_hooks",
    "research_dir",
    "research_archive_dir",
    "store_url",
    "max_cost_usd",
)
PROTECTED_FETCH_KEYS = ("allow_private_networks",)
# [server]: who may use the team server (its tokens) and where it listens.
PROTECTED_TABLES = ("pricing", "server")


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


def without_protected_keys(
    layer: dict[str, Any], project: Path
) -> tuple[dict[str, Any], list[str]]:
    """An untrusted project file's settings without its protected keys, and their names.

    Local document folders inside the project's own folder are kept; others are protected.
    """
    kept = copy.deepcopy(layer)
    ignored: list[str] = []
    providers = kept.get("providers")
    if isinstance(providers, dict):
        for name, provider in providers.items():
            for key in PROTECTED_PROVIDER_KEYS:
                if isinstance(provider, dict) and provider.pop(key, None) is not None:
                    ignored.append(f"[providers.{name}] {key}")
    # A protected key set to its built-in default is dropped without a word: the user's own
    # value (or that same default) applies, and nothing the user should know about happened.
    research = table(kept, ("research",))
    for key in PROTECTED_RESEARCH_KEYS:
        if (
            research is not None
            and key in research
            and not _is_default(ResearchSettings, key, research.pop(key))
        ):
            ignored.append(f"[research] {key}")
    fetch = table(kept, ("research", "fetch"))
    for key in PROTECTED_FETCH_KEYS:
        if (
            fetch is not None
            and key in fetch
            and not _is_default(FetchSettings, key, fetch.pop(key))
        ):
            ignored.append(f"[research.fetch] {key}")
    local = table(kept, ("research", "local"))
    if local is not None and isinstance(local.get("paths"), list):
        root = absolute(project)
        inside = [p for p in local["paths"] if isinstance(p, str) and _is_within(p, root)]
        outside = [p for p in local["paths"] if p not in inside]
        if outside:
            local["paths"] = inside
            listed = ", ".join(str(p) for p in outside)
            ignored.append(f"[research.local] paths outside {root} ({listed})")
    for name in PROTECTED_TABLES:
        if kept.pop(name, None) is not None:
            ignored.append(f"[{name}]")
    return kept, ignored


def protected_keys_in(path: Path, data: bytes) -> list[str]:
    """The protected keys a project file sets (to other than their defaults)."""
    return without_protected_keys(read_layer(path, data), path.parent)[1]


def _is_default(section: type[BaseModel], key: str, value: Any) -> bool:
    default = section.model_fields[key].get_default(call_default_factory=True)
    if isinstance(default, Path):
        return isinstance(value, str) and absolute(Path(value)) == absolute(default)
    return bool(value == default)


def _is_within(path: str, root: Path) -> bool:
    try:
        return absolute(Path(path)).is_relative_to(root)
    except (OSError, RuntimeError):  # an unresolvable path or a symlink loop
        return False
