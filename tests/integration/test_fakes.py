"""The real provider SDKs work against the fake servers in tests/fakes."""

from __future__ import annotations

import json
import time
from typing import Any

import anyio
import httpx
import openai
import pytest
import tavily
from tavily.errors import InvalidAPIKeyError

from tests.fakes import (
    HALLUCINATED_ID,
    SHARED_URL,
    FakeHTTPServer,
    FakeResponse,
    ResearchBrain,
    fake_tavily,
)

pytestmark = pytest.mark.anyio

PLANNER = "You are the research planner of a deep research system."
WRITER = "You are the research writer. Write a cited markdown report."
QUESTION = "Research question: How do heat pumps perform in cold climates?"


def _openai(server: FakeHTTPServer) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(api_key="test", base_url=server.base_url + "/v1", max_retries=0)


async def _plan(client: openai.AsyncOpenAI) -> Any:
    return await client.chat.completions.create(
        model="gpt-test",
        messages=[{"role": "system", "content": PLANNER}, {"role": "user", "content": QUESTION}],
    )


async def test_openai_sdk_gets_planner_json(openai_server: FakeHTTPServer) -> None:
    async with _openai(openai_server) as client:
        completion = await _plan(client)
    plan = json.loads(completion.choices[0].message.content or "")
    assert plan["research_brief"]
    assert len(plan["sub_queries"]) == 3
    assert all(len(sq["query"]) >= 10 for sq in plan["sub_queries"])
    assert "heat pumps" in plan["sub_queries"][0]["query"]
    assert completion.usage is not None and completion.usage.prompt_tokens > 0
    assert completion.model == "gpt-test"
    (request,) = openai_server.requests_to("/v1/chat/completions", "POST")
    assert request.headers["authorization"] == "Bearer test"
    assert request.json["messages"][0]["content"] == PLANNER
    assert openai_server.brain.calls["planner"] == 1


async def test_anthropic_sdk_gets_writer_report(anthropic_server: FakeHTTPServer) -> None:
    # Imported here, not at collection: the SDK takes ~2 s to import, and every pytest-xdist
    # worker collects this module, while few tests run the SDK in the test process.
    import anthropic

    user = f"{QUESTION}\n\nFinding 1: COP drops.\nSources: src-0123abcd, src-89abcdef\n"
    async with anthropic.AsyncAnthropic(
        api_key="test", base_url=anthropic_server.base_url, max_retries=0
    ) as client:
        message = await client.messages.create(
            model="claude-test",
            max_tokens=1024,
            system=WRITER,
            messages=[{"role": "user", "content": user}],
        )
    text = message.content[0].text  # type: ignore[union-attr]
    assert text.startswith("# ")
    for heading in ("## Executive Summary", "## Key Findings", "## Limitations", "## Conclusion"):
        assert heading in text
    assert "[src-0123abcd]" in text and "[src-89abcdef]" in text
    assert HALLUCINATED_ID not in text and "## Sources" not in text
    assert message.stop_reason == "end_turn" and message.usage.output_tokens > 0
    (request,) = anthropic_server.requests_to("/v1/messages")
    assert request.json["system"] == WRITER
    assert anthropic_server.brain.calls["writer"] == 1


async def test_tavily_sdk_search_and_extract(tavily_server: FakeHTTPServer) -> None:
    client = tavily.AsyncTavilyClient(api_key="tvly-test", api_base_url=tavily_server.base_url)
    try:
        found = await client.search("heat pumps", max_results=3, include_raw_content=True)
        other = await client.search("solar panels", max_results=2)
        extracted = await client.extract([found["results"][0]["url"]])
    finally:
        await client.close()
    results = found["results"]
    assert len(results) == 3
    assert all(r["raw_content"] and "heat" in r["raw_content"].lower() for r in results)
    assert results[0]["url"] == "https://docs.example.org/heat-pumps/1"
    assert SHARED_URL in {r["url"] for r in results} & {r["url"] for r in other["results"]}
    assert all(r["raw_content"] is None for r in other["results"])
    assert extracted["results"][0]["raw_content"] == results[0]["raw_content"]
    (first, *_) = tavily_server.requests_to("/search")
    assert first.json["max_results"] == 3 and first.json["query"] == "heat pumps"
    assert first.headers["authorization"] == "Bearer tvly-test"


async def test_tavily_custom_corpus_and_failed_extract() -> None:
    hit = {"title": "T", "url": "https://x.example/a", "content": "c", "raw_content": "r"}
    with fake_tavily({"q": [hit]}, failing_urls=["https://x.example/bad"]) as server:
        client = tavily.AsyncTavilyClient(api_key="tvly-test", api_base_url=server.base_url)
        try:
            found = await client.search("q", max_results=5)
            extracted = await client.extract(["https://x.example/a", "https://x.example/bad"])
        finally:
            await client.close()
    assert [r["url"] for r in found["results"]] == ["https://x.example/a"]
    assert [r["url"] for r in extracted["failed_results"]] == ["https://x.example/bad"]


async def test_fail_next_429_raises_rate_limit(openai_server: FakeHTTPServer) -> None:
    openai_server.fail_next(429, headers={"retry-after": "1"})
    async with _openai(openai_server) as client:
        with pytest.raises(openai.RateLimitError) as caught:
            await _plan(client)
        assert caught.value.response.headers["retry-after"] == "1"
        assert (await _plan(client)).choices[0].finish_reason == "stop"
    assert len(openai_server.requests) == 2


async def test_latency_is_concurrent(openai_server: FakeHTTPServer) -> None:
    openai_server.latency = 1.0
    async with _openai(openai_server) as client:
        started = time.perf_counter()
        async with anyio.create_task_group() as tg:
            for _ in range(3):
                tg.start_soon(_plan, client)
        elapsed = time.perf_counter() - started
    assert elapsed >= 1.0
    # All three were taken in while the first was still waiting out its latency: the server
    # answers concurrently (a serial one would receive them a second apart).
    received = [request.timestamp for request in openai_server.requests]
    assert len(received) == 3 and max(received) - min(received) < 0.9
    assert openai_server.brain.calls["planner"] == 3


async def test_keep_alive_reuses_connection(openai_server: FakeHTTPServer) -> None:
    async with _openai(openai_server) as client:
        for _ in range(3):
            await _plan(client)
    assert len({r.client_port for r in openai_server.requests}) == 1


async def test_missing_key_is_refused(
    openai_server: FakeHTTPServer,
    anthropic_server: FakeHTTPServer,
    tavily_server: FakeHTTPServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with httpx.AsyncClient() as http:
        for url in (
            openai_server.base_url + "/v1/chat/completions",
            anthropic_server.base_url + "/v1/messages",
            tavily_server.base_url + "/search",
        ):
            response = await http.post(url, json={"query": "x", "messages": []})
            assert response.status_code == 401, url
        unknown = await http.get(openai_server.base_url + "/nowhere")
        assert unknown.status_code == 404 and "error" in unknown.json()
    monkeypatch.delenv("TAVILY_API_KEY", raising=False)
    client = tavily.AsyncTavilyClient(api_base_url=tavily_server.base_url)
    try:
        with pytest.raises(InvalidAPIKeyError):
            await client.search("heat pumps")
    finally:
        await client.close()


async def test_custom_route_and_server_lifecycle() -> None:
    server = FakeHTTPServer()
    server.route("GET", "/ping", lambda r: FakeResponse(json={"pong": r.query.get("n")}))
    async with httpx.AsyncClient() as http:
        with server:
            response = await http.get(server.base_url + "/ping", params={"n": "1"})
            started = time.perf_counter()
        assert time.perf_counter() - started < 1  # an open keep-alive connection must not block
    assert response.json() == {"pong": ["1"]}
    with pytest.raises(RuntimeError):
        _ = server.base_url


async def test_a_request_cut_off_mid_body_is_not_answered_or_recorded() -> None:
    server = FakeHTTPServer()
    server.route("POST", "/echo", lambda r: FakeResponse(json=r.json))
    with server:
        port = int(server.base_url.rsplit(":", 1)[1])
        stream = await anyio.connect_tcp("127.0.0.1", port)
        head = b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n"
        await stream.send(head + b'{"cut": ')
        await stream.aclose()  # a cancelled client hangs up mid-body
        async with httpx.AsyncClient() as http:
            whole = await http.post(server.base_url + "/echo", json={"whole": 1})
    assert whole.json() == {"whole": 1}
    assert [r.json for r in server.requests] == [{"whole": 1}]


async def test_a_delay_counts_the_time_the_fake_took_to_answer() -> None:
    # Like a real API's latency, a simulated one does not grow with the fake's own work.
    server = FakeHTTPServer()

    def slow_to_answer(request: Any) -> FakeResponse:
        time.sleep(0.5)
        return FakeResponse(json={"ok": True})

    server.route("GET", "/slow", slow_to_answer)
    server.delay = lambda request, response: 0.6
    with server:
        async with httpx.AsyncClient() as http:
            await http.get(server.base_url + "/slow")
        # Recorded by the handler's thread once the answer is written: the client may read
        # the answer first.
        with anyio.fail_after(5):
            while not server.exchanges:
                await anyio.sleep(0.01)
    (exchange,) = server.exchanges
    assert 0.55 < exchange.sent - exchange.request.timestamp < 0.95


# ------------------------------------------------------------------ the brain on its own


def _analyst_prompt(iteration: int, maximum: int) -> str:
    blocks = "".join(f'<source id="src-0000000{i}">text {i}</source>\n' for i in range(1, 4))
    return f"{QUESTION}\nIteration: {iteration}/{maximum}\n{blocks}"


def test_brain_analyzer_findings_and_gaps() -> None:
    brain = ResearchBrain()
    out = json.loads(brain.respond("You are the research analyst.", _analyst_prompt(1, 3)))
    ids = {"src-00000001", "src-00000002", "src-00000003"}
    assert 2 <= len(out["findings"]) <= 3
    assert out["findings"][0]["confidence"] == "high"
    assert all(
        1 <= len(f["source_ids"]) <= 2 and set(f["source_ids"]) <= ids for f in out["findings"]
    )
    assert out["quality_updates"][0] == {"source_id": "src-00000001", "quality": "high"}
    assert len(out["gaps"]) == 1
    later = json.loads(brain.respond("research analyst", _analyst_prompt(2, 3)))
    last = json.loads(brain.respond("research analyst", _analyst_prompt(3, 3)))
    assert later["gaps"] == [] and last["gaps"] == []
    assert brain.calls["analyzer"] == 3


def test_brain_refiner_writer_options_and_fences() -> None:
    brain = ResearchBrain(
        hallucinate_citation=True,
        include_sources_section=True,
        json_in_fences=True,
        broken_json_for={"planner"},
    )
    refined = brain.respond("You are the Research Refiner.", "Gaps: gap-0a1b2c3d and gap-ffffffff")
    payload = json.loads(refined.split("```json", 1)[1].split("```", 1)[0])
    assert [g["gap_id"] for g in payload["gap_analysis"]] == ["gap-0a1b2c3d", "gap-ffffffff"]
    assert payload["iteration_recommendation"]["should_iterate"] is True
    report = brain.respond(WRITER, "Sources: src-0123abcd")
    assert f"[{HALLUCINATED_ID}]" in report and "## Sources" in report
    with pytest.raises(ValueError):
        json.loads(brain.respond(PLANNER, QUESTION))
    assert brain.respond("You are helpful.", "hi").endswith(".")
    reply = brain.reply(PLANNER, QUESTION)
    assert reply.input_tokens == len(PLANNER + QUESTION) // 4
