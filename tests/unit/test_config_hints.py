"""A configuration mistake says how to put it right: an unknown key names the key it most likely
meant, a limit named as the flags and the tool name it is given its file name, and a value chosen
from a fixed set is accepted in any case."""

from __future__ import annotations

from pathlib import Path

import pytest

from foundry_mcp.config import Settings, load_settings
from foundry_mcp.config.section import literal_choices
from foundry_mcp.config.settings import LoggingSettings
from foundry_mcp.config.suggestions import UNKNOWN, known_keys, unknown_key_message
from foundry_mcp.errors import ConfigError


def _load(tmp_path: Path, text: str) -> Settings:
    config = tmp_path / "config.toml"
    config.write_text(text)
    return load_settings(env={"FOUNDRY_MCP_CONFIG": str(config)}, cwd=tmp_path, home=tmp_path)


def _problem(tmp_path: Path, text: str) -> str:
    with pytest.raises(ConfigError) as caught:
        _load(tmp_path, text)
    problems = caught.value.details["problems"]
    assert len(problems) == 1
    return str(problems[0])


@pytest.mark.parametrize(
    ("text", "said"),
    [
        # What the flag and the tool call a limit is not its name in the file.
        (
            "[research]\nmax_iterations = 2\n",
            "[research] max_iterations: unknown key (in the file, max_iterations is called "
            "deep_research_max_iterations)",
        ),
        (
            "[research]\nmax_sources_per_query = 2\n",
            "(in the file, max_sources_per_query is called deep_research_max_sources)",
        ),
        ("[research]\ntimeout = 60\n", "(in the file, timeout is called deep_research_timeout)"),
        # A slip of the keyboard gets the closest key of its own table.
        (
            "[research]\ndeep_research_max_iteration = 2\n",
            "(did you mean deep_research_max_iterations?)",
        ),
        (
            '[providers.openai]\napi_kye = "x"\n',
            "[providers.openai] api_kye: unknown key (did you mean api_key?)",
        ),
        (
            "[research.fetch]\nenabeld = true\n",
            "fetch.enabeld: unknown key (did you mean enabled?)",
        ),
        ("[reserch]\nmode = 'simple'\n", "reserch: unknown key (did you mean research?)"),
        ("[research]\nmax_sorces = 3\n", "(did you mean deep_research_max_sources?)"),
        # Nothing close: no guess.
        ("[research]\ncolour = 'blue'\n", f"[research] colour: {UNKNOWN}"),
    ],
)
def test_an_unknown_key_names_what_it_most_likely_meant(
    tmp_path: Path, text: str, said: str
) -> None:
    assert said in _problem(tmp_path, text)


def test_the_tables_keys_are_found_through_named_tables() -> None:
    assert "api_key" in known_keys(("providers", "openai"))
    assert "enabled" in known_keys(("research", "fetch"))
    assert "research" in known_keys(())
    assert known_keys(("research", "mode")) == []  # a value, not a table
    assert unknown_key_message(("research", "max_iterations")).endswith(
        "deep_research_max_iterations)"
    )


@pytest.mark.parametrize(
    ("text", "field", "value"),
    [
        ('[logging]\nlevel = "debug"\n', ("logging", "level"), "DEBUG"),
        ('[logging]\nlevel = " Warning "\n', ("logging", "level"), "WARNING"),
        ('[research]\nmode = "Hierarchical"\n', ("research", "mode"), "hierarchical"),
        (
            '[research]\ntavily_search_depth = "ADVANCED"\n',
            ("research", "tavily_search_depth"),
            "advanced",
        ),
    ],
)
def test_a_choice_is_accepted_in_any_case(
    tmp_path: Path, text: str, field: tuple[str, str], value: str
) -> None:
    settings = _load(tmp_path, text)
    assert getattr(getattr(settings, field[0]), field[1]) == value


def test_a_value_outside_the_choices_is_still_refused(tmp_path: Path) -> None:
    assert "level" in _problem(tmp_path, '[logging]\nlevel = "loud"\n')
    assert literal_choices(LoggingSettings) == {"level": ("DEBUG", "INFO", "WARNING", "ERROR")}
