"""The research page on the team server: a signed link, asked for with a bearer token, opens the
view of the caller's own research; another principal's research does not exist for them; a
link is refused once tampered with, and a foreign Host is refused as at ``/mcp``."""

from __future__ import annotations

import httpx
import pytest

from tests.e2e.teamserver import TeamServer, bearer, mcp_client
from tests.e2e.test_http_server import ALICE, BOB, UNKNOWN_ID, _finished

pytestmark = pytest.mark.anyio


@pytest.fixture
def team_env(research_env: dict[str, str]) -> dict[str, str]:
    return {**research_env, "FOUNDRY_MCP_TOKENS": f"alice:{ALICE},bob:{BOB}"}


def _link(server: TeamServer, research_id: str, token: str | None) -> httpx.Response:
    return httpx.post(
        f"{server.base_url}/view-links",
        json={"research_id": research_id},
        headers=bearer(token),
        trust_env=False,
        timeout=10,
    )


async def test_a_signed_link_opens_the_view_for_its_owner_only(
    team_env: dict[str, str],
) -> None:
    with TeamServer(team_env) as server:
        async with mcp_client(server.url, ALICE) as alice:
            research_id = await _finished(alice)

        for refused in (_link(server, research_id, None), _link(server, research_id, "nope")):
            assert refused.status_code == 401
            assert refused.headers["www-authenticate"].startswith("Bearer")
            assert "Authorization: Bearer <token>" in refused.json()["error_description"]

        _open_with_a_link(server, research_id)

        # Bob: alice's research is not found, word for word as an id never issued.
        theirs = _link(server, research_id, BOB)
        unknown = _link(server, UNKNOWN_ID, BOB)
        assert theirs.status_code == unknown.status_code == 404
        assert theirs.json()["error_code"] == "RESEARCH_NOT_FOUND"
        assert theirs.text.replace(research_id, UNKNOWN_ID) == unknown.text


def _open_with_a_link(server: TeamServer, research_id: str) -> None:
    """Alice asks for a link and opens it as a browser does (no bearer header); the link
    refused once tampered with, or for another research, or under a foreign Host."""
    issued = _link(server, research_id, ALICE)
    assert issued.status_code == 200, issued.text
    link = issued.json()
    url = link["url"]
    assert url.startswith(f"{server.base_url}/view/{research_id}/") and url.endswith("/")
    assert ALICE not in url and "expires_at" in link
    with httpx.Client(trust_env=False, timeout=10) as browser:  # no bearer header
        page = browser.get(url)
        assert page.status_code == 200, page.text
        assert "connect-src 'self'" in page.headers["content-security-policy"]
        assert research_id in page.text
        data = browser.get(url + "data")
        assert data.status_code == 200 and data.json()["research_id"] == research_id
        assert data.json()["status"] == "completed" and data.json()["report"]

        # A link is its research's, its principal's and this server's.
        _expiry, _name, mac = url.rstrip("/").rsplit("/", 1)[1].split(".")
        tampered = url.replace(mac, ("0" if mac[0] != "0" else "1") + mac[1:])
        for forged in (tampered, url.replace(research_id, UNKNOWN_ID)):
            refused = browser.get(forged + "data")
            assert refused.status_code == 403, forged
            assert "POST /view-links" in refused.text
        rebound = browser.get(url + "data", headers={"Host": f"rebind.example:{server.port}"})
        assert rebound.status_code == 421
