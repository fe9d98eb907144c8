"""The circuit breaker of a provider: stop calling it while it keeps failing, then probe it.

After ``failures`` consecutive rate-limit or transient failures the circuit opens and every
call is refused at once with ``ProviderError(kind="circuit_open")``; after ``reset_seconds`` one
probe call is let through (half-open), and its outcome closes or re-opens the circuit.
"""

from __future__ import annotations

import logging
from typing import Any, Literal

from foundry_mcp.errors import ProviderError
from foundry_mcp.providers.http.errors import RETRYABLE_KINDS
from foundry_mcp.providers.pacing import Clock

log = logging.getLogger(__name__)

# Kinds that count against a provider's circuit breaker.
BREAKER_KINDS = RETRYABLE_KINDS


CircuitState = Literal["closed", "open", "half_open"]


class CircuitBreaker:
    """Stops calling a provider that keeps failing, and probes it again after a pause."""

    def __init__(self, name: str, failures: int, reset_seconds: float, clock: Clock) -> None:
        self.name = name
        self.threshold = failures
        self.reset_seconds = reset_seconds
        self._clock = clock
        self.state: CircuitState = "closed"
        self.consecutive_failures = 0
        self.opened_at = 0.0
        self.last_error: str | None = None
        self._probing = False

    def seconds_until_probe(self) -> float:
        """How long the circuit stays open (0 when a call may go through now)."""
        if self.state != "open":
            return 0.0
        return max(0.0, self.opened_at + self.reset_seconds - self._clock())

    def reject_if_open(self) -> None:
        """Raise ``circuit_open`` when no call may go through now (reserves nothing)."""
        if (self.state == "open" and self.seconds_until_probe() > 0) or (
            self.state == "half_open" and self._probing
        ):
            raise self._open_error()

    def begin(self) -> bool:
        """Admit one call; True when it is the half-open probe. Raises ``circuit_open``."""
        if self.state == "open" and self.seconds_until_probe() <= 0:
            self.state = "half_open"
            self._probing = False
        if self.state == "closed":
            return False
        if self.state == "half_open" and not self._probing:
            self._probing = True
            log.info("circuit of %s is half-open: sending one probe call", self.name)
            return True
        raise self._open_error()

    def succeeded(self, probe: bool) -> None:
        """The provider answered (even with an error that is not its health's fault)."""
        if probe or self.state != "closed":
            log.info("circuit of %s is closed again", self.name)
        self.state = "closed"
        self.consecutive_failures = 0
        self._probing = False

    def failed(self, probe: bool, error: ProviderError) -> None:
        """A rate-limit or transient failure."""
        self.last_error = error.message
        self._probing = False
        if probe or self.state == "half_open":
            self._open()
            return
        self.consecutive_failures += 1
        if self.state == "closed" and self.consecutive_failures >= self.threshold:
            self._open()

    def abandoned(self, probe: bool) -> None:
        """The call was cancelled before it finished: free the probe slot, change nothing."""
        if probe:
            self._probing = False

    def _open(self) -> None:
        self.state = "open"
        self.opened_at = self._clock()
        log.warning(
            "circuit of %s opened after %d consecutive failures (last: %s)",
            self.name,
            self.consecutive_failures,
            self.last_error,
        )

    def _open_error(self) -> ProviderError:
        wait = self.seconds_until_probe()
        last = f" Last error: {self.last_error}" if self.last_error else ""
        return ProviderError(
            f"{self.name} is failing repeatedly, so calls to it are paused for "
            f"{max(wait, 0.1):.0f} s (circuit open).{last}",
            provider=self.name,
            retryable=True,
            kind="circuit_open",
            retry_after=wait,
            remediation=(
                f"Wait for {self.name} to recover (see its status page), or configure a fallback "
                "provider; then resume the research."
            ),
        )

    def snapshot(self) -> dict[str, Any]:
        return {
            "state": self.state,
            "consecutive_failures": self.consecutive_failures,
            "seconds_until_probe": round(self.seconds_until_probe(), 1),
            "last_error": self.last_error,
        }
