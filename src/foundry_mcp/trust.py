"""Workspace trust: the project configuration files the user has approved.

A ``foundry-mcp.toml`` found in the working directory usually comes with a repository the user
cloned, not from the user. Its keys that decide where secrets go, what code runs, what the server
may read or what it may spend apply only once the user has trusted that exact file with
``foundry-mcp trust [PATH]`` (the model: ``direnv allow``, ``mise trust``, editor workspace
trust). Trust is recorded per absolute path together with the file's SHA-256, in
``~/.foundry-mcp/trusted.json``; a file that changed must be trusted again.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from foundry_mcp.errors import ConfigError

TRUST_FILE = Path(".foundry-mcp") / "trusted.json"
TRUST_FORMAT = 1


def file_digest(data: bytes) -> str:
    """``sha256:<hex>`` of a configuration file's bytes."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class TrustVerdict:
    """Whether a project file is trusted, and why not."""

    trusted: bool
    reason: str  # "trusted", "never trusted" or "changed since it was trusted"


class TrustStore:
    """The user's record of trusted project configuration files."""

    def __init__(self, home: Path) -> None:
        self.path = home / TRUST_FILE

    def verdict(self, config: Path, data: bytes) -> TrustVerdict:
        """Whether ``config`` (whose content is ``data``) is trusted as it is now."""
        entry = self._entries().get(str(_absolute(config)))
        if entry is None:
            return TrustVerdict(False, "never trusted")
        if entry.get("sha256") != file_digest(data):
            return TrustVerdict(False, "changed since it was trusted")
        return TrustVerdict(True, "trusted")

    def trust(self, config: Path, data: bytes) -> str:
        """Record ``config`` with the digest of ``data``; returns that digest."""
        entries = self._entries()
        digest = file_digest(data)
        entries[str(_absolute(config))] = {
            "sha256": digest,
            "trusted_at": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        self._write(entries)
        return digest

    def revoke(self, config: Path) -> bool:
        """Forget ``config``; False when it was not trusted."""
        entries = self._entries()
        if entries.pop(str(_absolute(config)), None) is None:
            return False
        self._write(entries)
        return True

    def entries(self) -> dict[str, dict[str, Any]]:
        """Every trusted file by absolute path, with its digest and when it was trusted."""
        return self._entries()

    def _entries(self) -> dict[str, dict[str, Any]]:
        try:
            raw = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            raise ConfigError(
                f"The trust record {self.path} cannot be read ({type(exc).__name__}).",
                remediation=f"Delete {self.path} and trust your project files again.",
            ) from None
        files = raw.get("files") if isinstance(raw, dict) else None
        if not isinstance(files, dict):
            return {}
        return {str(k): v for k, v in files.items() if isinstance(v, dict)}

    def _write(self, entries: dict[str, dict[str, Any]]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        payload = json.dumps({"format": TRUST_FORMAT, "files": entries}, indent=2, sort_keys=True)
        # Atomic replace, readable by the user only: the record decides what code may run.
        handle, temporary = tempfile.mkstemp(dir=self.path.parent, prefix=".trusted-")
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                out.write(payload + "\n")
            os.chmod(temporary, 0o600)
            os.replace(temporary, self.path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise


def _absolute(path: Path) -> Path:
    return path.expanduser().resolve()
