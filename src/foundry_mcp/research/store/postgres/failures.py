"""A PostgreSQL failure as the error a user reads: what went wrong, the fix for its cause, and
never the password of the store's URL."""

from __future__ import annotations

import psycopg

from foundry_mcp.errors import StoreUnavailableError
from foundry_mcp.research.store.url import redact_url, scrub

_REFUSED_LOGIN = (
    "password authentication failed",
    "no pg_hba.conf entry",
    "authentication failed",
    "password is required",
    "role ",  # role "x" does not exist
)


def unavailable(exc: psycopg.Error, url: str) -> StoreUnavailableError:
    """The error of a connection that failed, with the fix for its cause and no password."""
    reason = scrub(str(exc).strip().rstrip("."), url) or type(exc).__name__
    shown = redact_url(url)
    # A refused login carries no SQLSTATE in psycopg; the server's (English) words say why.
    state = getattr(exc, "sqlstate", None) or ""
    said = reason.lower()
    if state.startswith("28") or any(words in said for words in _REFUSED_LOGIN):
        fix = (
            "Check the user and password in [research] store_url (or FOUNDRY_MCP_STORE_URL), "
            "and that the server's pg_hba.conf lets this host log in as that user."
        )
    elif state == "3D000" or ("database" in said and "does not exist" in said):
        fix = "Create the database (createdb -O <user> <database>, see docs/team-server.md)."
    else:
        fix = (
            f"Start PostgreSQL or correct the host and port of {shown}; `pg_isready -d "
            "<store_url>` tells whether it answers. Then try again."
        )
    return StoreUnavailableError(
        f"The research store {shown} cannot be reached: {reason}.", remediation=fix
    )
