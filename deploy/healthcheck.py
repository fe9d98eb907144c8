#!/usr/bin/env python3
"""The container's health check: ``GET /health`` of the foundry-mcp server in this container.

Exits 0 when its research service is ready, 1 otherwise (starting, unreachable). A server whose
research service cannot start (PostgreSQL not reachable yet after a reboot, say) exits by
itself, and the restart policy starts it again. Only the standard library: the image has no
curl.
"""

from __future__ import annotations

import json
import sys
import urllib.error
import urllib.request

URL = "http://127.0.0.1:8765/health"  # the port of the image's command line
TIMEOUT_SECONDS = 4.0


def readiness(url: str = URL, timeout: float = TIMEOUT_SECONDS) -> str:
    """``research_service`` of the answer: ready, starting or failed; else why there is none."""
    direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never HTTP_PROXY
    try:
        with direct.open(url, timeout=timeout) as response:
            body = response.read()
    except urllib.error.HTTPError as exc:  # 503 when the service failed: its body says so
        body = exc.read()
    except OSError as exc:
        return f"unreachable ({exc})"
    try:
        return str(json.loads(body)["research_service"])
    except (ValueError, KeyError, TypeError):
        return "unreadable answer"


def main(url: str = URL) -> int:
    state = readiness(url)
    if state == "ready":
        return 0
    print(f"foundry-mcp research service: {state}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
