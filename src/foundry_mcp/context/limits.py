"""Context windows and output limits per model, from ``data/model_limits.toml``.

A model name is looked up without its provider prefix: its exact key first, then the longest
key that is a prefix of it. Unknown models get the table's ``[default]`` (a window small enough
to be safe on most servers). ``[research] model_context_overrides`` replaces the window of a
model (keys ``"provider:model"``, ``"model"`` or a name prefix); the special key ``client``
names the calling assistant's window instead (see :mod:`foundry_mcp.context.budget`). Windows
an untrusted project file declares (``ceilings``, the same keys) only ever lower a model's
window; its ``client`` is not read (the assistant is the user's, not the project's).
"""

from __future__ import annotations

import functools
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any

from foundry_mcp.config import KNOWN_PROVIDER_KINDS

CLIENT_KEY = "client"
DEFAULT_CLIENT_WINDOW = 200_000  # the assistants this server is built for (Claude Code, Cursor)
MIN_OUTPUT_SHARE = 4  # an overridden window keeps at most a quarter for output


@dataclass(frozen=True)
class ModelLimits:
    """What one model can take in and give out, in tokens, and where the numbers came from."""

    model: str
    context_window: int
    max_output: int
    source: str  # "table", "override" or "default"
    matched: str | None = None  # the table or override key that matched


@dataclass(frozen=True)
class _Entry:
    context_window: int
    max_output: int


@functools.cache
def _table() -> tuple[_Entry, dict[str, _Entry]]:
    text = resources.files("foundry_mcp").joinpath("data/model_limits.toml").read_text("utf-8")
    data: dict[str, Any] = tomllib.loads(text)
    default = _entry(data["default"])
    models = {str(name).lower(): _entry(values) for name, values in data["models"].items()}
    return default, models


def _entry(values: Mapping[str, Any]) -> _Entry:
    window = int(values["context_window"])
    output = int(values["max_output"])
    if window < 1000 or output < 1 or output >= window:
        raise ValueError(f"bad model limits entry: {dict(values)}")
    return _Entry(window, output)


def known_models() -> list[str]:
    """The model keys of the table (for docs and tests)."""
    return sorted(_table()[1])


def bare_model(model: str) -> str:
    """``"openai:gpt-4o"`` -> ``"gpt-4o"``; lower case, without a provider or router prefix.

    Only a known provider name counts as a prefix, so an Ollama tag such as ``qwen2.5:14b``
    stays whole.
    """
    name = model.strip().lower()
    prefix, colon, rest = name.partition(":")
    if colon and prefix in KNOWN_PROVIDER_KINDS:
        name = rest
    return name.rsplit("/", 1)[-1]


def _longest_prefix(name: str, keys: Mapping[str, Any]) -> str | None:
    if name in keys:
        return name
    best: str | None = None
    for key in keys:
        if name.startswith(key) and (best is None or len(key) > len(best)):
            best = key
    return best


def model_limits(
    model: str,
    provider: str | None = None,
    overrides: Mapping[str, int] | None = None,
    ceilings: Mapping[str, int] | None = None,
) -> ModelLimits:
    """The limits of ``model`` (served by ``provider``), with ``overrides`` applied; a window
    among ``ceilings`` (an untrusted file's overrides) applies only when it is smaller."""
    limits = _overridden(model, provider, overrides or {})
    capped = _overridden(model, provider, ceilings or {})
    if capped.source == "override" and capped.context_window < limits.context_window:
        return capped
    return limits


def _overridden(model: str, provider: str | None, overrides: Mapping[str, int]) -> ModelLimits:
    default, table = _table()
    name = bare_model(model)
    key = _longest_prefix(name, table)
    entry = table[key] if key is not None else default
    limits = ModelLimits(
        model=name,
        context_window=entry.context_window,
        max_output=entry.max_output,
        source="table" if key is not None else "default",
        matched=key,
    )
    window, matched = _override(name, provider, overrides)
    if window is None:
        return limits
    output = min(limits.max_output, max(256, window // MIN_OUTPUT_SHARE))
    return ModelLimits(
        model=name, context_window=window, max_output=output, source="override", matched=matched
    )


def _override(
    name: str, provider: str | None, overrides: Mapping[str, int]
) -> tuple[int | None, str | None]:
    normalised = {k.strip().lower(): v for k, v in overrides.items() if k.strip() != CLIENT_KEY}
    if provider:
        full = f"{provider.strip().lower()}:{name}"
        if full in normalised:
            return int(normalised[full]), full
    models = {k: v for k, v in normalised.items() if ":" not in k}
    key = _longest_prefix(name, models)
    if key is not None:
        return int(models[key]), key
    return None, None


def client_window(overrides: Mapping[str, int] | None) -> int:
    """The calling assistant's context window: ``model_context_overrides.client`` or 200K."""
    for key, value in (overrides or {}).items():
        if key.strip().lower() == CLIENT_KEY:
            return int(value)
    return DEFAULT_CLIENT_WINDOW
