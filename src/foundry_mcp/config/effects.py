"""What each setting can do, and so what a project file the user has not trusted may set.

Every settings field carries one rule in its annotation (``Annotated[int, LOWER_SPENDS]``):

- :class:`Protected`: the key can delete or expire data, start or resume runs, run code, spend
  money, move data or change what is read or where requests go. An untrusted file's value is
  ignored (unless it is the value that applies anyway).
- :class:`Bound`: a limit on what is spent, read or run (``None``: no limit). An untrusted file
  may lower it, never raise it.
- :class:`Ordered`: a choice whose values go from cheapest to dearest (``False`` before ``True``
  for a feature that costs when on). An untrusted file may move it toward the cheap end only.
- :class:`Floor`: a margin or reserve that makes a research read or write less as it grows. An
  untrusted file may raise it, never lower it.
- :class:`Narrows`: a list of what may be used or read. An untrusted file may leave entries
  out, never add one.
- :class:`NarrowsWhereUsed`: a value whose effect only the code that uses it can judge (which
  search services the user's own settings reach, the context window a model has). An untrusted
  file's value is set aside (:class:`foundry_mcp.config.ProjectNarrowing`) and applies only
  where it leads to less than the user's own settings do: fewer services, smaller windows.
- :class:`WithinProject`: folders to read. An untrusted file may name folders inside its own.
- :class:`Harmless`: the key neither deletes, runs, spends, moves, reads nor sends more; the
  reason says why. It applies from any file.

A section (a nested settings model, a table of them) carries no rule of its own unless the
whole table is protected; its fields carry theirs. ``tests/unit/test_setting_effects.py`` walks
every field and fails on one with no rule, so a new key cannot slip through unclassified, and
``tests/unit/test_untrusted_outcomes.py`` sets every key to hostile values from an untrusted file
and checks that the outcome (services and hosts contacted, tokens a round may read, files read,
written or deleted, limits) is never more than without the file.

Each rule's ``marker`` (the "untrusted file" column of docs/configuration.md) says what the file
may do and, in brackets, what the rule protects.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from foundry_mcp.config.files import absolute


class Effect(StrEnum):
    """What a protected key can do: why a project file needs the user's trust to set it."""

    DELETES = "deletes or expires stored research or archived pages"
    RUNS = "starts, resumes or takes over research, or runs code"
    SPENDS = "raises what a research may cost"
    PLACES = "changes where research is stored"
    READS = "changes what the server reads (files, networks, page sizes)"
    SENDS = "changes where requests, questions or keys go"
    SAFEGUARD = "weakens the fact-check that keeps unsupported claims out of reports"
    EXPOSES = "lets others use the team server, or exposes it on the network"
    KEEPS = "keeps more on disk"

    @property
    def guards(self) -> str:
        """What a rule of this effect protects, in a few words (the docs' markers)."""
        return _GUARDS[self]


_GUARDS = {
    Effect.DELETES: "your stored research",
    Effect.RUNS: "what runs on your machine",
    Effect.SPENDS: "what you pay",
    Effect.PLACES: "where research is kept",
    Effect.READS: "what is read",
    Effect.SENDS: "where your questions go",
    Effect.SAFEGUARD: "the fact-check",
    Effect.EXPOSES: "who reaches your server",
    Effect.KEEPS: "what is kept on disk",
}


def _marker(what_may: str, effect: Effect) -> str:
    return f"{what_may} ({effect.guards})"


@dataclass(frozen=True)
class Harmless:
    """A key any file may set; ``reason`` says why it is safe."""

    reason: str
    marker = "applies"


@dataclass(frozen=True)
class Protected:
    """A key an untrusted file may not set."""

    effect: Effect

    @property
    def marker(self) -> str:
        return _marker("needs trust", self.effect)

    def keeps(self, value: Any, applying: Any, project: Path) -> bool:
        return False


@dataclass(frozen=True)
class Bound:
    """A limit an untrusted file may lower, never raise.

    ``None`` is no limit, unless ``unset_is_default``: then it stands for a built-in value
    that depends on the provider, and only a value the user set can be lowered.
    """

    effect: Effect
    unset_is_default: bool = False
    zero_is_none: bool = False  # 0 is how a file writes "no limit" (TOML has no null)

    @property
    def marker(self) -> str:
        return _marker("lower only", self.effect)

    def keeps(self, value: Any, applying: Any, project: Path) -> bool:
        if self.zero_is_none:
            value, applying = (None if v == 0 else v for v in (value, applying))
            if value is None:
                return applying is None
        if not _is_number(value):
            return False
        if applying is None:
            return not self.unset_is_default
        return _is_number(applying) and value <= applying


@dataclass(frozen=True)
class Ordered:
    """A choice an untrusted file may move toward the cheap end only; ``values`` go from
    cheapest to dearest."""

    effect: Effect
    values: tuple[Any, ...]

    @property
    def marker(self) -> str:
        cheapest = self.values[0]
        if isinstance(cheapest, bool):
            return _marker("off only" if cheapest is False else "on only", self.effect)
        return _marker(f"`{cheapest}` only", self.effect)

    def keeps(self, value: Any, applying: Any, project: Path) -> bool:
        if not _is_listed(value, self.values) or not _is_listed(applying, self.values):
            return False
        return _index(value, self.values) <= _index(applying, self.values)


@dataclass(frozen=True)
class Floor:
    """A margin or reserve an untrusted file may raise, never lower: the more it holds back, the
    less a research reads or writes."""

    effect: Effect

    @property
    def marker(self) -> str:
        return _marker("higher only", self.effect)

    def keeps(self, value: Any, applying: Any, project: Path) -> bool:
        return _is_number(value) and _is_number(applying) and value >= applying


@dataclass(frozen=True)
class NarrowsWhereUsed:
    """A value whose effect depends on what only its user knows (the services the user's own
    settings reach, a model's window): an untrusted file's value is set aside and applies where
    it is used only if it leads to less than the user's own settings do."""

    effect: Effect

    @property
    def marker(self) -> str:
        return _marker("narrows only", self.effect)

    def keeps(self, value: Any, applying: Any, project: Path) -> bool:
        return False  # never as it stands: see foundry_mcp.config.ProjectNarrowing


@dataclass(frozen=True)
class Narrows:
    """A list an untrusted file may shorten, never extend (compared without case)."""

    effect: Effect

    @property
    def marker(self) -> str:
        return _marker("fewer only", self.effect)

    def keeps(self, value: Any, applying: Any, project: Path) -> bool:
        if not isinstance(value, list) or not isinstance(applying, list):
            return False
        allowed = {_folded(item) for item in applying}
        return all(_folded(item) in allowed for item in value)


@dataclass(frozen=True)
class WithinProject:
    """Folders an untrusted file may name only inside its own folder."""

    effect: Effect

    @property
    def marker(self) -> str:
        return _marker("inside only", self.effect)

    def inside(self, path: Any, project: Path) -> bool:
        """Whether ``path`` lies in ``project``, symbolic links resolved."""
        if not isinstance(path, str):
            return False
        try:
            return absolute(Path(path)).is_relative_to(absolute(project))
        except (OSError, RuntimeError):  # an unresolvable path or a symlink loop
            return False


Rule = Harmless | Protected | Bound | Floor | Ordered | Narrows | NarrowsWhereUsed | WithinProject


def rule_of(metadata: list[Any]) -> Rule | None:
    """The rule among a field's annotation metadata, if it has one."""
    rules = [item for item in metadata if isinstance(item, Rule)]
    return rules[0] if len(rules) == 1 else None


def same_value(value: Any, applying: Any) -> bool:
    """Whether a file's raw value equals the value that applies (paths compared resolved)."""
    if isinstance(applying, Path):
        return isinstance(value, str) and absolute(Path(value)) == absolute(applying)
    return bool(value == applying)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_listed(value: Any, values: tuple[Any, ...]) -> bool:
    return any(value is item or (type(value) is type(item) and value == item) for item in values)


def _index(value: Any, values: tuple[Any, ...]) -> int:
    return next(i for i, item in enumerate(values) if _is_listed(value, (item,)))


def _folded(item: Any) -> str:
    return str(item).strip().lower().lstrip(".")


# The rules shared by many keys.
LOWER_SPENDS = Bound(Effect.SPENDS)
LOWER_READS = Bound(Effect.READS)
LOWER_RUNS = Bound(Effect.RUNS)
LOWER_THAN_SET = Bound(Effect.SPENDS, unset_is_default=True)
LOWER_SPENDS_ZERO_UNLIMITED = Bound(Effect.SPENDS, zero_is_none=True)
OFF_SPENDS = Ordered(Effect.SPENDS, (False, True))
OFF_READS = Ordered(Effect.READS, (False, True))
OFF_RUNS = Ordered(Effect.RUNS, (False, True))
OFF_SENDS = Ordered(Effect.SENDS, (False, True))
HIGHER_READS = Floor(Effect.READS)
NARROWS_READS = NarrowsWhereUsed(Effect.READS)
SPENDS = Protected(Effect.SPENDS)
SENDS = Protected(Effect.SENDS)
PLACES = Protected(Effect.PLACES)
DELETES = Protected(Effect.DELETES)
RUNS = Protected(Effect.RUNS)
SAFEGUARD = Protected(Effect.SAFEGUARD)
