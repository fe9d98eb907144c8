"""``[research] store_url``: read from files and the environment, checked, protected from an
untrusted project file, and never shown with its password."""

from __future__ import annotations

from pathlib import Path

import pytest

from foundry_mcp.config import Settings, load_settings
from foundry_mcp.config.research_settings import ResearchSettings
from foundry_mcp.errors import ConfigError
from foundry_mcp.research.store.opening import open_store
from foundry_mcp.research.store.sqlite.store import ResearchStore
from foundry_mcp.research.store.url import redact_url, scrub

SECRET = "s3cr%40t-Pa55"  # percent-encoded "@" in the URL: the decoded form is a secret too
URL = f"postgresql://alice:{SECRET}@db.example:5432/foundry?sslmode=require"


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        (URL, "postgresql://alice:***@db.example:5432/foundry?sslmode=require"),
        ("postgresql://bob@db/x?password=hunter22&sslmode=a", "postgresql://bob@db/x?password=***&sslmode=a"),
        ("postgres://db.example/foundry", "postgres://db.example/foundry"),
        ("postgresql:///foundry?host=/run/postgresql", "postgresql:///foundry?host=/run/postgresql"),
        ("postgresql://a:b@[::1]:5432/db", "postgresql://a:***@[::1]:5432/db"),
    ],
)  # fmt: skip
def test_redact_url_hides_the_password_only(url: str, shown: str) -> None:
    assert redact_url(url) == shown


def test_scrub_hides_every_form_of_the_password_in_a_message() -> None:
    message = f"failed for {URL}: user alice, password s3cr@t-Pa55 or {SECRET} rejected"
    cleaned = scrub(message, URL)
    assert "s3cr" not in cleaned
    assert "postgresql://alice:***@db.example:5432/foundry" in cleaned


def _load(tmp_path: Path, env: dict[str, str] | None = None, project: str = "") -> Settings:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    if project:
        (tmp_path / "foundry-mcp.toml").write_text(project)
    return load_settings(env=env or {}, cwd=tmp_path, home=home)


def test_store_url_is_unset_by_default_and_read_from_the_environment(tmp_path: Path) -> None:
    assert _load(tmp_path).research.store_url is None
    settings = _load(tmp_path, {"FOUNDRY_MCP_STORE_URL": URL})
    assert settings.research.store_url is not None
    assert settings.research.store_url.get_secret_value() == URL
    assert SECRET not in repr(settings) and SECRET not in str(settings.model_dump())


@pytest.mark.parametrize(
    "url", ["mysql://alice:s3cr3t-value@db/x", "s3cr3t-value", "sqlite:///s3cr3t-value.db"]
)
def test_a_url_that_is_not_postgresql_is_refused_without_quoting_it(
    tmp_path: Path, url: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        _load(tmp_path, {"FOUNDRY_MCP_STORE_URL": url})
    error = caught.value
    assert "FOUNDRY_MCP_STORE_URL" in error.message and "store_url" in error.message
    assert "postgresql://user:password@host:5432/database" in error.message
    assert "s3cr3t-value" not in f"{error.message} {error.remediation} {error.details}"


def test_an_untrusted_project_file_may_not_choose_the_store(tmp_path: Path) -> None:
    settings = _load(tmp_path, project=f'[research]\nstore_url = "{URL}"\n')
    assert settings.research.store_url is None
    assert settings.untrusted is not None
    assert "[research] store_url" in settings.untrusted.ignored_keys


def test_without_store_url_the_store_is_sqlite_in_research_dir(tmp_path: Path) -> None:
    store = open_store(ResearchSettings(research_dir=tmp_path / "research"))
    try:
        assert isinstance(store, ResearchStore)
        info = store.describe()
        assert (info.backend, info.location) == ("sqlite", str(tmp_path / "research/research.db"))
    finally:
        store.close()
