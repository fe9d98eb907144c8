"""The Docker Compose deployment in ``deploy/``, checked without Docker: what can rot silently.

- Every variable the workers get (``compose.yaml`` and the Dockerfile's ``ENV``) is one that
  foundry-mcp's settings loader reads, shown by its effect on the loaded settings, or one of a
  short list of other programs' variables; ``.env.example`` names exactly the variables
  ``compose.yaml`` interpolates, and holds no secret.
- The workers' settings, as the loader builds them from that environment and the mounted
  ``deploy/foundry-mcp.toml``: the shared store, the tokens, ``research_dir`` on the volume,
  and Host/Origin checks that accept the domain of ``.env.example`` and refuse another.
- The image's command line parses with the real CLI parser, listens on 0.0.0.0 at the port
  that Caddy proxies to and its health check asks; both workers are Caddy's upstreams, with
  ``health_uri /health``, sticky sessions, failover and unbuffered event streams.
- The health check script, against the answers of the real ``/health``.

No YAML library is a dependency: ``compose.yaml`` is read by a small parser of the YAML it
uses (block mappings and lists, flow lists in JSON form, anchors, aliases and ``<<`` merges),
which refuses anything else rather than misread it.
"""

from __future__ import annotations

import importlib.util
import json
import re
import threading
import tomllib
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path, PurePosixPath
from types import ModuleType
from typing import Any, cast

import anyio
import pytest
from mcp.server.transport_security import TransportSecurityMiddleware
from starlette.requests import Request

from foundry_mcp.cli.arguments import build_parser
from foundry_mcp.config import CONFIG_ENV, PROVIDER_ENV, Settings, load_settings
from foundry_mcp.research.service.takeover import takeover_enabled
from foundry_mcp.server.team.http import (
    HEALTH_PATH,
    MCP_PATH,
    STOP_GRACE_SECONDS,
    HealthProbe,
    check_binding,
    transport_security,
)
from tests.yaml_subset import YamlSubsetError, parse_yaml

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
COMPOSE = DEPLOY / "compose.yaml"
DOCKERFILE = DEPLOY / "Dockerfile"
CADDYFILE = DEPLOY / "Caddyfile"
ENV_EXAMPLE = DEPLOY / ".env.example"
HEALTHCHECK = DEPLOY / "healthcheck.py"
WORKERS = ("worker-a", "worker-b")

# Variables of the workers' environment that other programs read, not foundry-mcp's loader.
OTHER_PROGRAMS = {
    "PGPASSWORD": "libpq: the database's password, kept out of FOUNDRY_MCP_STORE_URL",
    "TIKTOKEN_CACHE_DIR": "tiktoken: where the image keeps its encoding files",
    "PYTHONDONTWRITEBYTECODE": "python",
    "PYTHONUNBUFFERED": "python",
    "PIP_NO_CACHE_DIR": "pip, while the image is built",
    "PIP_DISABLE_PIP_VERSION_CHECK": "pip, while the image is built",
}
# Values a user fills in: the test gives them some, as the user's deploy/.env would.
FILLED = {
    "POSTGRES_PASSWORD": "a-test-password-for-postgres",
    "FOUNDRY_MCP_TOKENS": "alice:alice-token-5c1e0d6a9b2f47e8,bob:bob-token-8e4f2a7c1d9b3e60",
    "FOUNDRY_MCP_DEFAULT_PROVIDER": "anthropic",
    "GOOGLE_CSE_ID": "test-engine-id",
}
SECRET_NAME = re.compile(r"PASSWORD|TOKEN|KEY|SECRET|CSE_ID")


# --------------------------------------------------------------------------- YAML, the subset


def test_the_yaml_reader_reads_what_compose_yaml_uses_and_refuses_the_rest() -> None:
    text = """
x-base: &base
  image: a:1  # comment
  environment:
    A: ${A:-x}
services:
  one:
    <<: *base
    image: b:2
    ports:
      - "80:80"
    test: ["CMD", "true"]
volumes:
  data:
"""
    assert parse_yaml(text)["services"]["one"] == {
        "image": "b:2",
        "environment": {"A": "${A:-x}"},
        "ports": ["80:80"],
        "test": ["CMD", "true"],
    }
    assert parse_yaml(text)["volumes"] == {"data": None}
    for unsupported in ("a: {b: 1}", "a: |\n  text", "a:\n  - b: 1", "a: 1\na: 2"):
        with pytest.raises(YamlSubsetError):
            parse_yaml(unsupported)


# --------------------------------------------------------------------------- the files, read


def compose() -> dict[str, Any]:
    document = parse_yaml(COMPOSE.read_text())
    assert isinstance(document, dict)
    return document


def service(name: str) -> dict[str, Any]:
    services = compose()["services"]
    assert name in services, f"compose.yaml has no service {name}"
    found = services[name]
    assert isinstance(found, dict)
    return found


def dotenv(path: Path) -> dict[str, str]:
    """KEY=VALUE lines, as docker compose reads deploy/.env (values without quotes)."""
    values = {}
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        key, equals, value = line.partition("=")
        assert equals and re.fullmatch(r"[A-Z][A-Z0-9_]*", key), f"not KEY=VALUE: {raw!r}"
        assert key not in values, f"{key} twice in {path.name}"
        values[key] = value
    return values


_REFERENCE = re.compile(r"\$(\$|\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?])([^}]*))?\}|[A-Za-z_])")


def interpolated(text: str) -> set[str]:
    """The variables a compose file interpolates (``$$`` is a literal dollar sign)."""
    names = set()
    for match in _REFERENCE.finditer(text):
        assert match.group(1) == "$" or match.group(2), (
            f"write ${{VAR}}, not {match.group(0)}: {text[match.start() : match.start() + 30]!r}"
        )
        if match.group(2):
            names.add(match.group(2))
    return names


def interpolate(value: str, env: Mapping[str, str]) -> str:
    """``value`` as docker compose interpolates it: ${VAR}, ${VAR:-default}, ${VAR:?error}."""

    def replace(match: re.Match[str]) -> str:
        if match.group(1) == "$":
            return "$"
        name, operator, argument = match.group(2), match.group(3) or "", match.group(4) or ""
        current = env.get(name)
        missing = current is None or (operator.startswith(":") and current == "")
        if operator.endswith("?") and missing:
            raise LookupError(f"{name}: {argument}")
        if operator.endswith("-") and missing:
            return argument
        return current or ""

    return _REFERENCE.sub(replace, value)


def dockerfile_instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of deploy/Dockerfile, continuation lines joined."""
    instructions: list[tuple[str, str]] = []
    pending = ""
    for raw in DOCKERFILE.read_text().splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if pending and line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        whole = (pending + line).strip()
        pending = ""
        instruction, _, arguments = whole.partition(" ")
        instructions.append((instruction.upper(), arguments.strip()))
    return instructions


def dockerfile(instruction: str) -> list[str]:
    return [arguments for name, arguments in dockerfile_instructions() if name == instruction]


def image_env() -> dict[str, str]:
    env = {}
    for arguments in dockerfile("ENV"):
        for pair in arguments.split():
            key, equals, value = pair.partition("=")
            assert equals, f"write ENV KEY=value: {arguments!r}"
            env[key] = value
    return env


def image_command() -> list[str]:
    """ENTRYPOINT and CMD of the image (exec form), as the workers run them."""
    (entrypoint,) = dockerfile("ENTRYPOINT")
    (command,) = dockerfile("CMD")
    argv = json.loads(entrypoint) + json.loads(command)
    assert all(isinstance(part, str) for part in argv)
    return list(argv)


def filled_env() -> dict[str, str]:
    """deploy/.env as a user fills it: the example's values, and a value for each empty one."""
    env = dotenv(ENV_EXAMPLE)
    for name, value in env.items():
        if not value:
            env[name] = FILLED.get(name, f"test-value-of-{name.lower().replace('_', '-')}")
    return env


def worker_env(name: str) -> dict[str, str]:
    """The environment of a worker's server: the image's ENV, then compose.yaml's."""
    environment = service(name)["environment"]
    assert isinstance(environment, dict), "write environment as a mapping"
    env = dict(image_env())
    dotenv_values = filled_env()
    for key, value in environment.items():
        env[key] = interpolate(str(value), dotenv_values)
    return env


def bind_source(name: str, target: str) -> tuple[Path, str]:
    """The file of the deploy folder mounted at ``target`` in service ``name``, and its mode."""
    for volume in service(name).get("volumes", []):
        source, _, rest = volume.partition(":")
        mounted, _, mode = rest.partition(":")
        if mounted == target:
            assert source.startswith("./"), f"{volume}: a file of the deploy folder expected"
            return DEPLOY / source, mode
    raise AssertionError(f"{name} mounts nothing at {target}")


def load_worker_settings(
    tmp_path: Path, name: str = "worker-a", env: dict[str, str] | None = None
) -> Settings:
    """The worker's settings, as its server loads them (the mounted file found on this disk)."""
    env = worker_env(name) if env is None else env
    if CONFIG_ENV in env:
        env[CONFIG_ENV] = str(bind_source(name, env[CONFIG_ENV])[0])
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return load_settings(env=env, cwd=tmp_path, home=home)


def caddy_site() -> tuple[str, list[str]]:
    """The site address of the Caddyfile and its directive lines, comments left out."""
    lines = [line.strip() for line in CADDYFILE.read_text().splitlines()]
    lines = [line for line in lines if line and not line.startswith("#")]
    address = lines[0].removesuffix("{").strip()
    assert lines[0].endswith("{") and lines[-1] == "}", "one site block expected"
    return address, lines[1:-1]


def caddy_reverse_proxy() -> tuple[list[str], dict[str, list[str]]]:
    """The upstreams of the site's reverse_proxy and its subdirectives."""
    _, body = caddy_site()
    (start,) = [i for i, line in enumerate(body) if line.startswith("reverse_proxy ")]
    head = body[start].split()
    assert head[-1] == "{", "reverse_proxy with a block of options expected"
    options: dict[str, list[str]] = {}
    for line in body[start + 1 :]:
        if line == "}":
            break
        assert not line.endswith("{"), f"nested block in reverse_proxy: {line}"
        option, *arguments = line.split()
        options[option] = arguments
    return head[1:-1], options


def seconds(duration: str) -> float:
    match = re.fullmatch(r"(\d+(?:\.\d+)?)(ms|s|m|h)", duration)
    assert match, f"not a duration: {duration!r}"
    unit = {"ms": 0.001, "s": 1, "m": 60, "h": 3600}[match.group(2)]
    return float(match.group(1)) * unit


# --------------------------------------------------------------------------- variables


def test_env_example_names_exactly_what_compose_interpolates() -> None:
    used = interpolated(COMPOSE.read_text())
    offered = set(dotenv(ENV_EXAMPLE))
    assert used - offered == set(), "compose.yaml interpolates these; add them to .env.example"
    assert offered - used == set(), ".env.example offers these; compose.yaml never uses them"


def test_env_example_holds_no_secret() -> None:
    for name, value in dotenv(ENV_EXAMPLE).items():
        if SECRET_NAME.search(name):
            assert value == "", f"{name} must be empty in .env.example"
        assert not re.search(r"[A-Za-z0-9_-]{20,}", value), f"{name}: looks like a real value"
    domain = dotenv(ENV_EXAMPLE)["FOUNDRY_DOMAIN"]
    assert domain == "example.com" or domain.endswith(".example.com")  # reserved: RFC 2606


def refused(env: Mapping[str, str]) -> set[str]:
    """The variables whose value docker compose would refuse (``${VAR:?error}``)."""
    names = set()
    for name in compose()["services"]:
        for value in (service(name).get("environment") or {}).values():
            try:
                interpolate(str(value), env)
            except LookupError as exc:
                names.add(str(exc).partition(":")[0])
    return names


def test_compose_refuses_to_start_without_the_values_that_have_no_default() -> None:
    example = dotenv(ENV_EXAMPLE)
    assert refused(dict.fromkeys(example, "")) == {
        "POSTGRES_PASSWORD",
        "FOUNDRY_MCP_TOKENS",
        "FOUNDRY_DOMAIN",
    }
    assert refused(example) == {"POSTGRES_PASSWORD", "FOUNDRY_MCP_TOKENS"}  # copied, not filled
    assert refused(filled_env()) == set()


def test_every_variable_of_the_workers_is_read_by_foundry_mcp_or_named(tmp_path: Path) -> None:
    read_by_loader = {variable for pairs in PROVIDER_ENV.values() for variable, _ in pairs}
    for name in WORKERS:
        env = worker_env(name)
        baseline = load_worker_settings(tmp_path, name, dict(env))
        for variable in env:
            if variable in OTHER_PROGRAMS:
                assert not variable.startswith("FOUNDRY_MCP_")
                continue
            assert variable.startswith("FOUNDRY_MCP_") or variable in read_by_loader, (
                f"{name}: {variable} is neither foundry-mcp's nor in OTHER_PROGRAMS"
            )
            without = {key: value for key, value in env.items() if key != variable}
            changed = load_worker_settings(tmp_path, name, without)
            assert (changed.model_dump(mode="json"), changed.sources) != (
                baseline.model_dump(mode="json"),
                baseline.sources,
            ), f"{name}: foundry-mcp's settings do not change with {variable}"


def test_foundry_mcp_variables_of_env_example_reach_the_workers() -> None:
    worker = worker_env("worker-a")
    for variable in dotenv(ENV_EXAMPLE):
        if variable.startswith("FOUNDRY_MCP_"):
            assert variable in worker, f"{variable} of .env.example does not reach the workers"


def test_both_workers_get_the_same_environment() -> None:
    assert worker_env("worker-a") == worker_env("worker-b")


# --------------------------------------------------------------------------- the workers' settings


def test_the_workers_settings_name_the_shared_store_tokens_and_volume(tmp_path: Path) -> None:
    settings = load_worker_settings(tmp_path)
    research = settings.research
    assert research.store_url is not None
    assert research.store_url.get_secret_value() == "postgresql://foundry@postgres:5432/foundry"
    assert takeover_enabled(research)
    assert [token.name for token in settings.server.tokens] == ["alice", "bob"]
    config_file, mode = bind_source("worker-a", worker_env("worker-a")[CONFIG_ENV])
    assert mode == "ro"
    assert settings.sources == [str(config_file)]
    # research_dir lies on the worker's own volume
    mounts = {
        volume.split(":")[1]: volume.split(":")[0] for volume in service("worker-a")["volumes"]
    }
    data = [
        mount
        for mount, source in mounts.items()
        if PurePosixPath(research.research_dir).is_relative_to(mount)
    ]
    assert data, f"research_dir {research.research_dir} is on no volume"
    assert mounts[data[0]] in compose()["volumes"], "research_dir must be on a named volume"


async def test_the_workers_accept_the_domain_and_refuse_other_names(tmp_path: Path) -> None:
    settings = load_worker_settings(tmp_path)
    domain = dotenv(ENV_EXAMPLE)["FOUNDRY_DOMAIN"]
    args = build_parser().parse_args(image_command()[1:])
    guard = TransportSecurityMiddleware(transport_security(settings.server, args.host, args.port))

    async def answer(**headers: str) -> int | None:
        scope = {
            "type": "http",
            "method": "GET",
            "path": MCP_PATH,
            "headers": [(key.encode(), value.encode()) for key, value in headers.items()],
        }
        refusal = await guard.validate_request(Request(scope))
        return None if refusal is None else refusal.status_code

    assert await answer(host=domain) is None
    assert await answer(host=f"{domain}:443") is None
    assert await answer(host=domain, origin=f"https://{domain}") is None
    assert await answer(host="elsewhere.example.net") == 421
    assert await answer(host=domain, origin="https://elsewhere.example.net") == 403


# --------------------------------------------------------------------------- command line, proxy


def test_the_image_runs_the_http_server_on_every_interface(tmp_path: Path) -> None:
    argv = image_command()
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts.get(argv[0]) == "foundry_mcp.cli.main:run"
    args = build_parser().parse_args(argv[1:])
    assert (args.command, args.http, args.host, args.log_format) == (
        "serve",
        True,
        "0.0.0.0",
        "json",
    )
    check_binding(load_worker_settings(tmp_path).server, args.host)  # tokens: it may listen
    for name in WORKERS:
        overrides = {"command", "entrypoint"} & set(service(name))
        assert not overrides, f"{name} overrides the image's command line"


def test_caddy_proxies_to_both_workers_with_health_checks_and_sticky_sessions() -> None:
    port = build_parser().parse_args(image_command()[1:]).port
    upstreams, options = caddy_reverse_proxy()
    assert upstreams == [f"{name}:{port}" for name in WORKERS]
    assert options["health_uri"] == [HEALTH_PATH]
    assert options["lb_policy"] == ["client_ip_hash"]
    assert seconds(options["lb_try_duration"][0]) > 0
    assert seconds(options["fail_duration"][0]) > 0
    assert options["flush_interval"] == ["-1"]


def test_caddy_serves_the_domain_of_env_example() -> None:
    address, _ = caddy_site()
    placeholders = re.findall(r"\{\$([A-Za-z_][A-Za-z0-9_]*)\}", CADDYFILE.read_text())
    assert address == "{$FOUNDRY_DOMAIN}"
    caddy = service("caddy")
    for name in placeholders:
        assert name in caddy["environment"], f"the Caddyfile reads {name}; caddy does not get it"
    assert bind_source("caddy", "/etc/caddy/Caddyfile") == (CADDYFILE, "ro")
    assert {"80:80", "443:443"} <= set(caddy["ports"])
    data = [volume for volume in caddy["volumes"] if volume.endswith(":/data")]
    assert data and data[0].split(":")[0] in compose()["volumes"], "certificates on a volume"


def test_the_health_check_asks_the_port_the_server_listens_on() -> None:
    port = build_parser().parse_args(image_command()[1:]).port
    script = load_healthcheck()
    assert f"http://127.0.0.1:{port}{HEALTH_PATH}" == script.URL
    (healthcheck,) = dockerfile("HEALTHCHECK")
    command = json.loads(healthcheck.partition("CMD")[2])
    copied = [arguments.split() for arguments in dockerfile("COPY")]
    installed = [parts[-1] for parts in copied if parts[-2] == str(HEALTHCHECK.relative_to(ROOT))]
    assert installed and PurePosixPath(installed[0]).name == command[0]


# --------------------------------------------------------------------------- compose services


def test_the_workers_wait_for_postgres_and_publish_nothing() -> None:
    hostnames: set[str] = set()
    volumes: set[str] = set()
    for name in WORKERS:
        worker = service(name)
        assert worker["depends_on"]["postgres"]["condition"] == "service_healthy"
        assert "ports" not in worker, f"{name} must be reachable through Caddy only"
        assert worker["build"] == {"context": "..", "dockerfile": "deploy/Dockerfile"}
        assert (COMPOSE.parent / worker["build"]["context"] / "deploy/Dockerfile").is_file()
        assert worker["init"] == "true"
        assert worker["restart"] == "unless-stopped"
        # the clean stop gives open requests STOP_GRACE_SECONDS, then saves running research
        assert seconds(worker["stop_grace_period"]) >= STOP_GRACE_SECONDS + 20
        hostnames.add(worker["hostname"])
        volumes.update(v.split(":")[0] for v in worker["volumes"] if not v.startswith("./"))
    assert len(hostnames) == len(WORKERS), "each worker needs its own host name (leases)"
    assert len(volumes) == len(WORKERS), "each worker needs its own research_dir volume"
    assert volumes <= set(compose()["volumes"])


def test_postgres_keeps_its_data_and_reports_its_health() -> None:
    postgres = service("postgres")
    assert postgres["image"].startswith("postgres:")
    assert "pg_isready" in postgres["healthcheck"]["test"]
    (data,) = [v for v in postgres["volumes"] if v.endswith(":/var/lib/postgresql/data")]
    assert data.split(":")[0] in compose()["volumes"]
    password = postgres["environment"]["POSTGRES_PASSWORD"]
    assert interpolated(password) == {"POSTGRES_PASSWORD"}
    for name in WORKERS:
        assert interpolated(service(name)["environment"]["PGPASSWORD"]) == {"POSTGRES_PASSWORD"}
    store_url = worker_env("worker-a")["FOUNDRY_MCP_STORE_URL"]
    user_db = f"{postgres['environment']['POSTGRES_USER']}@postgres:5432/"
    assert user_db + postgres["environment"]["POSTGRES_DB"] in store_url


def test_the_image_installs_the_postgres_extra_and_runs_unprivileged() -> None:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert "postgres" in extras["optional-dependencies"]
    assert any("[postgres]" in run and "pip install" in run for run in dockerfile("RUN"))
    (user,) = dockerfile("USER")
    assert user not in ("root", "0")
    (base,) = dockerfile("FROM")
    assert re.fullmatch(r"python:3\.1[1-9](-slim)?(-\w+)?", base)
    ignored = (DEPLOY / "Dockerfile.dockerignore").read_text().splitlines()
    for arguments in dockerfile("COPY"):
        for source in [part for part in arguments.split()[:-1] if not part.startswith("--")]:
            assert (ROOT / source).exists(), f"COPY {source}: no such file"
            assert f"!{source.rstrip('/')}" in ignored, f"{source} is left out of the context"


# --------------------------------------------------------------------------- health check script


def load_healthcheck() -> ModuleType:
    spec = importlib.util.spec_from_file_location("deploy_healthcheck", HEALTHCHECK)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class _Readiness:
    current = None  # no service: /health reads no store

    def __init__(self, readiness: str) -> None:
        self.readiness = readiness


@contextmanager
def health_server(readiness: str) -> Iterator[str]:
    """A loopback server answering GET /health as the real probe does for ``readiness``."""
    probe = HealthProbe()
    probe.attach(cast(Any, _Readiness(readiness)))
    answer = anyio.run(probe.answer, cast(Any, None))
    status, body = answer.status_code, bytes(answer.body)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(status if self.path == HEALTH_PATH else 404)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}{HEALTH_PATH}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize(("readiness", "code"), [("ready", 0), ("starting", 1), ("failed", 1)])
def test_the_health_check_passes_a_ready_server_only(readiness: str, code: int) -> None:
    script = load_healthcheck()
    with health_server(readiness) as url:
        assert script.main(url) == code


def test_the_health_check_fails_without_a_server() -> None:
    script = load_healthcheck()
    with health_server("ready") as url:
        pass  # closed: nothing listens there any more
    assert script.main(url) == 1


# --------------------------------------------------------------------------- documentation


def test_the_documentation_names_files_that_exist() -> None:
    docs = (ROOT / "docs" / "team-server.md").read_text()
    assert "\n## Deploying with Docker Compose\n" in docs
    assert "docs/team-server.md#deploying-with-docker-compose" in (ROOT / "README.md").read_text()
    readme = (DEPLOY / "README.md").read_text()
    for text in (docs, readme):
        for name in set(re.findall(r"deploy/([\w.-]+)", text)) - {".env"}:  # the user's own
            assert (DEPLOY / name).exists(), f"the documentation names deploy/{name}"
    for name in set(re.findall(r"`([\w.-]+)`", readme)):
        if "." in name and name not in (".env", "README.md"):
            assert (DEPLOY / name).exists() or (ROOT / name).exists(), name
