"""The environment of a foundry-mcp process under test: pointed at the fakes and at a private
store (``research_env`` in tests/conftest.py, and the end-to-end tests' shared servers)."""

from __future__ import annotations

from pathlib import Path

from foundry_mcp.context.tokens import NO_DOWNLOADS_ENV
from tests.fakes import FakeHTTPServer

# A CA whose key was thrown away: the SDK clients and the page fetcher load it in 2 ms instead
# of the system's bundle (30-110 ms each); no test talks TLS except those that set their own.
UNTRUSTED_CA = str(Path(__file__).resolve().parent / "fakes" / "untrusted_ca.pem")


def research_environment(
    folder: Path, openai: FakeHTTPServer, tavily: FakeHTTPServer
) -> dict[str, str]:
    """Environment variables for a foundry-mcp process whose files are under ``folder``."""
    config = folder / "foundry-mcp.toml"
    # Pages are not fetched: the fake search results carry their text, and a result without
    # it must never make the suite resolve a real host name.
    config.write_text(
        "[research.fetch]\nenabled = false\n\n"
        "[providers.openai]\nmax_retries = 0\n\n[providers.anthropic]\nmax_retries = 0\n\n"
        "[providers.tavily]\nmax_retries = 0\n"
    )
    home = folder / "home"
    home.mkdir()
    return {
        "HOME": str(home),
        "FOUNDRY_MCP_CONFIG": str(config),
        "FOUNDRY_MCP_RESEARCH_DIR": str(folder / "research"),
        "OPENAI_API_KEY": "sk-test-secret-openai",
        "OPENAI_BASE_URL": openai.base_url + "/v1",
        "TAVILY_API_KEY": "tvly-test-secret",
        "TAVILY_BASE_URL": tavily.base_url,
        NO_DOWNLOADS_ENV: "1",
        "SSL_CERT_FILE": UNTRUSTED_CA,
        # A server started with this environment has no network guard: any HTTPS request (the
        # keyless web search's engines, say) goes to a closed port instead of the internet.
        "HTTPS_PROXY": "http://127.0.0.1:9",
        "NO_PROXY": "127.0.0.1,localhost",
    }
