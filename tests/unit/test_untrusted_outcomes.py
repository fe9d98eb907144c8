"""An untrusted project file never makes a research do more than it does without the file.

Every settings key is set, from a repository's ``./foundry-mcp.toml`` the user has not trusted,
to hostile values (the extremes of its range, every choice, foreign lists, other hosts and
paths); the settings are loaded as the server loads them, and the *outcome* is read through the
product's own code and compared with the outcome without the file (``tests/outcomes.py``):

- the search services a research asks, and the hosts and models of its LLM calls;
- the programs it runs (assistants' programs, hooks);
- the tokens a round may read and write, for the research's model and three others;
- the files read (local documents, private networks), written (research and archive folders,
  the store) and deleted (retention, archive lifetime);
- the limits of a research at each effort, and each provider's retry, rate and hedging policy.

The rule a key carries (``config/effects.py``) is not consulted: the outcome is what is judged.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from foundry_mcp.config import Settings, load_settings
from foundry_mcp.config.untrusted import every_key
from foundry_mcp.errors import ConfigError
from tests.outcomes import Outcome, hostile_settings, outcome_of

PROVIDER_NAMES = ("openai", "tavily", "ddgs", "claude-cli", "evil")
# The users whose own settings the file meets: keys for an LLM and a web search service, with
# notes of their own to search; or an LLM key only, so the web search is the keyless one.
USERS = {
    "keys": {"OPENAI_API_KEY": "sk-user", "TAVILY_API_KEY": "tvly-user"},
    "keyless": {"OPENAI_API_KEY": "sk-user"},
}


def _toml(value: object) -> str:
    if isinstance(value, dict):
        inner = ", ".join(f"{json.dumps(k)} = {_toml(v)}" for k, v in value.items())
        return "{ " + inner + " }"
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return json.dumps(value)  # strings, numbers and booleans are written alike in TOML


def _file(table: tuple[str, ...], key: str, value: object) -> str:
    return (
        f"[{'.'.join(json.dumps(t) if '-' in t else t for t in table)}]\n{key} = {_toml(value)}\n"
    )


class World:
    """A user's home with their own settings, and a cloned project beside it."""

    def __init__(self, root: Path, user: str) -> None:
        self.home = root / "home"
        self.project = root / "project"
        notes = self.home / "notes"
        for folder in (notes, self.project / "docs"):
            folder.mkdir(parents=True, exist_ok=True)
        (self.home / ".foundry-mcp.toml").write_text(
            f'[research.local]\npaths = ["{notes}"]\n\n[providers.openai]\nmax_retries = 3\n'
        )
        self.env = {"HOME": str(self.home), **USERS[user]}

    def load(self, project_file: str | None = None) -> Settings:
        config = self.project / "foundry-mcp.toml"
        config.unlink(missing_ok=True)
        if project_file is not None:
            config.write_text(project_file)
        return load_settings(env=self.env, cwd=self.project, home=self.home)


def _keys() -> list[tuple[tuple[str, ...], str]]:
    keys = []
    for table, key, _ in every_key():
        if table and table[-1] == "<name>":
            keys += [((*table[:-1], name), key) for name in PROVIDER_NAMES]
        elif table:
            keys.append((table, key))
        else:  # a whole table under one rule ([server], [pricing])
            keys.append(((key,), "*"))
    return keys


@pytest.fixture
def baselines(tmp_path: Path) -> dict[str, tuple[World, Outcome]]:
    worlds = {user: World(tmp_path / user, user) for user in USERS}
    return {
        user: (world, outcome_of(world.load(), world.project)) for user, world in worlds.items()
    }


@pytest.mark.parametrize(
    ("table", "key"), _keys(), ids=lambda v: ".".join(v) if isinstance(v, tuple) else v
)
def test_no_hostile_value_of_an_untrusted_file_does_more(
    baselines: dict[str, tuple[World, Outcome]], table: tuple[str, ...], key: str
) -> None:
    applied = 0
    for user, (world, before) in baselines.items():
        for where, name, value in hostile_settings(table, key, world.home, world.project):
            text = _file(where, name, value)
            try:
                settings = world.load(text)
            except ConfigError:
                continue  # refused as invalid: nothing applies
            applied += 1
            more = outcome_of(settings, world.project).more_than(before)
            assert not more, f"{user}: {text.strip()!r} does more: {more}"
    assert applied, f"no hostile value of {table} {key} loaded: the test proves nothing for it"
