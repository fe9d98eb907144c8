"""How fast ``foundry-mcp`` answers ``initialize`` over stdio (the provider SDKs load lazily).

Starts the server as an editor does, sends ``initialize`` and times the answer. Run from the
repository root:

    python benchmarks/startup.py [--runs 5]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "startup-benchmark", "version": "0"},
    },
}


def time_initialize(env: dict[str, str]) -> float:
    began = time.perf_counter()
    server = subprocess.Popen(
        [sys.executable, "-m", "foundry_mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    assert server.stdin is not None and server.stdout is not None
    server.stdin.write(json.dumps(INITIALIZE) + "\n")
    server.stdin.flush()
    answer = json.loads(server.stdout.readline())
    elapsed = time.perf_counter() - began
    assert "result" in answer, answer
    server.stdin.close()
    server.wait(timeout=30)
    server.stdout.close()
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        env = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": tmp,
            "FOUNDRY_MCP_RESEARCH_DIR": os.path.join(tmp, "research"),
        }
        times = [time_initialize(env) for _ in range(args.runs)]
    print(
        f"initialize over stdio ({args.runs} runs): median {statistics.median(times):.3f} s, "
        f"max {max(times):.3f} s (target < 1.0 s)"
    )


if __name__ == "__main__":
    main()
