"""``foundry-mcp bench``: one research per task of a JSONL file, answers in DeepResearch Bench's form.

Tasks are ``{"id", "prompt"}`` lines (other keys are ignored, so the benchmark's ``query.jsonl``
works as is). Each finished task appends ``{"id", "prompt", "article"}`` to the answers file, the
lines the benchmark's RACE and FACT scorers read, and one line of figures to the summary file
beside it. A task whose id is already in the answers file is skipped, so a stopped run is
continued by running the same command again; a failed task is only in the summary, and runs again.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import IO, Any

import anyio

from foundry_mcp.config.research_settings import LimitArgs
from foundry_mcp.errors import FoundryError, InputError
from foundry_mcp.plain import plain
from foundry_mcp.research.service.research_service import ResearchService, check_range
from foundry_mcp.research.service.starting.request import ResearchRequest

TERMINAL = {"completed", "failed", "cancelled", "timed_out", "interrupted", "waiting"}
SAMPLE_TASKS = "data/bench/sample_tasks.jsonl"
MAX_CONCURRENCY = 16
STATUS_POLL_SECONDS = 5.0
# Every summary line has every key; a failed task keeps the zeros it did not reach.
EMPTY_FIGURES: dict[str, Any] = {
    "wall_time_s": 0.0,
    "input_tokens": 0,
    "output_tokens": 0,
    "cost_usd": 0.0,
    "sources": 0,
    "claims_checked": 0,
    "supported": 0,
    "removed": 0,
    "repaired": 0,
    "error": None,
}
TASKS_REMEDIATION = 'Give every line a JSON object such as {"id": 1, "prompt": "..."}.'


@dataclass(frozen=True)
class BenchTask:
    """One benchmark question; ``id`` is kept as given (DeepResearch Bench uses integers)."""

    id: int | str
    prompt: str

    @property
    def key(self) -> str:
        return str(self.id)


def parse_tasks(text: str, name: str) -> list[BenchTask]:
    """The tasks of a JSONL text; ``InputError`` naming the first bad line."""
    tasks: list[BenchTask] = []
    seen: set[str] = set()
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            raise _bad_line(name, number, f"not valid JSON ({exc.msg})") from None
        if not isinstance(item, dict):
            raise _bad_line(name, number, "not a JSON object")
        task_id, prompt = item.get("id"), item.get("prompt")
        if isinstance(task_id, bool) or not isinstance(task_id, int | str) or task_id == "":
            raise _bad_line(name, number, "needs an id (a number or a non-empty string)")
        if not isinstance(prompt, str) or not prompt.strip():
            raise _bad_line(name, number, "needs a prompt (a non-empty string)")
        if str(task_id) in seen:
            raise _bad_line(name, number, f"repeats the id {task_id!r}")
        seen.add(str(task_id))
        tasks.append(BenchTask(task_id, prompt))
    if not tasks:
        raise InputError(f"{name} holds no tasks.", remediation=TASKS_REMEDIATION)
    return tasks


def _bad_line(name: str, number: int, problem: str) -> InputError:
    return InputError(
        f"{name} line {number}: {problem}.",
        remediation=TASKS_REMEDIATION,
        details={"line": number},
    )


def load_tasks(args: argparse.Namespace) -> list[BenchTask]:
    """The tasks named on the command line: a file, or with ``--sample`` the bundled ones."""
    if args.sample == (args.tasks is not None):
        raise InputError(
            "bench needs either a tasks file or --sample (not both).",
            remediation="Run foundry-mcp bench TASKS.jsonl --out RESULTS.jsonl, "
            "or foundry-mcp bench --sample --out RESULTS.jsonl.",
        )
    if args.sample:
        text = resources.files("foundry_mcp").joinpath(SAMPLE_TASKS).read_text("utf-8")
        return parse_tasks(text, "the sample tasks")
    path = Path(args.tasks).expanduser()
    try:
        text = path.read_text("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(
            f"cannot read {path}: {exc}.", remediation="Name a UTF-8 JSONL file of tasks."
        ) from None
    return parse_tasks(text, str(path))


def summary_path(out: Path) -> Path:
    """``RESULTS.summary.jsonl`` beside ``RESULTS.jsonl``."""
    stem = out.name[: -len(".jsonl")] if out.name.endswith(".jsonl") else out.name
    return out.with_name(f"{stem}.summary.jsonl")


def answered_ids(raw: str) -> tuple[Path, set[str]]:
    """The answers file named ``raw`` (its folder made) and the ids already answered in it.

    A last line cut short by a kill is dropped: its task runs again.
    """
    out = Path(raw).expanduser()
    out.parent.mkdir(parents=True, exist_ok=True)
    if not out.exists():
        return out, set()
    data = out.read_bytes()
    if data and not data.endswith(b"\n"):
        data = data[: data.rfind(b"\n") + 1]
        with out.open("r+b") as handle:
            handle.truncate(len(data))
    ids: set[str] = set()
    for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            ids.add(str(json.loads(line)["id"]))
        except (json.JSONDecodeError, KeyError, TypeError):
            raise InputError(
                f"{out} line {number} is not an answer written by foundry-mcp bench.",
                remediation="Pass --out a new file, or the answers file of an earlier bench run.",
            ) from None
    return out, ids


async def run_bench(service: ResearchService, args: argparse.Namespace) -> int:
    """The ``bench`` command: run every unanswered task, ``concurrency`` at a time."""
    tasks = load_tasks(args)
    concurrency = check_range("concurrency", args.concurrency, 1, MAX_CONCURRENCY)
    _check_providers(service)
    out, done = answered_ids(args.out)
    todo = [task for task in tasks if task.key not in done]
    summary = summary_path(out)
    _say(
        f"bench: {len(tasks)} tasks, {len(tasks) - len(todo)} already answered in {out}; "
        f"running {len(todo)}, {concurrency} at a time"
    )
    with out.open("a", encoding="utf-8") as answers, summary.open("a", encoding="utf-8") as log:
        run = BenchRun(service, args, answers, log, total=len(todo))
        limiter = anyio.CapacityLimiter(concurrency)
        async with anyio.create_task_group() as task_group:
            for task in todo:
                task_group.start_soon(run.run_task, task, limiter)
    _say(
        f"bench: {run.completed} completed, {run.failed} failed; "
        f"answers in {out}, figures in {summary}"
    )
    if args.json:
        outcome = {
            "tasks": len(tasks),
            "already_answered": len(tasks) - len(todo),
            "ran": len(todo),
            "completed": run.completed,
            "failed": run.failed,
            "answers": str(out),
            "summary": str(summary),
        }
        print(json.dumps(outcome, indent=2))
    return 0


def _check_providers(service: ResearchService) -> None:
    """Fail the run at once, not task by task, when no LLM or search provider is usable."""
    service.providers.resolve_llm(None, None)
    service.providers.search_providers(announce=False)


class BenchRun:
    """The tasks of one bench run: each researched, written out and shown as it ends."""

    def __init__(
        self,
        service: ResearchService,
        args: argparse.Namespace,
        answers: IO[str],
        log: IO[str],
        *,
        total: int,
    ) -> None:
        self.service = service
        self.max_iterations: int | None = args.max_iterations
        self.mode: str | None = args.mode
        self.effort: str | None = args.effort
        self.answers = answers
        self.log = log
        self.total = total
        self.running = 0
        self.completed = 0
        self.failed = 0

    async def run_task(self, task: BenchTask, limiter: anyio.CapacityLimiter) -> None:
        async with limiter:
            self.running += 1
            self._show("started", task, _excerpt(task.prompt))
            began = time.monotonic()
            record = await self._research(task)
            record["wall_time_s"] = round(time.monotonic() - began, 1)
            self.running -= 1
            if record["status"] == "completed":
                self.completed += 1
                detail = f"in {record['wall_time_s']}s, {record['sources']} sources"
            else:
                self.failed += 1
                detail = f"after {record['wall_time_s']}s: {record['error']}"
            self._write(self.log, {"id": task.id, **record})
            self._show(record["status"], task, detail)

    def request(self, task: BenchTask) -> ResearchRequest:
        """The research of ``task``, with the bench's options."""
        return ResearchRequest(
            query=task.prompt,
            limits=LimitArgs(max_iterations=self.max_iterations),
            mode=self.mode,
            effort=self.effort,
        )

    async def _research(self, task: BenchTask) -> dict[str, Any]:
        """Run the task's research to its end; its summary record (and its answer, if any)."""
        record: dict[str, Any] = {"status": "failed", "research_id": None, **EMPTY_FIGURES}
        try:
            started = await self.service.start(self.request(task))
            record["research_id"] = started["research_id"]
            status = await self._wait(started["research_id"])
            record.update(_figures(status))
            if status["status"] != "completed":
                record["status"] = status["status"]
                record["error"] = status["error"] or f"the research ended {status['status']}"
                return record
            article = await self.service.full_report(started["research_id"])
            payload, _ = await self.service.report(started["research_id"])
        except FoundryError as exc:
            record["error"] = exc.message
            return record
        record.update(_report_figures(payload.get("report_metadata") or {}))
        # The answer goes first: a task killed before its summary line is not run again.
        self._write(self.answers, {"id": task.id, "prompt": task.prompt, "article": article})
        record.update(status="completed", error=None)
        return record

    async def _wait(self, research_id: str) -> dict[str, Any]:
        while True:
            status = await self.service.status(
                research_id, wait=True, wait_timeout=STATUS_POLL_SECONDS
            )
            if status["status"] in TERMINAL:
                return status

    def _write(self, handle: IO[str], record: dict[str, Any]) -> None:
        handle.write(json.dumps(record, ensure_ascii=False) + "\n")
        handle.flush()

    def _show(self, event: str, task: BenchTask, detail: str) -> None:
        finished = self.completed + self.failed
        _say(
            f"[{finished}/{self.total} done, {self.running} running] "
            f"{event:<9} task {task.id}: {detail}"
        )


def _figures(status: dict[str, Any]) -> dict[str, Any]:
    """Tokens and estimated cost of a research, from its status."""
    spent = status["usage"]["total"]
    return {
        "input_tokens": spent["input_tokens"],
        "output_tokens": spent["output_tokens"],
        "cost_usd": spent["cost_usd"],
    }


def _report_figures(metadata: dict[str, Any]) -> dict[str, Any]:
    """Sources cited and the verification counts, from the report's metadata."""
    verification = metadata.get("verification") or {}
    return {
        "sources": metadata.get("sources_cited", 0),
        "claims_checked": verification.get("claims_checked", 0),
        "supported": verification.get("supported", 0),
        "removed": verification.get("removed", 0),
        "repaired": verification.get("repaired", 0),
    }


def _excerpt(text: str, limit: int = 80) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def _say(line: str) -> None:
    print(plain(line), file=sys.stderr, flush=True)
