"""Each LLM adapter through its real SDK against a loopback fake, behind the resilience policy.

Every adapter must classify failures alike: 429 (honouring Retry-After) and 5xx are retried,
a hang times out within the configured timeout, a malformed body is a transient failure, and a
rejected key or an overflowing prompt fails at once without a retry.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from foundry_mcp.errors import ProviderError
from foundry_mcp.providers.http.keep_alive import KEEP_ALIVE_SECONDS
from foundry_mcp.providers.llm.anthropic import AnthropicProvider
from foundry_mcp.providers.llm.base import LLMProvider, LLMRequest
from foundry_mcp.providers.llm.gemini import GeminiProvider
from foundry_mcp.providers.llm.openai import OpenAIProvider
from foundry_mcp.providers.resilience import PolicySettings, ProviderPolicy, ResilientLLM
from tests.fakes import (
    FakeHTTPServer,
    FakeResponse,
    ResearchBrain,
    fake_anthropic,
    fake_gemini,
    fake_openai,
    gemini_error,
)
from tests.support import later_pool_clock

pytestmark = pytest.mark.anyio

KEY = "sk-test-secret-provider-key"
PLANNER = "You are the research planner of a deep research system."
QUESTION = "Research question: How do heat pumps perform in cold climates?"


@dataclass(frozen=True)
class Case:
    """How to start one provider's fake and build its adapter."""

    name: str
    model: str
    path: str
    start: Callable[[ResearchBrain], FakeHTTPServer]
    build: Callable[[str, float, str], LLMProvider]  # (base_url, timeout, key)
    overflow: tuple[int, dict[str, Any]]


CASES = [
    Case(
        name="openai",
        model="gpt-4.1-mini",
        path="/v1/chat/completions",
        start=lambda brain: fake_openai(brain, api_key=KEY),
        build=lambda base, timeout, key: OpenAIProvider("openai", key, base + "/v1", timeout),
        overflow=(
            400,
            {
                "error": {
                    "message": "This model's maximum context length is 128000 tokens. However, "
                    "your messages resulted in 210000 tokens. Please reduce the length.",
                    "type": "invalid_request_error",
                    "param": "messages",
                    "code": "context_length_exceeded",
                }
            },
        ),
    ),
    Case(
        name="anthropic",
        model="claude-test",
        path="/v1/messages",
        start=lambda brain: fake_anthropic(brain, api_key=KEY),
        build=lambda base, timeout, key: AnthropicProvider("anthropic", key, base, timeout),
        overflow=(
            400,
            {
                "type": "error",
                "error": {
                    "type": "invalid_request_error",
                    "message": "prompt is too long: 210000 tokens > 200000 maximum",
                },
            },
        ),
    ),
    Case(
        name="gemini",
        model="gemini-2.5-flash",
        path="/v1/models/gemini-2.5-flash:generateContent",
        start=lambda brain: fake_gemini(brain, api_key=KEY),
        build=lambda base, timeout, key: GeminiProvider("gemini", key, base, timeout),
        overflow=(
            400,
            gemini_error(
                400,
                "The input token count (1200000) exceeds the maximum number of tokens allowed "
                "(1048576).",
                "INVALID_ARGUMENT",
            ),
        ),
    ),
]


@pytest.fixture(params=CASES, ids=[case.name for case in CASES])
def case(request: pytest.FixtureRequest) -> Case:
    return request.param  # type: ignore[no-any-return]


@pytest.fixture
def server(case: Case) -> Iterator[FakeHTTPServer]:
    with case.start(ResearchBrain()) as fake:
        yield fake


def _llm(case: Case, server: FakeHTTPServer, *, timeout: float = 5.0, retries: int = 2) -> Any:
    adapter = case.build(server.base_url, timeout, KEY)
    policy = ProviderPolicy(
        case.name,
        PolicySettings(timeout=timeout, max_retries=retries, backoff_base=0.01, backoff_cap=0.05),
    )
    return ResilientLLM(adapter, policy)


def _request(case: Case, **changes: Any) -> LLMRequest:
    return LLMRequest(system=PLANNER, user=QUESTION, model=case.model, json_mode=True, **changes)


async def _fails(llm: Any, request: LLMRequest) -> ProviderError:
    with pytest.raises(ProviderError) as caught:
        await llm.complete(request)
    assert KEY not in str(caught.value.message) + caught.value.remediation
    return caught.value


async def test_success_returns_text_and_usage(case: Case, server: FakeHTTPServer) -> None:
    llm = _llm(case, server)
    response = await llm.complete(_request(case, max_tokens=1000))
    assert '"sub_queries"' in response.text
    assert response.provider == case.name
    assert response.model.startswith(case.model)
    assert response.input_tokens > 0 and response.output_tokens > 0
    assert response.latency_s > 0
    (sent,) = server.requests_to(case.path)
    assert KEY in str(sent.headers)  # the key reached the provider, and only the provider
    await llm.aclose()


async def test_429_is_retried_after_the_retry_after_delay(
    case: Case, server: FakeHTTPServer
) -> None:
    server.fail_next(429, headers={"retry-after": "1"})
    llm = _llm(case, server)
    began = time.perf_counter()
    response = await llm.complete(_request(case))
    elapsed = time.perf_counter() - began
    assert response.text
    first, second = server.requests_to(case.path)
    assert second.timestamp - first.timestamp >= 1.0
    assert elapsed < 3.0
    await llm.aclose()


async def test_500_is_retried(case: Case, server: FakeHTTPServer) -> None:
    server.fail_next(500, times=2)
    llm = _llm(case, server)
    response = await llm.complete(_request(case))
    assert response.text
    assert len(server.requests_to(case.path)) == 3
    await llm.aclose()


async def test_persistent_500_fails_transient_after_the_retries(
    case: Case, server: FakeHTTPServer
) -> None:
    server.fail_next(503, times=10)
    llm = _llm(case, server, retries=2)
    error = await _fails(llm, _request(case))
    assert error.kind == "transient" and error.status_code == 503
    assert len(server.requests_to(case.path)) == 3
    await llm.aclose()


async def test_hang_times_out_within_the_configured_timeout(
    case: Case, server: FakeHTTPServer
) -> None:
    server.latency = 3.0
    llm = _llm(case, server, timeout=0.5, retries=0)
    began = time.perf_counter()
    error = await _fails(llm, _request(case))
    elapsed = time.perf_counter() - began
    server.latency = 0
    assert error.kind == "transient" and error.retryable
    assert "0.5 s" in error.message or "in time" in error.message
    assert elapsed < 1.5
    await llm.aclose()


async def test_malformed_body_is_a_transient_failure(case: Case, server: FakeHTTPServer) -> None:
    server.route(
        "POST",
        case.path,
        lambda _: FakeResponse(body="<html>502 from a proxy", headers={"content-type": "x"}),
    )
    llm = _llm(case, server, retries=1)
    error = await _fails(llm, _request(case))
    assert error.kind == "transient"
    assert "could not be read" in error.message
    assert len(server.requests_to(case.path)) == 2  # retried once, as transient failures are
    await llm.aclose()


async def test_rejected_key_fails_at_once(case: Case, server: FakeHTTPServer) -> None:
    wrong = "sk-wrong-key-0123456789"
    adapter = case.build(server.base_url, 5.0, wrong)
    llm = ResilientLLM(adapter, ProviderPolicy(case.name, PolicySettings(max_retries=3)))
    error = await _fails(llm, _request(case))
    assert error.kind == "auth"
    assert "rejected the API key" in error.message
    assert wrong not in error.message + error.remediation
    assert len(server.requests_to(case.path)) == 1
    await llm.aclose()


async def test_context_overflow_fails_at_once(case: Case, server: FakeHTTPServer) -> None:
    status, body = case.overflow
    server.fail_next(status, json=body)
    llm = _llm(case, server, retries=3)
    error = await _fails(llm, _request(case))
    assert error.kind == "context_overflow"
    assert not error.retryable
    assert len(server.requests_to(case.path)) == 1
    await llm.aclose()


async def test_other_400_is_a_bad_request(case: Case, server: FakeHTTPServer) -> None:
    server.fail_next(400, json={"error": {"message": "temperature: must be <= 2", "code": 400}})
    llm = _llm(case, server, retries=3)
    error = await _fails(llm, _request(case))
    assert error.kind == "bad_request"
    assert len(server.requests_to(case.path)) == 1
    await llm.aclose()


async def test_unknown_model_is_not_found(case: Case, server: FakeHTTPServer) -> None:
    server.fail_next(404, json={"error": {"message": "The model `nope` does not exist"}})
    llm = _llm(case, server, retries=3)
    error = await _fails(llm, _request(case))
    assert error.kind == "not_found"
    assert "model" in error.remediation
    await llm.aclose()


async def test_refused_connection_is_transient(case: Case) -> None:
    with case.start(ResearchBrain()) as fake:
        base = fake.base_url
    adapter = case.build(base, 2.0, KEY)  # the server is gone: nothing listens on that port
    llm = ResilientLLM(adapter, ProviderPolicy(case.name, PolicySettings(max_retries=0)))
    with pytest.raises(ProviderError) as caught:
        await llm.complete(_request(case))
    assert caught.value.kind == "transient"
    assert "base_url" in caught.value.remediation
    await adapter.aclose()


async def test_the_sdk_timeout_is_retried_by_the_policy(case: Case, server: FakeHTTPServer) -> None:
    answers = iter([3.0])  # the first answer comes after the SDK's timeout, the next at once
    server.delay = lambda request, response: next(answers, 0.0)
    llm = _llm(case, server, timeout=0.5, retries=1)
    response = await llm.complete(_request(case))
    assert response.text
    assert len(server.requests_to(case.path)) == 2
    assert llm.policy.retries == 1
    await llm.aclose()


# An account with no credit or quota left: no retry fixes it, a fallback provider may.
EXHAUSTED = {
    "openai": (
        429,
        {
            "error": {
                "message": "You exceeded your current quota, please check your plan and billing "
                "details.",
                "type": "insufficient_quota",
                "code": "insufficient_quota",
            }
        },
    ),
    "anthropic": (
        400,
        {
            "type": "error",
            "error": {
                "type": "invalid_request_error",
                "message": "Your credit balance is too low to access the Anthropic API.",
            },
        },
    ),
}


@pytest.mark.parametrize("name", sorted(EXHAUSTED))
async def test_an_exhausted_quota_is_not_retried(name: str) -> None:
    (case,) = [c for c in CASES if c.name == name]
    status, body = EXHAUSTED[name]
    with case.start(ResearchBrain()) as server:
        server.fail_next(status, json=body)
        llm = _llm(case, server, retries=3)
        error = await _fails(llm, _request(case))
        assert error.kind == "auth" and not error.retryable  # falls back, with a warning
        assert "quota" in error.message
        assert len(server.requests_to(case.path)) == 1
        await llm.aclose()


@pytest.mark.parametrize("name", ["openai", "anthropic"])
async def test_a_response_that_fails_validation_is_transient(name: str) -> None:
    import anthropic
    import httpx2
    import openai

    sdk = {"openai": openai, "anthropic": anthropic}[name]
    (case,) = [c for c in CASES if c.name == name]
    adapter: Any = case.build("http://127.0.0.1:9", 5.0, KEY)
    request = httpx2.Request("POST", "http://127.0.0.1:9/v1")
    invalid = sdk.APIResponseValidationError(
        response=httpx2.Response(200, request=request), body={"unexpected": True}
    )

    async def create(*_: Any, **__: Any) -> Any:
        raise invalid

    # Where each adapter's request goes through its SDK.
    resource = adapter._client if name == "openai" else adapter._client.messages
    setattr(resource, "post" if name == "openai" else "create", create)
    llm = ResilientLLM(adapter, ProviderPolicy(name, PolicySettings(max_retries=0)))
    error = await _fails(llm, _request(case))
    assert (error.kind, error.retryable) == ("transient", True)
    assert "could not be read" in error.message
    await llm.aclose()


# --------------------------------------------------------------------------- Gemini specifics


async def test_gemini_sends_system_prompt_json_mode_and_limits() -> None:
    with fake_gemini(ResearchBrain(), api_key=KEY) as fake:
        llm = GeminiProvider("gemini", KEY, fake.base_url, 5.0)
        await llm.complete(
            LLMRequest(
                system=PLANNER,
                user=QUESTION,
                model="gemini-2.5-flash",
                json_mode=True,
                max_tokens=321,
                temperature=0.1,
            )
        )
        (sent,) = fake.requests_to("/v1/models/gemini-2.5-flash:generateContent")
        await llm.aclose()
    assert sent.headers["x-goog-api-key"] == KEY
    assert sent.json["systemInstruction"]["parts"][0]["text"] == PLANNER
    assert sent.json["contents"][0]["parts"][0]["text"] == QUESTION
    config = sent.json["generationConfig"]
    assert config == {
        "maxOutputTokens": 321,
        "temperature": 0.1,
        "responseMimeType": "application/json",
    }


async def test_gemini_unknown_model_and_retry_delay_from_the_error_details() -> None:
    with fake_gemini(ResearchBrain(), api_key=KEY) as fake:
        llm = GeminiProvider("gemini", KEY, fake.base_url, 5.0)
        with pytest.raises(ProviderError) as caught:
            await llm.complete(LLMRequest(system="s", user="u", model="gemini-nonexistent"))
        assert caught.value.kind == "not_found"
        details = gemini_error(429, "Resource has been exhausted.", "RESOURCE_EXHAUSTED")
        details["error"]["details"] = [
            {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "13s"}
        ]
        fake.fail_next(429, json=details)
        with pytest.raises(ProviderError) as caught:
            await llm.complete(LLMRequest(system="s", user="u", model="gemini-2.5-flash"))
        await llm.aclose()
    assert caught.value.kind == "rate_limit"
    assert caught.value.retry_after == 13.0


async def test_gemini_answer_without_candidates_is_malformed() -> None:
    with fake_gemini(ResearchBrain(), api_key=KEY) as fake:
        fake.route(
            "POST",
            "/v1/models/gemini-2.5-flash:generateContent",
            lambda _: FakeResponse(json={"usageMetadata": {"promptTokenCount": 3}}),
        )
        llm = GeminiProvider("gemini", KEY, fake.base_url, 5.0)
        with pytest.raises(ProviderError) as caught:
            await llm.complete(LLMRequest(system="s", user="u", model="gemini-2.5-flash"))
        await llm.aclose()
    assert caught.value.kind == "transient"


# --------------------------------------------------------------------------- OpenAI specifics


@pytest.mark.parametrize(
    ("base_url", "model", "expected"),
    [
        (None, "gpt-4.1-mini", {"max_completion_tokens": 77, "temperature": 0.2}),
        (None, "o4-mini", {"max_completion_tokens": 77}),
        (None, "gpt-5-mini", {"max_completion_tokens": 77}),
        ("http://localhost:11434/v1", "gpt-5-mini", {"max_tokens": 77, "temperature": 0.2}),
    ],
)
async def test_openai_token_limit_and_temperature_parameters(
    base_url: str | None, model: str, expected: dict[str, Any]
) -> None:
    import httpx2
    import openai

    sent: dict[str, Any] = {}

    def api(request: httpx2.Request) -> httpx2.Response:
        # In place of the network, whichever host the SDK aims at (api.openai.com or local).
        sent.update(json.loads(request.content))
        answer = {"role": "assistant", "content": "fine"}
        return httpx2.Response(
            200,
            json={
                "id": "x",
                "object": "chat.completion",
                "created": 0,
                "model": sent["model"],
                "choices": [{"index": 0, "finish_reason": "stop", "message": answer}],
            },
        )

    http = openai.DefaultAsyncHttpxClient(transport=httpx2.MockTransport(api))
    provider = OpenAIProvider("openai", "sk-unused", base_url, 5.0, http_client=http)
    response = await provider.complete(LLMRequest(system="s", user="u", model=model, max_tokens=77))
    await provider.aclose()
    assert response.text == "fine" and response.input_tokens == 0
    assert sent["messages"] == [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "u"},
    ]
    limits = {
        k: sent[k] for k in ("max_tokens", "max_completion_tokens", "temperature") if k in sent
    }
    assert limits == expected


async def test_the_next_round_of_calls_finds_its_connection_still_open(
    case: Case, server: FakeHTTPServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A research calls its model in rounds seconds apart: ten seconds after a call, the next
    goes over the same connection (the SDKs' default keeps one five); past the keep-alive,
    over a new one. The pool's clock is moved instead of waiting."""
    import importlib.util

    if case.name == "gemini" and importlib.util.find_spec("aiohttp") is not None:
        pytest.skip("the Gemini SDK sends through aiohttp, which keeps connections its own way")
    later = later_pool_clock(monkeypatch)
    llm = _llm(case, server)
    try:
        await llm.complete(_request(case))
        later[0] = 10.0
        await llm.complete(_request(case))
        later[0] = 10.0 + KEEP_ALIVE_SECONDS + 1
        await llm.complete(_request(case))
    finally:
        await llm.aclose()
    first, following, last = (request.client_port for request in server.requests_to(case.path))
    assert following == first
    assert last != first
