"""What the three assistants' programs have in common as LLM adapters.

An adapter says how one program is called for a request (its options, its stdin, the files and
variables it reads) and how its JSON output is read; :class:`CLIProvider` runs the call in a
private empty directory (removed afterwards) through :class:`CLIRunner` and makes the answer an
``LLMResponse``. The programs take no temperature and no output limit: the request's
``temperature`` and ``max_tokens`` do not reach them. ``json_mode`` becomes an instruction at
the end of the prompt, and a code fence around the answer is removed.

The model ``"default"`` (:data:`CLI_DEFAULT_MODEL`) leaves the choice to the program: no model
option is passed. Token counts come from the program's JSON; a count it does not report is
left None (the research's call layer estimates it from the text).
"""

from __future__ import annotations

import contextlib
import json
import tempfile
import time
from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from foundry_mcp.config.provider_settings import CLI_DEFAULT_MODEL
from foundry_mcp.errors import ProviderError
from foundry_mcp.providers.llm.base import LLMRequest, LLMResponse
from foundry_mcp.providers.llm.programs.errors import CLIProgram, failure, unreadable
from foundry_mcp.providers.llm.programs.runner import DEFAULT_MAX_IN_FLIGHT, CLIOutput, CLIRunner
from foundry_mcp.providers.llm.text import strip_code_fence, strip_reasoning

JSON_ONLY = (
    "\n\nAnswer with one JSON object and nothing else: no text before or after it, no code fences."
)


@dataclass(frozen=True)
class CLICall:
    """How the program is called for one request: options, stdin, files and variables."""

    args: list[str]
    stdin: str
    files: dict[str, str] = field(default_factory=dict)  # name in the work dir -> content
    env: dict[str, str] = field(default_factory=dict)  # added to the inherited environment
    unset_env: tuple[str, ...] = ()  # taken out of the inherited environment


@dataclass(frozen=True)
class CLIAnswer:
    """The program's answer and what it reported about it."""

    text: str
    model: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None


class CLIProvider(ABC):
    """An LLM reached through an assistant's program, which answers on its user's login."""

    program: ClassVar[CLIProgram]

    def __init__(
        self,
        name: str,
        api_key: str | None,
        base_url: str | None,
        timeout: float,
        max_retries: int = 0,
        *,
        command: str | None = None,
        max_in_flight: int | None = None,
    ) -> None:
        # api_key, base_url and max_retries are the registry's arguments for every LLM; a
        # program uses its own login and endpoint, and the resilience policy retries.
        self.name = name
        self._runner = CLIRunner(
            name, self.program, command, timeout, max_in_flight or DEFAULT_MAX_IN_FLIGHT
        )

    @classmethod
    def warm_up(cls, model: str, base_url: str | None) -> None:
        """Nothing to warm: every call starts the program afresh (its start-up is measured as
        part of each call)."""
        return None

    async def complete(self, request: LLMRequest) -> LLMResponse:
        started = time.perf_counter()
        with _work_dir() as work_dir:
            call = self.call_for(request, work_dir)
            for file_name, content in call.files.items():
                (work_dir / file_name).write_text(content, encoding="utf-8")
            output = await self._runner.run(
                call.args, call.stdin, cwd=work_dir, extra_env=call.env, unset_env=call.unset_env
            )
        answer = self.read(output)
        text = strip_reasoning(answer.text)
        if request.json_mode:
            text = strip_code_fence(text)
        return LLMResponse(
            text=text,
            model=answer.model or request.model,
            provider=self.name,
            input_tokens=answer.input_tokens,  # None when the program did not report it
            output_tokens=answer.output_tokens,
            latency_s=time.perf_counter() - started,
        )

    async def aclose(self) -> None:
        """Nothing stays open between calls."""
        return None

    # ------------------------------------------------------------------ per program

    @abstractmethod
    def call_for(self, request: LLMRequest, work_dir: Path) -> CLICall:
        """The options, stdin, files and variables of one call (``work_dir`` is its cwd)."""

    @abstractmethod
    def read(self, output: CLIOutput) -> CLIAnswer:
        """The answer in ``output``; raise ``ProviderError`` when the program failed."""

    # ------------------------------------------------------------------ shared helpers

    def failed(self, detail: str, output: CLIOutput, status: int | None = None) -> ProviderError:
        """The ProviderError for a failure the program reported."""
        return failure(self.name, self.program, detail, exit_code=output.exit_code, status=status)

    def unreadable(self, what: str, output: CLIOutput) -> ProviderError:
        """The error for output that is not the documented JSON: the program's own complaint
        on stderr when it exited with an error, else a malformed answer."""
        complaint = output.stderr.strip()
        if output.exit_code != 0 and complaint:
            return self.failed(complaint, output)
        return unreadable(self.name, self.program, what)


def model_options(model: str) -> list[str]:
    """``--model`` and the model for the program, or nothing to let it choose."""
    chosen = model.strip()
    return [] if not chosen or chosen == CLI_DEFAULT_MODEL else ["--model", chosen]


def prompt_text(request: LLMRequest) -> str:
    """The user prompt, with the JSON instruction when the request wants JSON."""
    return request.user + (JSON_ONLY if request.json_mode else "")


def json_documents(text: str) -> Iterator[Any]:
    """The JSON values in ``text``: one document, or one per line (JSON Lines)."""
    stripped = text.strip()
    if not stripped:
        return
    try:
        yield json.loads(stripped)
        return
    except ValueError:
        pass
    for line in stripped.splitlines():
        line = line.strip()
        if line.startswith(("{", "[")):
            try:
                yield json.loads(line)
            except ValueError:
                continue


def int_or_none(value: Any) -> int | None:
    """A token count from JSON: a non-negative int, else None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return max(0, int(value))


@contextlib.contextmanager
def _work_dir() -> Iterator[Path]:
    """A private empty directory for one call (mode 0700), removed afterwards: the program's
    cwd, so that no project's instructions, settings or MCP servers apply to it."""
    with tempfile.TemporaryDirectory(prefix="foundry-mcp-cli-") as name:
        yield Path(name)
