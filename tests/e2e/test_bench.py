"""``foundry-mcp bench``, run as a user runs it, against the fakes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from foundry_mcp.config import MAX_QUERY_CHARS

SUMMARY_KEYS = {
    "id",
    "status",
    "research_id",
    "wall_time_s",
    "input_tokens",
    "output_tokens",
    "cost_usd",
    "sources",
    "claims_checked",
    "supported",
    "removed",
    "repaired",
    "error",
}


def _run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "foundry_mcp", *args],
        env={"PATH": os.environ.get("PATH", ""), **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


def test_bench_answers_the_sample_tasks_in_the_benchmarks_format(
    research_env: dict[str, str], tmp_path: Path
) -> None:
    out = tmp_path / "results" / "sample.jsonl"
    done = _run(research_env, "bench", "--sample", "--out", str(out), "--max-iterations", "1")
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""

    answers = _lines(out)
    sample = Path(__file__).parents[2] / "src/foundry_mcp/data/bench/sample_tasks.jsonl"
    tasks = {task["id"]: task["prompt"] for task in _lines(sample)}
    assert 3 <= len(tasks) <= 5
    assert {answer["id"] for answer in answers} == set(tasks)
    for answer in answers:
        assert set(answer) == {"id", "prompt", "article"}
        assert answer["prompt"] == tasks[answer["id"]]
        assert answer["article"].startswith("# ")

    summary = _lines(tmp_path / "results" / "sample.summary.jsonl")
    assert {line["id"] for line in summary} == set(tasks)
    for line in summary:
        assert set(line) == SUMMARY_KEYS
        assert line["status"] == "completed" and line["error"] is None
        assert line["research_id"].startswith("deepres-")
        assert line["input_tokens"] > 0 and line["output_tokens"] > 0
        assert isinstance(line["repaired"], int)  # 0 until verification counts repairs
    # Progress: a line as each task starts and ends, with the running count.
    assert done.stderr.count(" started ") == len(tasks)
    assert f"[{len(tasks)}/{len(tasks)} done, 0 running] completed" in done.stderr


def test_bench_run_again_skips_answered_tasks_and_reruns_the_rest(
    research_env: dict[str, str], tmp_path: Path
) -> None:
    # DeepResearch Bench's query.jsonl: integer ids and keys bench does not read. Task 4's
    # question is over the length limit: it fails, and the run goes on.
    prompts = [
        "How do B-trees stay balanced?",
        "What limits the speed of TCP on long links?",
        "How do compilers inline functions?",
        "x" * (MAX_QUERY_CHARS + 1),
    ]
    tasks = tmp_path / "query.jsonl"
    tasks.write_text(
        "".join(
            json.dumps({"id": n, "topic": "Software", "language": "en", "prompt": prompt}) + "\n"
            for n, prompt in enumerate(prompts, start=1)
        )
    )
    out = tmp_path / "foundry.jsonl"
    earlier = {"id": 1, "prompt": prompts[0], "article": "# Earlier\n"}
    # Task 2's line was being written when the earlier run was killed.
    out.write_text(json.dumps(earlier) + "\n" + '{"id": 2, "prompt": "What li')

    done = _run(research_env, "bench", str(tasks), "--out", str(out), "--max-iterations", "1")
    assert done.returncode == 0, done.stderr
    assert "4 tasks, 1 already answered" in done.stderr
    assert "2 completed, 1 failed" in done.stderr

    answers = _lines(out)
    assert answers[0] == earlier
    assert sorted(answer["id"] for answer in answers) == [1, 2, 3]
    summary = {line["id"]: line for line in _lines(tmp_path / "foundry.summary.jsonl")}
    assert sorted(summary) == [2, 3, 4]
    assert summary[2]["status"] == summary[3]["status"] == "completed"
    assert summary[4]["status"] == "failed" and summary[4]["research_id"] is None
    assert "characters; the limit is" in summary[4]["error"]
    listed = json.loads(_run(research_env, "list").stdout)
    assert len(listed["items"]) == 2

    # Only the failed task runs again.
    again = _run(research_env, "bench", str(tasks), "--out", str(out), "--json")
    assert again.returncode == 0, again.stderr
    assert "3 already answered in" in again.stderr and "running 1," in again.stderr
    assert len(_lines(out)) == 3
    outcome = json.loads(again.stdout)  # --json: one document of figures on stdout
    assert outcome["tasks"] == 4 and outcome["already_answered"] == 3
    assert (outcome["ran"], outcome["completed"], outcome["failed"]) == (1, 0, 1)
    assert outcome["answers"] == str(out)


def test_bench_rejects_a_malformed_tasks_file_naming_the_line(
    research_env: dict[str, str], tmp_path: Path
) -> None:
    tasks = tmp_path / "tasks.jsonl"
    out = tmp_path / "out.jsonl"
    cases = {
        '{"id": 1, "prompt": "ok"}\n{"id": 2, "prompt": \n': "line 2: not valid JSON",
        '\n{"id": 1, "prompt": "ok"}\n\n{"prompt": "no id"}\n': "line 4: needs an id",
        '{"id": 1, "prompt": "ok"}\n{"id": "1", "prompt": "again"}\n': "line 2: repeats the id",
    }
    for text, problem in cases.items():
        tasks.write_text(text)
        result = _run(research_env, "bench", str(tasks), "--out", str(out))
        assert result.returncode == 2, result.stderr
        first, fix = result.stderr.splitlines()
        assert first.startswith(f"error: {tasks} {problem}")
        assert fix.startswith("  fix: ")
        assert not out.exists()
    # With --json, a script also gets the error as one JSON document on stdout.
    result = _run(research_env, "bench", str(tasks), "--out", str(out), "--json")
    error = json.loads(result.stdout)
    assert result.returncode == 2 and error["success"] is False
    assert error["error_code"] == "VALIDATION_ERROR" and "repeats the id" in error["error"]
    assert error["remediation"]

    neither = _run(research_env, "bench", "--out", str(out))
    assert neither.returncode == 2
    assert neither.stderr.startswith("error: bench needs either a tasks file or --sample")
