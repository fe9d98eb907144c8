"""The team server's pieces that need no server: ``[server]`` tokens from files and
``FOUNDRY_MCP_TOKENS``, the token verifier, the listening policy, the Host/Origin lists, task ids
bound to a principal, and log lines that carry their research and principal."""

from __future__ import annotations

import hmac
import io
import json
import logging
from pathlib import Path

import pytest
from starlette.types import Receive, Scope, Send

from foundry_mcp.config import ServerSettings, Settings, load_settings
from foundry_mcp.errors import ConfigError
from foundry_mcp.logs import JsonLines, ResearchFields, about, research_context
from foundry_mcp.server.auth import ConfiguredTokens
from foundry_mcp.server.tasks import TaskIds
from foundry_mcp.server.team.http import (
    HealthProbe,
    check_binding,
    is_loopback,
    transport_security,
)

pytestmark = pytest.mark.anyio

ALICE = "alice-token-5c1e0d6a9b2f47e8"
BOB = "bob-token-8e4f2a7c1d9b3e60"
CAROL = "carol-token-77d0c2b9e41fa356"


def _load(tmp_path: Path, toml: str = "", env: dict[str, str] | None = None) -> Settings:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    (home / ".foundry-mcp.toml").write_text(toml)
    return load_settings(env=env or {}, cwd=tmp_path, home=home)


def _refused(tmp_path: Path, toml: str = "", env: dict[str, str] | None = None) -> str:
    with pytest.raises(ConfigError) as caught:
        _load(tmp_path, toml, env)
    error = caught.value
    return " ".join([error.message, error.remediation, repr(error.details)])


# --------------------------------------------------------------------------- configuration


def test_tokens_come_from_server_tables_with_their_limits(tmp_path: Path) -> None:
    settings = _load(
        tmp_path,
        f"""
[server]
host = "0.0.0.0"
port = 9000
allowed_hosts = ["research.example.com:9000"]
max_concurrent_researches = 3

[[server.tokens]]
name = "alice"
token = "{ALICE}"
max_concurrent_researches = 1
max_cost_usd_per_day = 2.5

[[server.tokens]]
name = "bob"
token = "{BOB}"
""",
    )
    server = settings.server
    assert (server.host, server.port) == ("0.0.0.0", 9000)
    assert [t.name for t in server.tokens] == ["alice", "bob"]
    assert server.tokens[0].token.get_secret_value() == ALICE
    assert ALICE not in repr(settings) and ALICE not in str(server.model_dump())
    assert server.limits_for("alice") == (1, 2.5)
    assert server.limits_for("bob") == (3, None)  # the table's own limits


def test_the_environment_variable_replaces_the_files_tokens(tmp_path: Path) -> None:
    toml = f'[[server.tokens]]\nname = "carol"\ntoken = "{CAROL}"\n'
    settings = _load(tmp_path, toml, {"FOUNDRY_MCP_TOKENS": f" alice:{ALICE} , bob:{BOB},"})
    assert [(t.name, t.token.get_secret_value()) for t in settings.server.tokens] == [
        ("alice", ALICE),
        ("bob", BOB),
    ]
    assert settings.server.host == "127.0.0.1" and settings.server.port == 8765


@pytest.mark.parametrize(
    ("tokens", "expected"),
    [
        (f"alice{ALICE}", "entry 1 is not of the form name:token"),
        (f"alice:{ALICE},:{BOB}", "entry 2 is not of the form name:token"),
        (f"alice:{ALICE},bob:", "entry 2 is not of the form name:token"),
        ("alice:short-secret", "at least 16 characters"),
        (f"alice:{ALICE},bob:{ALICE}", "the tokens of 'alice' and 'bob' are the same"),
        (f"al ice:{BOB}", "String should match pattern"),
    ],
)
def test_bad_tokens_are_refused_without_quoting_them(
    tmp_path: Path, tokens: str, expected: str
) -> None:
    text = _refused(tmp_path, env={"FOUNDRY_MCP_TOKENS": tokens})
    assert expected in text and "FOUNDRY_MCP_TOKENS" in text
    for secret in (ALICE, BOB, "short-secret"):
        assert secret not in text


def test_a_token_with_a_space_in_a_file_is_refused(tmp_path: Path) -> None:
    text = _refused(tmp_path, '[[server.tokens]]\nname = "a"\ntoken = "has a space in it ok"\n')
    assert "[server] tokens.0.token" in text and "without spaces" in text
    assert "has a space" not in text


def test_an_untrusted_project_file_cannot_add_tokens_or_move_the_server(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (tmp_path / "foundry-mcp.toml").write_text(
        f'[server]\nhost = "0.0.0.0"\n\n[[server.tokens]]\nname = "mallory"\ntoken = "{CAROL}"\n'
    )
    settings = load_settings(env={}, cwd=tmp_path, home=home)
    assert settings.server == ServerSettings()
    assert settings.untrusted is not None and "[server]" in settings.untrusted.ignored_keys


# --------------------------------------------------------------------------- verification


def _verifier(*pairs: tuple[str, str]) -> ConfiguredTokens:
    return ConfiguredTokens(
        ServerSettings.model_validate({"tokens": [{"name": n, "token": t} for n, t in pairs]})
    )


async def test_a_configured_token_names_its_principal_and_nothing_else_passes() -> None:
    verifier = _verifier(("alice", ALICE), ("bob", BOB), ("alice", CAROL))
    assert verifier.principals == ["alice", "bob"]
    found = await verifier.verify_token(BOB)
    assert found is not None and found.client_id == "bob" and found.subject == "bob"
    assert BOB not in found.model_dump_json()  # the token itself is not kept
    rotated = await verifier.verify_token(CAROL)  # a second token of alice's
    assert rotated is not None and rotated.client_id == "alice"
    for wrong in ("", ALICE[:-1], ALICE + "x", ALICE.upper(), "é" * 40):
        assert await verifier.verify_token(wrong) is None


async def test_every_token_is_compared_whichever_matches(monkeypatch: pytest.MonkeyPatch) -> None:
    verifier = _verifier(("alice", ALICE), ("bob", BOB), ("carol", CAROL))
    compared: list[tuple[int, int]] = []
    original = hmac.compare_digest

    def counting(a: bytes, b: bytes) -> bool:
        compared.append((len(a), len(b)))
        return original(a, b)

    monkeypatch.setattr(hmac, "compare_digest", counting)
    for presented in (ALICE, CAROL, "no-such-token-anywhere", "x"):
        compared.clear()
        await verifier.verify_token(presented)
        # All three, always, and always digests of one length (no early length mismatch).
        assert compared == [(32, 32)] * 3, presented


async def test_limits_travel_with_the_access_token() -> None:
    server = ServerSettings.model_validate(
        {
            "max_cost_usd_per_day": 10.0,
            "tokens": [{"name": "alice", "token": ALICE, "max_concurrent_researches": 2}],
        }
    )
    token = await ConfiguredTokens(server).verify_token(ALICE)
    assert token is not None
    assert token.claims == {"max_concurrent_researches": 2, "max_cost_usd_per_day": 10.0}


# --------------------------------------------------------------------------- listening


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.0.0.2", True),
        ("::1", True),
        ("localhost", True),
        ("LOCALHOST", True),
        ("0.0.0.0", False),
        ("::", False),
        ("192.168.1.20", False),
        ("research.example.com", False),
    ],
)
def test_loopback_hosts(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_only_loopback_may_go_without_tokens() -> None:
    bare = ServerSettings()
    check_binding(bare, "127.0.0.1")
    check_binding(bare, "::1")
    with pytest.raises(ConfigError) as refused:
        check_binding(bare, "0.0.0.0")
    assert "FOUNDRY_MCP_TOKENS" in refused.value.remediation
    assert "[[server.tokens]]" in refused.value.remediation
    check_binding(ServerSettings.model_validate({"tokens": [{"name": "a", "token": ALICE}]}), "::")


def test_host_and_origin_lists() -> None:
    loopback = transport_security(ServerSettings(), "127.0.0.1", 8765)
    assert loopback.enable_dns_rebinding_protection
    assert loopback.allowed_hosts == ["127.0.0.1:*", "localhost:*", "[::1]:*"]
    assert all(
        "localhost" in o or "127.0.0.1" in o or "[::1]" in o for o in loopback.allowed_origins
    )

    extra = ServerSettings(allowed_hosts=["mcp.example.com"], allowed_origins=["https://x.example"])
    lan = transport_security(extra, "10.0.0.5", 9000)
    assert "10.0.0.5:9000" in lan.allowed_hosts and "mcp.example.com" in lan.allowed_hosts
    assert "https://10.0.0.5:9000" in lan.allowed_origins
    assert "https://x.example" in lan.allowed_origins
    wildcard = transport_security(ServerSettings(), "0.0.0.0", 9000)
    assert not any(h.startswith("0.0.0.0") for h in wildcard.allowed_hosts)
    ipv6 = transport_security(ServerSettings(), "fd00::5", 9000)
    assert "[fd00::5]:9000" in ipv6.allowed_hosts


class _Host:
    current = None  # no service: /health reads no store

    def __init__(self, readiness: str) -> None:
        self.readiness = readiness


@pytest.mark.parametrize(
    ("readiness", "status", "code"),
    [
        (None, "ok", 200),
        ("starting", "ok", 200),
        ("ready", "ok", 200),
        ("failed", "unavailable", 503),
    ],
)
async def test_health_says_whether_the_service_is_ready(
    readiness: str | None, status: str, code: int
) -> None:
    probe = HealthProbe()
    if readiness is not None:
        probe.attach(_Host(readiness))  # type: ignore[arg-type]
    answer = await probe.answer(None)  # type: ignore[arg-type]
    body = json.loads(bytes(answer.body))
    assert answer.status_code == code
    assert body == {
        "status": status,
        "research_service": readiness or "starting",
        "version": body["version"],
    }


# --------------------------------------------------------------------------- task ids


def test_a_task_id_is_bound_to_its_principal() -> None:
    ids = TaskIds(b"k" * 32)
    research_id = "deepres-0123456789ab"
    local = ids.issue(research_id)
    assert ids.issue(research_id, None) == local  # ids issued before principals still answer
    assert ids.research_of(local) == research_id
    alices = ids.issue(research_id, "alice")
    assert alices != local
    assert ids.research_of(alices, "alice") == research_id
    assert ids.research_of(alices, "bob") is None
    assert ids.research_of(local, "alice") is None
    assert ids.research_of(alices) is None


# --------------------------------------------------------------------------- log lines


def _logged(formatter: logging.Formatter) -> tuple[logging.Logger, io.StringIO]:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(ResearchFields())
    handler.setFormatter(formatter)
    logger = logging.getLogger(f"test.team.{id(stream)}")
    logger.propagate = False
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    return logger, stream


def test_json_lines_carry_the_research_and_principal() -> None:
    logger, stream = _logged(JsonLines())
    logger.info("plain %s", "line")
    with research_context("deepres-0123456789ab", "alice"):
        logger.warning("inside a run")
    logger.info("named", extra=about("deepres-ba9876543210", "bob"))
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert [(line["message"], line["research_id"], line["principal"]) for line in lines] == [
        ("plain line", None, None),
        ("inside a run", "deepres-0123456789ab", "alice"),
        ("named", "deepres-ba9876543210", "bob"),
    ]
    assert lines[1]["level"] == "WARNING" and lines[1]["logger"] == logger.name
    assert lines[1]["time"].endswith("+00:00")


def test_text_lines_name_the_research_after_the_message() -> None:
    from foundry_mcp.logs import TEXT_FORMAT

    logger, stream = _logged(logging.Formatter(TEXT_FORMAT))
    logger.info("plain")
    with research_context("deepres-0123456789ab", None):
        logger.info("in a local run")
    with research_context("deepres-0123456789ab", "alice"):
        logger.info("in alice's run")
    plain, local, alices = stream.getvalue().splitlines()
    assert plain.endswith(": plain")
    assert local.endswith("in a local run [research deepres-0123456789ab]")
    assert alices.endswith("[research deepres-0123456789ab, principal alice]")


def test_the_team_server_parses_http_with_httptools() -> None:
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    from foundry_mcp.server.team.http import server_config

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        raise AssertionError("not called")

    config = server_config(app)
    config.load()
    assert config.http_protocol_class is HttpToolsProtocol


def test_the_team_server_keeps_idle_connections_longer_than_proxies_do() -> None:
    """The proxy or client closes an idle connection first, never the worker under a request
    being sent (nginx's and AWS's load balancers keep idle upstream connections for 60 s)."""
    from foundry_mcp.server.team.http import server_config

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        raise AssertionError("not called")

    assert server_config(app).timeout_keep_alive > 60
