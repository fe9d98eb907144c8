"""The MCP client's asker: asking the user of a tool call something, through the client (form
elicitation), for a client that said it can (one end of
:mod:`foundry_mcp.research.service.asking`; the terminal's is :mod:`foundry_mcp.cli.asking`).

The question travels on the stream of the call being answered (``related_request_id``), so it
works over stdio and streamable HTTP, stateless or not; it holds up only that call. A client
that answers with an error, goes away or stays silent past the timeout gives a reply like any
other (``cancel`` or ``timeout``): the research goes on without the answer.
"""

from __future__ import annotations

import logging
from typing import Any

import anyio
from mcp.server.mcpserver import Context
from mcp.types import ClientCapabilities, ElicitationCapability

from foundry_mcp.research.service.asking.asker import Form, Reply

log = logging.getLogger(__name__)


class ClientAsker:
    """Asks through one MCP request's client."""

    def __init__(self, ctx: Context[Any, Any]) -> None:
        self._session = ctx.request_context.session
        self._request_id = ctx.request_context.request_id

    async def ask(self, form: Form, timeout: float) -> Reply:
        """Ask ``form`` by elicitation; wait at most ``timeout`` seconds for the answer."""
        with anyio.move_on_after(timeout):
            try:
                result = await self._session.elicit_form(
                    form.message, form.json_schema(), related_request_id=self._request_id
                )
            except anyio.get_cancelled_exc_class():
                raise
            except Exception as exc:  # an error answer, or a client gone: nobody answered
                log.info("the client did not answer a question: %s", type(exc).__name__)
                return Reply(action="cancel")
            return Reply(action=result.action, content=dict(result.content or {}))
        return Reply(action="timeout")


def asker_for(ctx: Context[Any, Any]) -> ClientAsker | None:
    """An asker when the client declared the elicitation capability; None otherwise."""
    try:
        session = ctx.request_context.session
        can = session.check_client_capability(
            ClientCapabilities(elicitation=ElicitationCapability())
        )
    except (AttributeError, ValueError, LookupError):  # no session behind this call
        return None
    return ClientAsker(ctx) if can else None
