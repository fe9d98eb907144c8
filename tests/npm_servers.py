"""MCP servers others wrote, from the npm registry, installed by the tests that use them.

Each is installed once into ``.test-servers/`` at the top of the repository (a file lock keeps
parallel test workers from installing it twice) at the pinned version, so a clean clone gets
the same server. Node.js is not a dependency of this project: where ``node`` and ``npm`` are
absent, the tests that need one are skipped, saying so (they fail instead under
``FOUNDRY_MCP_REQUIRE_NODE=1``, as in ``.ci/run``).
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / ".test-servers"
FILESYSTEM = ("@modelcontextprotocol/server-filesystem", "2026.8.31", "mcp-server-filesystem")


def npm_server(package: str, version: str, command: str) -> Path:
    """The path of ``command`` from ``package@version``, installed when first asked."""
    npm = shutil.which("npm")
    if shutil.which("node") is None or npm is None:
        missing = f"Node.js (node and npm) is not installed: {package} needs it"
        if os.environ.get("FOUNDRY_MCP_REQUIRE_NODE") == "1":
            pytest.fail(missing)
        pytest.skip(missing)
    prefix = ROOT / f"{package.replace('/', '+')}@{version}"
    program = prefix / "node_modules" / ".bin" / command
    prefix.mkdir(parents=True, exist_ok=True)
    with open(prefix / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not program.exists():
            done = subprocess.run(
                [
                    npm,
                    "install",
                    "--no-save",
                    "--no-audit",
                    "--no-fund",
                    "--prefix",
                    str(prefix),
                    f"{package}@{version}",
                ],
                capture_output=True,
                text=True,
                timeout=300,
            )
            assert done.returncode == 0, f"npm install {package}@{version} failed:\n{done.stderr}"
    return program
