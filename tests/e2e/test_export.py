"""deep-research-export through a real MCP client session, and `foundry-mcp export` in a terminal."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import Client

from foundry_mcp.config import Settings
from foundry_mcp.research.export.document import ResearchExport
from foundry_mcp.server import create_server
from tests.e2e.conftest import call, run_to_end
from tests.fakes import FakeHTTPServer

pytestmark = pytest.mark.anyio


async def test_export_each_format_through_mcp(
    settings: Settings,
    tavily_server: FakeHTTPServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)  # the server's working directory is the workspace
    (tmp_path / "exports").mkdir()
    async with Client(create_server(lambda: settings), mode="legacy") as client:
        started = await call(client, action="deep-research", query="What is a B-tree?")
        research_id = started["data"]["research_id"]
        assert (await run_to_end(client, research_id))["status"] == "completed"
        report = (await call(client, action="deep-research-report", research_id=research_id))[
            "data"
        ]

        exported = {}
        for fmt in ("markdown", "json", "bibtex", "ris"):
            done = await call(
                client, action="deep-research-export", research_id=research_id, format=fmt
            )
            assert done["success"], done
            exported[fmt] = done["data"]["content"]
        assert exported["markdown"] == report["report"]
        state = ResearchExport.model_validate_json(exported["json"])
        assert state.research_id == research_id and state.report == report["report"]
        keys = [s["source_id"] for s in report["sources"]]
        assert keys and all(f"@misc{{{key}," in exported["bibtex"] for key in keys)
        assert exported["ris"].count("ER  - \n") == len(keys)

        written = await call(
            client,
            action="deep-research-export",
            research_id=research_id,
            format="bibtex",
            path="exports/refs.bib",
        )
        assert written["success"], written
        assert (tmp_path / "exports" / "refs.bib").read_text() == exported["bibtex"]

        again = await call(
            client,
            action="deep-research-export",
            research_id=research_id,
            path="exports/refs.bib",
        )
        assert not again["success"]
        assert again["data"]["error_code"] == "VALIDATION_ERROR"
        assert "overwrite" in again["data"]["remediation"]
        outside = await call(
            client, action="deep-research-export", research_id=research_id, path="../x.md"
        )
        assert outside["data"]["error_code"] == "VALIDATION_ERROR"
        assert not (tmp_path.parent / "x.md").exists()
        bad = await call(
            client, action="deep-research-export", research_id=research_id, format="docx"
        )
        assert bad["data"]["error_code"] == "VALIDATION_ERROR"


def _run(env: dict[str, str], cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "foundry_mcp", *args],
        env={"PATH": os.environ.get("PATH", ""), **env},
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_export_in_the_terminal(
    research_env: dict[str, str], tavily_server: FakeHTTPServer, tmp_path: Path
) -> None:
    done = _run(research_env, tmp_path, "research", "What is a heap?", "--max-iterations", "1")
    assert done.returncode == 0, done.stderr
    research_id = done.stderr.split("research ", 1)[1].split(" ", 1)[0]

    markdown = _run(research_env, tmp_path, "export", research_id)
    assert markdown.returncode == 0, markdown.stderr
    assert markdown.stdout.strip() == done.stdout.strip()

    as_json = _run(research_env, tmp_path, "export", research_id, "--format", "json")
    assert json.loads(as_json.stdout)["research_id"] == research_id

    wrote = _run(
        research_env, tmp_path, "export", research_id, "--format", "ris", "--out", "refs.ris"
    )
    assert wrote.returncode == 0, wrote.stderr
    assert (tmp_path / "refs.ris").read_text().startswith("TY  - ")

    refused = _run(research_env, tmp_path, "export", research_id, "--out", "refs.ris")
    assert refused.returncode == 2
    assert "the file exists" in refused.stderr and "--overwrite" in refused.stderr
    assert (tmp_path / "refs.ris").read_text().startswith("TY  - ")
    replaced = _run(
        research_env, tmp_path, "export", research_id, "--out", "refs.ris", "--overwrite"
    )
    assert replaced.returncode == 0, replaced.stderr
    assert (tmp_path / "refs.ris").read_text() == markdown.stdout
