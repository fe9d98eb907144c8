"""A background loop that cannot reach the store says so once: a warning without a traceback
for a store out of reach (a database restarting), the traceback for anything else."""

from __future__ import annotations

import logging

import pytest

from foundry_mcp.errors import StoreUnavailableError
from foundry_mcp.research.service.ownership import store_failed

log = logging.getLogger("tests.store_failure")


def test_a_store_out_of_reach_is_a_warning_without_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger=log.name)
    outage = StoreUnavailableError(
        "The research store postgresql://foundry:***@db/foundry cannot be reached: the "
        "database system is shutting down.",
        remediation="Start PostgreSQL.",
    )

    store_failed(log, "heartbeat", outage)

    [record] = caplog.records
    assert record.levelno == logging.WARNING
    assert record.exc_info is None
    assert record.getMessage() == f"heartbeat could not reach the store; retrying: {outage.message}"


def test_any_other_failure_keeps_its_traceback(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger=log.name)
    try:
        raise KeyError("owner_token")
    except KeyError as exc:
        store_failed(log, "takeover scan", exc)

    [record] = caplog.records
    assert record.levelno == logging.ERROR
    assert record.exc_info is not None and record.exc_info[0] is KeyError
    assert record.getMessage() == "takeover scan could not reach the store; retrying"
