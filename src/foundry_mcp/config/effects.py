"""What each setting can do, and so what a project file the user has not trusted may set.

Every settings field carries one rule in its annotation (``Annotated[int, LOWER_SPENDS]``):

- :class:`Protected`: the key can delete or expire data, start or resume runs, run code, spend
  money, move data or change what is read or where requests go. An untrusted file's value is
  ignored (unless it is the value that applies anyway).
- :class:`Bound`: a limit on what is spent, read or run (``None``: no limit). An untrusted file
  may lower it, never raise it.
- :class:`Ordered`: a choice whose values go from cheapest to dearest (``False`` before ``True``
  for a feature that costs when on). An untrusted file may move it toward the cheap end only.
- :class:`Narrows`: a list of what may be used or read. An untrusted file may leave entries
  out, never add one.
- :class:`WithinProject`: folders to read. An untrusted file may name folders inside its own.
- :class:`Harmless`: the key neither deletes, runs, spends, moves, reads nor sends more; the
  reason says why. It applies from any file.

A section (a nested settings model, a table of them) carries no rule of its own unless the
whole table is protected; its fields carry theirs. ``tests/unit/test_setting_effects.py`` walks
every field and fails on one with no rule, so a new key cannot slip through unclassified.
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


@dataclass(frozen=True)
class Harmless:
    """A key any file may set; ``reason`` says why it is safe."""

    reason: str
    marker = "applies"


@dataclass(frozen=True)
class Protected:
    """A key an untrusted file may not set."""

    effect: Effect
    marker = "needs trust"

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
    marker = "lower only"

    def keeps(self, value: Any, applying: Any, project: Path) -> bool:
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
            return "off only" if cheapest is False else "on only"
        return f"`{cheapest}` only"

    def keeps(self, value: Any, applying: Any, project: Path) -> bool:
        if not _is_listed(value, self.values) or not _is_listed(applying, self.values):
            return False
        return _index(value, self.values) <= _index(applying, self.values)


@dataclass(frozen=True)
class Narrows:
    """A list an untrusted file may shorten, never extend (compared without case)."""

    effect: Effect
    marker = "fewer only"

    def keeps(self, value: Any, applying: Any, project: Path) -> bool:
        if not isinstance(value, list) or not isinstance(applying, list):
            return False
        allowed = {_folded(item) for item in applying}
        return all(_folded(item) in allowed for item in value)


@dataclass(frozen=True)
class WithinProject:
    """Folders an untrusted file may name only inside its own folder."""

    effect: Effect
    marker = "inside only"

    def inside(self, path: Any, project: Path) -> bool:
        """Whether ``path`` lies in ``project``, symbolic links resolved."""
        if not isinstance(path, str):
            return False
        try:
            return absolute(Path(path)).is_relative_to(absolute(project))
        except (OSError, RuntimeError):  # an unresolvable path or a symlink loop
            return False


Rule = Harmless | Protected | Bound | Ordered | Narrows | WithinProject


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
OFF_SPENDS = Ordered(Effect.SPENDS, (False, True))
OFF_READS = Ordered(Effect.READS, (False, True))
OFF_RUNS = Ordered(Effect.RUNS, (False, True))
SPENDS = Protected(Effect.SPENDS)
SENDS = Protected(Effect.SENDS)
PLACES = Protected(Effect.PLACES)
DELETES = Protected(Effect.DELETES)
RUNS = Protected(Effect.RUNS)
SAFEGUARD = Protected(Effect.SAFEGUARD)
PACKING = Harmless(
    "changes how the content a research gathered is packed into calls; it gathers, sends and "
    "deletes nothing more"
)
