"""Who asks: the principal a research belongs to, and the limits set for it.

On a team server (``foundry-mcp serve --http`` with tokens) every request carries the principal
named by its bearer token; a research belongs to the principal that started it and is invisible
to every other one. Everywhere else (stdio, the CLI, a loopback server without tokens) there is
no principal (``None``): the local user, who sees every research and has no limits.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Principal:
    """A named caller of a team server, with its limits (``None``: no limit)."""

    name: str
    max_concurrent_researches: int | None = None
    max_cost_usd_per_day: float | None = None


def name_of(principal: Principal | None) -> str | None:
    """The principal's name, or None for the local user."""
    return principal.name if principal is not None else None
