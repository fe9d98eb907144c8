"""The standard pipes read and written by the event loop (``stdio_pipes``, server/stdio.py), in
a process of their own: the wire moved aside from fd 0 and 1 while serving, messages of any
size, a client that leaves, and the SDK's way kept for anything that is not a pipe."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

# Echoes each line it reads as {"got": <length>, "text": <first 40 characters>}; meanwhile a
# print, a write to fd 1 and a child process all try to reach stdout. At the end it reports on
# stderr whether fd 0 and 1 are back and blocking, and CLOSED when the client closed its end.
ECHO = r"""
import asyncio, json, os, subprocess, sys
import anyio
from foundry_mcp.server.stdio import stdio_pipes

async def main():
    async with stdio_pipes() as pipes:
        if pipes is None:
            print("NOT PIPES", file=sys.stderr)
            return
        lines, answers = pipes
        print("a stray print", flush=True)
        os.write(1, b"a stray write\n")
        subprocess.run([sys.executable, "-c", "print('a child')"], check=True)
        assert subprocess.run([sys.executable, "-c", "import sys; print(repr(sys.stdin.read()))"],
                              capture_output=True, text=True).stdout.strip() == "''"
        try:
            async for line in lines:
                await answers.write(json.dumps({"got": len(line), "text": line[:40]}) + "\n")
                await answers.flush()
        except anyio.ClosedResourceError:
            print("CLOSED", file=sys.stderr)
    print("restored", os.get_blocking(0), os.get_blocking(1), file=sys.stderr)

asyncio.run(main())
"""


def _echo(stdin: bytes | Path) -> subprocess.CompletedProcess[bytes]:
    if isinstance(stdin, Path):
        with stdin.open("rb") as source:
            return subprocess.run(
                [sys.executable, "-c", ECHO], stdin=source, capture_output=True, timeout=30
            )
    return subprocess.run(
        [sys.executable, "-c", ECHO], input=stdin, capture_output=True, timeout=30
    )


def test_only_answers_reach_the_wire_and_the_standard_descriptors_come_back() -> None:
    done = _echo(b'{"a": 1}\n{"b": 2}\n')
    assert done.returncode == 0, done.stderr.decode()
    answers = [json.loads(line) for line in done.stdout.decode().splitlines()]
    assert answers == [{"got": 9, "text": '{"a": 1}\n'}, {"got": 9, "text": '{"b": 2}\n'}]
    said = done.stderr.decode()
    for stray in ("a stray print", "a stray write", "a child"):
        assert stray in said  # moved to stderr, never on the wire
    assert "restored True True" in said


def test_a_message_of_megabytes_is_read_whole() -> None:
    long = '{"text": "' + "x" * 3_000_000 + '"}\n'
    done = _echo(long.encode() + b'{"next": 1}\n')
    assert done.returncode == 0, done.stderr.decode()
    answers = [json.loads(line) for line in done.stdout.decode().splitlines()]
    assert [answer["got"] for answer in answers] == [len(long), 12]


def test_a_client_that_closes_its_end_ends_the_writing_without_a_traceback() -> None:
    process = subprocess.Popen(
        [sys.executable, "-c", ECHO],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdin is not None and process.stdout is not None
    process.stdout.close()  # the client stops reading, then sends a message
    process.stdin.write(b'{"a": 1}\n')
    process.stdin.close()
    assert process.stderr is not None
    said = process.stderr.read()
    process.wait(timeout=30)
    assert process.returncode == 0, said.decode()
    assert b"CLOSED" in said


def test_stdin_from_a_file_keeps_the_sdks_transport(tmp_path: Path) -> None:
    messages = tmp_path / "messages.jsonl"
    messages.write_text('{"a": 1}\n')
    done = _echo(messages)
    assert b"NOT PIPES" in done.stderr
