"""A throwaway PostgreSQL server for the tests: started once per session, one schema per test.

``postgres_server`` runs ``initdb`` into a temporary folder and starts ``postgres`` on a unix
socket in that folder only (no TCP port; the folder is private), with fsync off. Run as root,
the server runs as the unprivileged ``postgres`` user (PostgreSQL refuses root). It is a child
of the test process that dies with it (``setpriv --pdeathsig``), and it is stopped and its
folder removed at the end of the session, failed or not.

``running_postgres()`` does the same outside pytest (``benchmarks/team/load.py``): a context
manager that yields the running server and stops it, and removes its folder, when the block
ends. It raises ``PostgresUnavailable`` when PostgreSQL or the driver is missing and
``PostgresStartError`` when the server does not start; the fixture turns the first into a skip
and the second into a failure.

``postgres_url`` gives each test a fresh, empty schema, named in the URL's ``search_path``: a
store opened on it migrates its own tables there. Creating a schema takes milliseconds.

Without PostgreSQL installed (no ``initdb`` on PATH nor under ``/usr/lib/postgresql/*/bin``) or
without the driver (``psycopg``), the tests that need it are skipped; with
``FOUNDRY_MCP_REQUIRE_POSTGRES=1`` (``.ci/run`` sets it) they fail instead.
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import pytest

REQUIRE_ENV = "FOUNDRY_MCP_REQUIRE_POSTGRES"
SUPERUSER = "foundry"
DATABASE = "foundry_test"
PORT = 5432  # only names the socket file: the server listens on no TCP port
START_TIMEOUT_SECONDS = 60.0


class PostgresUnavailable(Exception):
    """PostgreSQL, its driver, or what starting it as root needs, is not installed here."""


class PostgresStartError(RuntimeError):
    """PostgreSQL is installed but could not be started."""


@dataclass(frozen=True)
class PostgresServer:
    """A running test server, reachable through its socket folder."""

    socket_dir: Path
    bin_dir: Path
    started_in: float  # seconds from initdb to accepting connections

    def url(self, *, schema: str | None = None, user: str = SUPERUSER, password: str = "") -> str:
        """A libpq URL of the test database, optionally with a password and a search_path."""
        login = quote(user) + (f":{quote(password, safe='')}" if password else "")
        query = f"host={quote(str(self.socket_dir), safe='')}&port={PORT}"
        if schema is not None:
            query += "&options=" + quote(f"-c search_path={schema}", safe="")
        return f"postgresql://{login}@/{DATABASE}?{query}"


def find_bin_dir() -> Path | None:
    """Where initdb and postgres are: on PATH, else Debian's newest /usr/lib/postgresql/N/bin."""
    on_path = shutil.which("initdb")
    if on_path:
        return Path(on_path).resolve().parent
    candidates = [
        path.parent
        for path in Path("/usr/lib/postgresql").glob("*/bin/initdb")
        if path.parent.parent.name.isdigit()
    ]
    if not candidates:
        return None
    return max(candidates, key=lambda bin_dir: int(bin_dir.parent.name))


def _unavailable(reason: str) -> None:
    """Skip the test (fail it with ``FOUNDRY_MCP_REQUIRE_POSTGRES=1``): ``reason`` says what
    is missing."""
    if os.environ.get(REQUIRE_ENV) == "1":
        pytest.fail(f"{reason}, and {REQUIRE_ENV}=1 requires the PostgreSQL tests to run")
    pytest.skip(f"{reason}; install Debian's postgresql package to run the PostgreSQL tests")


def _server_user() -> pwd.struct_passwd | None:
    """The unprivileged user PostgreSQL runs as when we are root (None: ourselves)."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            return pwd.getpwnam(name)
        except KeyError:
            continue
    raise PostgresUnavailable(
        "running as root needs an unprivileged 'postgres' user to start PostgreSQL"
    )


def _command(user: pwd.struct_passwd | None, program: list[str]) -> list[str]:
    """``program`` run as ``user`` and dying with this process (SIGQUIT: immediate shutdown).

    The death signal is set after the change of user, which clears it: a second setpriv, run
    as that user, sets it and then becomes the program.
    """
    if not shutil.which("setpriv"):
        if user is not None:
            raise PostgresUnavailable(
                "running as root needs setpriv (util-linux) to start PostgreSQL"
            )
        return program
    dying = ["setpriv", "--pdeathsig", "SIGQUIT", "--", *program]
    if user is None:
        return dying
    change_user = [f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--init-groups"]
    return ["setpriv", *change_user, "--", *dying]


def _start(
    bin_dir: Path, folder: Path, *, own_process_group: bool = False
) -> tuple[subprocess.Popen[bytes], PostgresServer]:
    began = time.monotonic()
    user = _server_user()
    if user is not None:
        os.chown(folder, user.pw_uid, user.pw_gid)
    data = folder / "data"
    initdb_args = ["-D", str(data), "-U", SUPERUSER, "-E", "UTF8", "--locale=C", "--no-sync"]
    initdb = subprocess.run(
        _command(user, [str(bin_dir / "initdb"), *initdb_args]),
        capture_output=True,
        text=True,
        check=False,
    )
    if initdb.returncode != 0:
        raise PostgresStartError(f"initdb failed: {initdb.stderr.strip() or initdb.stdout.strip()}")
    # Trust only the test superuser, and only on the private socket; other roles log in with
    # a password (the tests of refused logins need that).
    (data / "pg_hba.conf").write_text(
        f"local all {SUPERUSER} trust\nlocal all all scram-sha-256\n", encoding="utf-8"
    )
    log = (folder / "server.log").open("wb")
    server_settings = {
        "listen_addresses": "",  # no TCP port: the private socket only
        "unix_socket_directories": str(folder),
        "unix_socket_permissions": "0700",
        "fsync": "off",
        "synchronous_commit": "off",
        "full_page_writes": "off",
        "max_connections": "200",
    }
    options = [f"-c{name}={value}" for name, value in server_settings.items()]
    server = subprocess.Popen(
        _command(user, [str(bin_dir / "postgres"), "-D", str(data), "-p", str(PORT), *options]),
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        process_group=0 if own_process_group else None,
    )
    log.close()
    try:
        running = PostgresServer(folder, bin_dir, 0.0)
        _wait_ready(server, running, folder / "server.log")
        import psycopg

        with psycopg.connect(_admin_url(running), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {DATABASE}")
    except BaseException:
        _stop(server)
        raise
    return server, PostgresServer(folder, bin_dir, time.monotonic() - began)


def _admin_url(server: PostgresServer) -> str:
    return server.url().replace(f"/{DATABASE}?", "/postgres?")


def _wait_ready(server: subprocess.Popen[bytes], running: PostgresServer, log: Path) -> None:
    import psycopg

    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    while True:
        if server.poll() is not None:
            raise PostgresStartError(
                f"postgres exited at start: {log.read_text(errors='replace')[-2000:]}"
            )
        try:
            psycopg.connect(_admin_url(running), connect_timeout=2).close()
            return
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise PostgresStartError(
                    f"postgres did not start: {log.read_text(errors='replace')[-2000:]}"
                ) from None
            time.sleep(0.05)


def _stop(server: subprocess.Popen[bytes]) -> None:
    if server.poll() is None:
        server.send_signal(signal.SIGINT)  # fast shutdown: sessions end, no checkpoint wait
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(timeout=15)


@contextmanager
def running_postgres(*, own_process_group: bool = False) -> Iterator[PostgresServer]:
    """A throwaway PostgreSQL server in a new temporary folder, for the ``with`` block.

    When the block ends, however it ends, the server is stopped and its folder removed; the
    server also dies with this process (SIGQUIT). The death signal follows the thread that
    started the server: enter this in a thread that lives as long as the block (the main one).
    With ``own_process_group`` the server is out of this process's group, so a Ctrl-C in the
    terminal does not stop it before the programs that use it (they may need it to stop).
    Raises ``PostgresUnavailable`` when PostgreSQL or the driver is not installed (before any
    folder is made) or the server cannot be started as root, ``PostgresStartError`` when
    ``initdb`` or the server fails.
    """
    try:
        import psycopg  # noqa: F401
    except ImportError:
        raise PostgresUnavailable(
            "the PostgreSQL driver psycopg is not installed (the 'test' extra has it)"
        ) from None
    bin_dir = find_bin_dir()
    if bin_dir is None:
        raise PostgresUnavailable(
            "PostgreSQL is not installed (no initdb on PATH or in /usr/lib/postgresql)"
        )
    folder = Path(tempfile.mkdtemp(prefix="foundry-pg-"))
    server: subprocess.Popen[bytes] | None = None
    try:
        server, running = _start(bin_dir, folder, own_process_group=own_process_group)
        yield running
    finally:
        if server is not None:
            _stop(server)
        shutil.rmtree(folder, ignore_errors=True)


@contextmanager
def postgres_for_a_test() -> Iterator[PostgresServer]:
    """A throwaway PostgreSQL server; the test is skipped when PostgreSQL is not installed
    (failed where it must be, see ``_unavailable``) and failed when it cannot start."""
    try:
        with running_postgres() as running:
            yield running
    except PostgresUnavailable as exc:
        _unavailable(str(exc))
    except PostgresStartError as exc:
        pytest.fail(str(exc))


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """A PostgreSQL server for the whole session (skipped when PostgreSQL is not installed)."""
    with postgres_for_a_test() as running:
        yield running


@pytest.fixture
def postgres_url(postgres_server: PostgresServer) -> str:
    """A URL of the test database whose search_path is a new, empty schema of this test's."""
    import psycopg

    schema = f"test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(postgres_server.url(), autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    return postgres_server.url(schema=schema)
