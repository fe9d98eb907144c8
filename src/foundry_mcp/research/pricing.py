"""Estimated cost of LLM calls, from a price table shipped with the package and the user's own.

Prices are US dollars per million tokens. ``[pricing."provider:model"]`` and then
``[pricing."model"]`` in the configuration win over the shipped ``data/prices.toml``; a model
found nowhere has an unknown cost (``None``), which is counted but never guessed. Calls through
an assistant's program (claude-cli, codex-cli, gemini-cli) are paid by the user's subscription:
they cost 0 unless the configuration prices them.
"""

from __future__ import annotations

import fnmatch
import functools
import re
import tomllib
from dataclasses import dataclass
from importlib import resources
from typing import Any

from foundry_mcp.config import KNOWN_PROVIDER_KINDS, Settings
from foundry_mcp.config.provider_settings import CLI_LLM_KINDS

_DATED = re.compile(r"(-\d{4}-\d{2}-\d{2}|-\d{8}|-latest)$")


@dataclass(frozen=True)
class Price:
    """US dollars per million input and output tokens, and where the figure came from."""

    input_per_mtok: float
    output_per_mtok: float
    source: str  # "config", "table", "family" or "subscription"

    def cost(self, input_tokens: int, output_tokens: int) -> float:
        return (
            input_tokens * self.input_per_mtok + output_tokens * self.output_per_mtok
        ) / 1_000_000


@dataclass(frozen=True)
class ShippedPrices:
    """The contents of ``data/prices.toml``."""

    models: dict[str, tuple[float, float]]
    families: list[tuple[str, tuple[float, float]]]
    as_of: str


@functools.cache
def shipped_prices() -> ShippedPrices:
    """The price table shipped with foundry-mcp (read once)."""
    text = resources.files("foundry_mcp").joinpath("data/prices.toml").read_text("utf-8")
    data = tomllib.loads(text)

    def pair(entry: dict[str, Any]) -> tuple[float, float]:
        return float(entry["input_per_mtok"]), float(entry["output_per_mtok"])

    return ShippedPrices(
        models={name.lower(): pair(entry) for name, entry in data.get("models", {}).items()},
        families=[(pattern.lower(), pair(e)) for pattern, e in data.get("families", {}).items()],
        as_of=str(data.get("as_of", "")),
    )


def normalise_model(model: str) -> str:
    """``"openai/GPT-4.1-mini-2025-04-14"`` -> ``"gpt-4.1-mini"``."""
    name = model.strip().lower().rsplit("/", 1)[-1]
    return _DATED.sub("", name)


class PriceTable:
    """Looks up the price of a (provider, model) pair."""

    def __init__(
        self,
        overrides: dict[str, tuple[float, float]] | None = None,
        shipped: ShippedPrices | None = None,
        subscriptions: frozenset[str] = frozenset(),
    ) -> None:
        self._overrides = {key.strip().lower(): value for key, value in (overrides or {}).items()}
        self._shipped = shipped or shipped_prices()
        self._subscriptions = frozenset(name.strip().lower() for name in subscriptions)

    @classmethod
    def from_settings(cls, settings: Settings) -> PriceTable:
        return cls(
            {
                key: (price.input_per_mtok, price.output_per_mtok)
                for key, price in settings.pricing.items()
            },
            subscriptions=frozenset(
                name
                for name in {*KNOWN_PROVIDER_KINDS, *settings.providers}
                if settings.provider_kind(name) in CLI_LLM_KINDS
            ),
        )

    @property
    def as_of(self) -> str:
        return self._shipped.as_of

    def price(self, provider: str, *models: str | None) -> Price | None:
        """The price of the first of ``models`` (e.g. the answered, then the requested) known."""
        for model in models:
            if model:
                found = self._lookup(provider.strip().lower(), model)
                if found is not None:
                    return found
        return None

    def cost(
        self, provider: str, models: tuple[str | None, ...], input_tokens: int, output_tokens: int
    ) -> float | None:
        """The estimated cost in US dollars, or None when no price is known."""
        price = self.price(provider, *models)
        return None if price is None else price.cost(input_tokens, output_tokens)

    def _lookup(self, provider: str, model: str) -> Price | None:
        exact = model.strip().lower()
        short = normalise_model(model)
        subscription = provider in self._subscriptions
        keys = [f"{provider}:{exact}", f"{provider}:{short}"]
        if not subscription:  # a model's price by name is its API price
            keys += [exact, short]
        for key in keys:
            if key in self._overrides:
                return Price(*self._overrides[key], source="config")
        if subscription:
            return Price(0.0, 0.0, source="subscription")
        for key in (exact, short):
            if key in self._shipped.models:
                return Price(*self._shipped.models[key], source="table")
        for pattern, pair in self._shipped.families:
            if fnmatch.fnmatchcase(short, pattern):
                return Price(*pair, source="family")
        return None
