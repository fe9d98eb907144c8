"""Settings layering, validation, error messages and secret hygiene of ``load_settings``."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from foundry_mcp.config import Settings, load_settings
from foundry_mcp.config.untrusted import every_key
from foundry_mcp.errors import ConfigError
from foundry_mcp.trust import TrustStore

SECRET = "sk-TOPSECRET-0123456789abcdef"


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path]:
    """An empty home and an empty project directory."""
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    project.mkdir()
    return home, project


def _home_file(dirs: tuple[Path, Path], text: str) -> Path:
    path = dirs[0] / ".foundry-mcp.toml"
    path.write_text(text)
    return path


def _project_file(dirs: tuple[Path, Path], text: str, *, trusted: bool = True) -> Path:
    """A ``foundry-mcp.toml`` in the project folder, trusted by the user unless told otherwise."""
    path = dirs[1] / "foundry-mcp.toml"
    path.write_text(text)
    if trusted:
        TrustStore(dirs[0]).trust(path, path.read_bytes())
    return path


def _load(dirs: tuple[Path, Path], env: dict[str, str] | None = None) -> Settings:
    home, project = dirs
    return load_settings(env=env or {}, cwd=project, home=home)


def _error(dirs: tuple[Path, Path], env: dict[str, str] | None = None) -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        _load(dirs, env)
    return caught.value


def _all_text(error: ConfigError) -> str:
    return " ".join([str(error), error.message, error.remediation, repr(error.details)])


# --------------------------------------------------------------------------- layering


def test_no_files_and_empty_env_give_the_model_defaults(
    dirs: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The real process environment must not leak in when an explicit env is passed.
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("FOUNDRY_MCP_DEFAULT_PROVIDER", "anthropic")
    settings = _load(dirs)
    assert settings.model_dump() == Settings().model_dump()
    assert settings.provider("openai").key() is None
    assert settings.sources == []


def test_project_file_overrides_home_file_key_by_key(dirs: tuple[Path, Path]) -> None:
    home = _home_file(
        dirs,
        "[research]\ndeep_research_max_iterations = 4\ndeep_research_max_sources = 7\n",
    )
    project = _project_file(dirs, "[research]\ndeep_research_max_iterations = 6\n")
    settings = _load(dirs)
    assert settings.research.deep_research_max_iterations == 6
    assert settings.research.deep_research_max_sources == 7  # only in the home file
    assert settings.sources == [str(home), str(project)]


def test_provider_tables_are_deep_merged_across_layers(dirs: tuple[Path, Path]) -> None:
    _home_file(dirs, '[providers.openai]\napi_key = "home-key"\nmodel = "home-model"\n')
    _project_file(dirs, '[providers.openai]\nmodel = "project-model"\ntimeout = 30\n')
    settings = _load(dirs)
    openai = settings.provider("openai")
    assert openai.key() == "home-key"
    assert openai.model == "project-model"
    assert openai.timeout == 30


def test_environment_overrides_both_files(dirs: tuple[Path, Path]) -> None:
    _home_file(dirs, '[research]\ndefault_provider = "home"\n[providers.openai]\napi_key = "h"\n')
    _project_file(dirs, '[research]\ndefault_provider = "project"\n')
    settings = _load(
        dirs, {"FOUNDRY_MCP_DEFAULT_PROVIDER": "anthropic", "OPENAI_API_KEY": "env-key"}
    )
    assert settings.research.default_provider == "anthropic"
    assert settings.provider("openai").key() == "env-key"


def test_blank_environment_variable_does_not_override_a_file(dirs: tuple[Path, Path]) -> None:
    _project_file(dirs, '[providers.openai]\napi_key = "file-key"\n')
    settings = _load(dirs, {"OPENAI_API_KEY": "   ", "FOUNDRY_MCP_DEFAULT_PROVIDER": ""})
    assert settings.provider("openai").key() == "file-key"
    assert settings.research.default_provider == Settings().research.default_provider


def test_foundry_mcp_config_replaces_the_project_file(
    dirs: tuple[Path, Path], tmp_path: Path
) -> None:
    _home_file(dirs, "[research]\ndeep_research_max_concurrent = 2\n")
    _project_file(
        dirs, "[research]\ndeep_research_max_iterations = 5\ndeep_research_max_sources = 9\n"
    )
    explicit = tmp_path / "elsewhere.toml"
    explicit.write_text("[research]\ndeep_research_max_iterations = 7\n")
    settings = _load(dirs, {"FOUNDRY_MCP_CONFIG": str(explicit)})
    assert settings.research.deep_research_max_iterations == 7
    # The project file is not read at all, the home file still is.
    assert (
        settings.research.deep_research_max_sources == Settings().research.deep_research_max_sources
    )
    assert settings.research.deep_research_max_concurrent == 2
    assert str(explicit) in settings.sources
    assert str(dirs[1] / "foundry-mcp.toml") not in settings.sources


def test_foundry_mcp_config_naming_a_missing_file_is_an_error(
    dirs: tuple[Path, Path], tmp_path: Path
) -> None:
    _project_file(dirs, "[research]\ndeep_research_max_iterations = 5\n")
    missing = tmp_path / "nope" / "config.toml"
    error = _error(dirs, {"FOUNDRY_MCP_CONFIG": str(missing)})
    assert str(missing) in error.message
    assert "FOUNDRY_MCP_CONFIG" in error.message


# --------------------------------------------------------------------------- environment


@pytest.mark.parametrize(
    ("variable", "value", "read", "expected"),
    [
        ("OPENAI_API_KEY", "sk-o", lambda s: s.provider("openai").key(), "sk-o"),
        (
            "OPENAI_BASE_URL",
            "http://localhost:8000/v1",
            lambda s: s.provider("openai").base_url,
            "http://localhost:8000/v1",
        ),
        ("ANTHROPIC_API_KEY", "sk-a", lambda s: s.provider("anthropic").key(), "sk-a"),
        (
            "ANTHROPIC_BASE_URL",
            "https://proxy.example/anthropic",
            lambda s: s.provider("anthropic").base_url,
            "https://proxy.example/anthropic",
        ),
        ("TAVILY_API_KEY", "tvly-1", lambda s: s.provider("tavily").key(), "tvly-1"),
        (
            "TAVILY_BASE_URL",
            "https://search.example",
            lambda s: s.provider("tavily").base_url,
            "https://search.example",
        ),
        (
            "FOUNDRY_MCP_DEFAULT_PROVIDER",
            "anthropic:claude-x",
            lambda s: s.research.default_provider,
            "anthropic:claude-x",
        ),
        (
            "FOUNDRY_MCP_SEARCH_PROVIDERS",
            " tavily , exa,, ",
            lambda s: s.research.deep_research_providers,
            ["tavily", "exa"],
        ),
    ],
)
def test_each_environment_variable_is_read(
    dirs: tuple[Path, Path], variable: str, value: str, read, expected
) -> None:
    assert read(_load(dirs)) != expected
    assert read(_load(dirs, {variable: value})) == expected


def test_research_dir_from_the_environment(dirs: tuple[Path, Path], tmp_path: Path) -> None:
    target = tmp_path / "store"
    settings = _load(dirs, {"FOUNDRY_MCP_RESEARCH_DIR": str(target)})
    assert settings.research.research_dir == target


def test_research_dir_tilde_is_expanded(dirs: tuple[Path, Path]) -> None:
    _project_file(dirs, '[research]\nresearch_dir = "~/my-research"\n')
    from_file = _load(dirs).research.research_dir
    from_env = _load(dirs, {"FOUNDRY_MCP_RESEARCH_DIR": "~/env-research"}).research.research_dir
    assert from_file == Path.home() / "my-research"
    assert from_env == Path.home() / "env-research"
    assert "~" not in str(Settings().research.research_dir)


def test_api_key_set_only_in_toml_is_honoured(dirs: tuple[Path, Path]) -> None:
    _project_file(dirs, f'[providers.tavily]\napi_key = "{SECRET}"\n')
    assert _load(dirs).provider("tavily").key() == SECRET


def test_whitespace_only_key_counts_as_no_key(dirs: tuple[Path, Path]) -> None:
    _project_file(dirs, '[providers.tavily]\napi_key = "   "\n')
    assert _load(dirs).provider("tavily").key() is None


# --------------------------------------------------------------------------- base_url


@pytest.mark.parametrize(
    ("given", "stored"),
    [
        ("https://api.example.com/v1/", "https://api.example.com/v1"),
        ("http://localhost:11434/v1///", "http://localhost:11434/v1"),
        ("https://api.example.com", "https://api.example.com"),
    ],
)
def test_base_url_trailing_slash_is_stripped(
    dirs: tuple[Path, Path], given: str, stored: str
) -> None:
    _project_file(dirs, f'[providers.openai]\nbase_url = "{given}"\n')
    assert _load(dirs).provider("openai").base_url == stored


@pytest.mark.parametrize("url", ["ftp://files.example", "localhost:8080", "api.example.com/v1"])
def test_base_url_must_be_http_or_https(dirs: tuple[Path, Path], url: str) -> None:
    path = _project_file(dirs, f'[providers.openai]\nbase_url = "{url}"\n')
    error = _error(dirs)
    assert str(path) in error.message
    assert "base_url" in error.message


# --------------------------------------------------------------------------- invalid files


def test_invalid_toml_syntax_names_the_file(dirs: tuple[Path, Path]) -> None:
    path = _project_file(dirs, "[research\ndeep_research_max_iterations = 3\n")
    error = _error(dirs)
    assert str(path) in error.message


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ('[research]\ndeep_research_max_iterations = "three"\n', "deep_research_max_iterations"),
        ("[research]\ndeep_research_max_iterations = 99\n", "deep_research_max_iterations"),
        ("[research]\ndeep_research_max_iterations = 0\n", "deep_research_max_iterations"),
        ("[research]\ndeep_research_max_sourcez = 5\n", "deep_research_max_sourcez"),
        ("[reserch]\ndeep_research_max_iterations = 3\n", "reserch"),
        ('[providers.openai]\ntimeout = "slow"\n', "timeout"),
        ('[providers.openai]\ntype = "watsonx"\n', "type"),
        ('[logging]\nlevel = "LOUD"\n', "level"),
    ],
)
def test_invalid_value_names_the_file_and_the_key(
    dirs: tuple[Path, Path], text: str, key: str
) -> None:
    path = _project_file(dirs, text)
    error = _error(dirs)
    assert str(path) in error.message
    assert key in error.message


def test_invalid_value_in_home_file_names_the_home_file(dirs: tuple[Path, Path]) -> None:
    home = _home_file(dirs, "[research]\ndeep_research_max_sub_queries = 500\n")
    project = _project_file(dirs, "[research]\ndeep_research_max_iterations = 2\n")
    error = _error(dirs)
    assert str(home) in error.message
    assert str(project) not in error.message
    assert "deep_research_max_sub_queries" in error.message


def test_project_file_can_override_an_invalid_home_value(dirs: tuple[Path, Path]) -> None:
    _home_file(dirs, "[research]\ndeep_research_max_iterations = 99\n")
    _project_file(dirs, "[research]\ndeep_research_max_iterations = 2\n")
    assert _load(dirs).research.deep_research_max_iterations == 2


@pytest.mark.parametrize("variable", ["OPENAI_BASE_URL", "ANTHROPIC_BASE_URL", "TAVILY_BASE_URL"])
def test_invalid_environment_value_names_the_variable(
    dirs: tuple[Path, Path], variable: str
) -> None:
    path = _project_file(dirs, "[research]\ndeep_research_max_iterations = 2\n")
    error = _error(dirs, {variable: "not-a-url"})
    assert variable in error.message
    assert str(path) not in error.message


# --------------------------------------------------------------------------- secrets


def test_repr_and_str_of_settings_hide_api_keys(dirs: tuple[Path, Path]) -> None:
    _project_file(dirs, f'[providers.tavily]\napi_key = "{SECRET}"\n')
    settings = _load(dirs, {"OPENAI_API_KEY": SECRET + "-env"})
    assert settings.provider("openai").key() == SECRET + "-env"
    for text in (repr(settings), str(settings), settings.model_dump_json()):
        assert SECRET not in text


@pytest.mark.parametrize(
    "table",
    [
        f'[providers.openai]\napi_key = "{SECRET}"\ntimeout = "slow"\n',
        f'[providers.openai]\napi_key = "{SECRET}"\nbase_url = "no-scheme"\n',
        f'[providers.openai]\napi_key = "{SECRET}"\napikey = "{SECRET}"\n',
        f'[providers.openai]\napi_key = "{SECRET}"\ntype = "{SECRET}"\n',
        f'[providers.openai]\napi_key = ["{SECRET}"]\n',
        f'[providers]\nopenai = "{SECRET}"\n',
        f'openai_api_key = "{SECRET}"\n',
        f'[providers.openai]\napi_key = "{SECRET}\ntimeout = 3\n',
    ],
)
def test_config_error_never_contains_the_api_key(dirs: tuple[Path, Path], table: str) -> None:
    _project_file(dirs, table)
    error = _error(dirs)
    assert SECRET not in _all_text(error)


def test_config_error_from_env_never_contains_the_api_key(dirs: tuple[Path, Path]) -> None:
    error = _error(dirs, {"OPENAI_API_KEY": SECRET, "OPENAI_BASE_URL": "gopher://x"})
    assert SECRET not in _all_text(error)


def test_the_example_file_loads_and_sets_every_key_to_its_default(tmp_path: Path) -> None:
    example = Path(__file__).resolve().parents[2] / "foundry-mcp.example.toml"
    home = tmp_path / "home"
    home.mkdir()
    loaded = load_settings(env={"FOUNDRY_MCP_CONFIG": str(example)}, cwd=tmp_path, home=home)
    defaults = Settings()
    assert loaded.research.model_dump() == defaults.research.model_dump()
    assert loaded.logging == defaults.logging and loaded.providers == {}
    # Keys whose mere presence changes a choice stay commented out: a copy changes nothing.
    for key in ("default_provider", "deep_research_providers"):
        assert key not in loaded.research.model_fields_set, key


def test_the_example_file_names_every_key() -> None:
    text = (Path(__file__).resolve().parents[2] / "foundry-mcp.example.toml").read_text()
    missing = [
        f"[{'.'.join(table)}] {key}"
        for table, key, _ in every_key()
        if table and not re.search(rf"^#?\s*{re.escape(key)}\s*=", text, re.MULTILINE)
    ]
    assert missing == []
