"""``foundry-mcp view``: a research's page written with its data and (``--serve``) served live on
127.0.0.1 behind an access token, run as a user runs it, against the fakes."""

from __future__ import annotations

import json
import os
import re
import signal
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.test_cli import _run

QUESTION = "How do B-trees <b>split</b> their nodes?"
DATA_BLOCK = re.compile(r'<script type="application/json" id="foundry-data">(.*?)</script>', re.S)


@pytest.fixture(scope="module")
def finished(module_research_env: dict[str, str]) -> str:
    """A completed research of this module's store: its id."""
    done = _run(module_research_env, "research", QUESTION, "--max-iterations", "1")
    assert done.returncode == 0, done.stderr
    found = re.search(r"research (deepres-[0-9a-f]{12}) started", done.stderr)
    assert found is not None, done.stderr
    return found.group(1)


def _embedded(page: str) -> dict[str, Any]:
    found = DATA_BLOCK.search(page)
    assert found is not None
    data: dict[str, Any] = json.loads(found.group(1))
    return data


def test_view_writes_the_research_page_with_its_data(
    module_research_env: dict[str, str], finished: str
) -> None:
    done = _run(module_research_env, "view", finished, "--no-open")
    assert done.returncode == 0, done.stderr
    said = json.loads(done.stdout)  # a pipe: one JSON document
    path = Path(said["path"])
    assert (
        path == Path(module_research_env["FOUNDRY_MCP_RESEARCH_DIR"]) / "views" / f"{finished}.html"
    )
    assert said["opened"] is False and said["status"] == "completed"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600  # it holds the research
    page = path.read_text()
    data = _embedded(page)
    assert data["research_id"] == finished and data["question"] == QUESTION
    assert data["live"] is False and data["report"] and data["sources"]
    assert "<b>split</b>" not in page  # the question is data, never markup
    assert "connect-src" not in page  # a written page asks nothing of any server

    again = json.loads(_run(module_research_env, "view", finished, "--no-open").stdout)
    assert again["path"] == str(path) and "replaced" in again["note"]


def test_view_never_replaces_a_file_unasked(
    module_research_env: dict[str, str], finished: str, tmp_path: Path
) -> None:
    out = tmp_path / "page.html"
    out.write_text("mine")
    refused = _run(module_research_env, "view", finished, "--no-open", "--out", str(out))
    assert refused.returncode == 2
    assert f"--out {out} exists." in refused.stderr and "--overwrite" in refused.stderr
    assert "Traceback" not in refused.stderr
    assert out.read_text() == "mine"

    replaced = _run(
        module_research_env, "view", finished, "--no-open", "--out", str(out), "--overwrite"
    )
    assert replaced.returncode == 0, replaced.stderr
    assert _embedded(out.read_text())["research_id"] == finished

    nowhere = tmp_path / "missing" / "page.html"
    missing = _run(module_research_env, "view", finished, "--no-open", "--out", str(nowhere))
    assert missing.returncode == 2 and "does not exist" in missing.stderr
    assert "Traceback" not in missing.stderr


def test_view_of_an_unknown_research_is_a_clear_error(
    module_research_env: dict[str, str],
) -> None:
    for extra in ((), ("--serve",)):
        unknown = _run(module_research_env, "view", "deepres-000000000000", "--no-open", *extra)
        assert unknown.returncode == 2
        assert "No research with id deepres-000000000000" in unknown.stderr
        assert "fix:" in unknown.stderr and "Traceback" not in unknown.stderr
    as_json = _run(module_research_env, "view", "deepres-000000000000", "--json")
    assert json.loads(as_json.stdout)["error_code"] == "RESEARCH_NOT_FOUND"
    malformed = _run(module_research_env, "view", "../../etc/passwd", "--no-open")
    assert malformed.returncode == 2 and "Traceback" not in malformed.stderr
    assert not list(Path(module_research_env["FOUNDRY_MCP_RESEARCH_DIR"]).rglob("*passwd*"))


class Served:
    """``foundry-mcp view ID --serve``, as a subprocess, until stopped."""

    def __init__(self, env: dict[str, str], research_id: str, *extra: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "foundry_mcp", "view", research_id, "--serve", "--json", *extra],
            env={"PATH": os.environ.get("PATH", ""), **env},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        assert line, self.process.stderr.read() if self.process.stderr else ""
        self.url: str = json.loads(line)["url"]

    def stop(self) -> tuple[int, str]:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
        try:
            _, err = self.process.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            _, err = self.process.communicate()
        return self.process.returncode, err


@pytest.fixture
def served(module_research_env: dict[str, str], finished: str) -> Iterator[Served]:
    server = Served(module_research_env, finished)
    try:
        yield server
    finally:
        server.stop()


def test_serve_answers_the_page_and_its_data_behind_its_token(
    served: Served, finished: str
) -> None:
    url = served.url
    found = re.fullmatch(r"http://127\.0\.0\.1:(\d+)/([A-Za-z0-9_-]{40,})/", url)
    assert found is not None, url
    port, token = found.groups()
    with httpx.Client(trust_env=False, timeout=10) as client:
        page = client.get(url)
        assert (
            page.status_code == 200
            and "connect-src 'self'" in page.headers["content-security-policy"]
        )
        assert _embedded(page.text)["research_id"] == finished
        data = client.get(url + "data")
        assert data.status_code == 200 and data.json()["research_id"] == finished
        assert data.headers["cache-control"] == "no-store"

        guessed = client.get(f"http://127.0.0.1:{port}/{token[:-2]}xy/data")
        assert guessed.status_code == 403 and finished not in guessed.text
        rebound = client.get(url + "data", headers={"Host": f"attacker.example:{port}"})
        assert rebound.status_code == 421
    code, err = served.stop()
    assert code == 0, err
    assert "Traceback" not in err
