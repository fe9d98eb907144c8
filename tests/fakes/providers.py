"""Fake OpenAI, Anthropic and Tavily servers that the real provider SDKs can talk to."""

from __future__ import annotations

import hashlib
import itertools
import re
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from .brain import ResearchBrain
from .http import FakeHTTPServer, FakeResponse, RecordedRequest, error_body

SHARED_URL = "https://encyclopedia.example.org/overview"

Corpus = Mapping[str, list[dict[str, Any]]] | Callable[[str], list[dict[str, Any]]]

_ids = itertools.count(1)


def _next_id(prefix: str) -> str:
    return f"{prefix}{next(_ids):08d}"


def _bearer(request: RecordedRequest) -> str | None:
    value = request.headers.get("authorization", "")
    if not value.lower().startswith("bearer "):
        return None
    return value[7:].strip() or None


def _refuse(message: str, kind: str = "authentication_error") -> FakeResponse:
    return FakeResponse(401, error_body(401, message, kind))


def _text_of(content: Any) -> str:
    """Flatten a message ``content`` (string or list of text blocks) to text."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(block.get("text", "")) for block in content if isinstance(block, dict))
    return ""


def _check_key(found: str | None, expected: str | None) -> str | None:
    """An error message when the key is missing (or differs from ``expected``)."""
    if not found:
        return "missing API key"
    if expected is not None and found != expected:
        return "invalid API key"
    return None


# --------------------------------------------------------------------------- OpenAI


def fake_openai(
    brain: ResearchBrain | None = None, *, api_key: str | None = None
) -> FakeHTTPServer:
    """A started fake of ``POST /v1/chat/completions``; point the SDK at ``base_url + '/v1'``."""
    server = FakeHTTPServer()
    server.brain = brain = brain or ResearchBrain()

    def chat(request: RecordedRequest) -> FakeResponse:
        problem = _check_key(_bearer(request), api_key)
        if problem:
            return FakeResponse(
                401,
                {
                    "error": {
                        "message": problem,
                        "type": "invalid_request_error",
                        "code": "invalid_api_key",
                        "param": None,
                    }
                },
            )
        body = request.json or {}
        if body.get("stream"):
            return FakeResponse(400, error_body(400, "streaming is not supported by the fake"))
        messages = body.get("messages") or []
        system = "\n\n".join(
            _text_of(m.get("content")) for m in messages if m.get("role") in ("system", "developer")
        )
        user = "\n\n".join(_text_of(m.get("content")) for m in messages if m.get("role") == "user")
        reply = brain.reply(system, user)
        return FakeResponse(
            json={
                "id": _next_id("chatcmpl-fake"),
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body.get("model", "gpt-fake"),
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": reply.text, "refusal": None},
                        "logprobs": None,
                        "finish_reason": "stop",
                    }
                ],
                "usage": {
                    "prompt_tokens": reply.input_tokens,
                    "completion_tokens": reply.output_tokens,
                    "total_tokens": reply.input_tokens + reply.output_tokens,
                },
            }
        )

    server.route("POST", "/v1/chat/completions", chat)
    return server.start()


# --------------------------------------------------------------------------- Anthropic


def fake_anthropic(
    brain: ResearchBrain | None = None, *, api_key: str | None = None
) -> FakeHTTPServer:
    """A started fake of ``POST /v1/messages``; point the SDK at ``base_url``."""
    server = FakeHTTPServer()
    server.brain = brain = brain or ResearchBrain()

    def messages(request: RecordedRequest) -> FakeResponse:
        key = request.headers.get("x-api-key") or _bearer(request)
        problem = _check_key(key, api_key)
        if problem:
            return FakeResponse(
                401,
                {"type": "error", "error": {"type": "authentication_error", "message": problem}},
            )
        body = request.json or {}
        if body.get("stream"):
            return FakeResponse(400, error_body(400, "streaming is not supported by the fake"))
        system = _text_of(body.get("system") or "")
        user = "\n\n".join(
            _text_of(m.get("content"))
            for m in body.get("messages") or []
            if m.get("role") == "user"
        )
        reply = brain.reply(system, user)
        return FakeResponse(
            json={
                "id": _next_id("msg_fake"),
                "type": "message",
                "role": "assistant",
                "model": body.get("model", "claude-fake"),
                "content": [{"type": "text", "text": reply.text}],
                "stop_reason": "end_turn",
                "stop_sequence": None,
                "usage": {"input_tokens": reply.input_tokens, "output_tokens": reply.output_tokens},
            }
        )

    server.route("POST", "/v1/messages", messages)
    return server.start()


# --------------------------------------------------------------------------- Tavily


def slugify(text: str) -> str:
    """Lower-case, hyphen-separated, at most 60 characters."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:60].rstrip("-") or "query"


def _paragraphs(topic: str, seed: str) -> str:
    words = [w for w in re.findall(r"[A-Za-z0-9]+", topic) if len(w) > 2] or ["topic"]
    digest = hashlib.sha256(seed.encode()).hexdigest()
    figure = int(digest[:4], 16) % 90 + 10
    year = 2015 + int(digest[4:6], 16) % 10
    key = " ".join(words[:4])
    return "\n\n".join(
        [
            f"{topic.strip().capitalize()} has been studied extensively. Researchers describe "
            f"{key} as an area where careful measurement matters, and early work from {year} "
            "set out the main definitions still used today.",
            f"Recent surveys report that about {figure}% of practitioners consider {words[0]} "
            f"a priority. Case studies show that {key} depends on context, cost and the "
            "quality of available data.",
            f"Critics note open questions: long-term effects of {words[-1]} are less certain, "
            "and several studies call for larger, independent replications.",
        ]
    )


def default_results(query: str, max_results: int = 5) -> list[dict[str, Any]]:
    """Deterministic results for ``query``; the last is the shared encyclopedia page."""
    slug = slugify(query)
    unique = max_results - 1 if max_results >= 2 else max_results
    results: list[dict[str, Any]] = []
    for n in range(1, unique + 1):
        raw = _paragraphs(query, f"{query}|{n}")
        results.append(
            {
                "title": f"{query.strip().capitalize()}: part {n}",
                "url": f"https://docs.example.org/{slug}/{n}",
                "content": raw.split("\n\n")[0][:300],
                "score": round(0.95 - 0.05 * (n - 1), 4),
                "raw_content": raw,
            }
        )
    if max_results >= 2:
        raw = _paragraphs(query, SHARED_URL)
        results.append(
            {
                "title": "Encyclopedia overview",
                "url": SHARED_URL,
                "content": raw.split("\n\n")[0][:300],
                "score": 0.5,
                "raw_content": raw,
            }
        )
    return results


def fake_tavily(
    corpus: Corpus | None = None,
    *,
    api_key: str | None = None,
    failing_urls: Iterable[str] = (),
) -> FakeHTTPServer:
    """A started fake of Tavily's ``POST /search`` and ``POST /extract``.

    ``corpus`` maps a query to its results (unknown queries fall back to
    :func:`default_results`) or is a callable ``query -> results``.
    ``failing_urls`` are reported in ``failed_results`` by ``/extract``.
    """
    server = FakeHTTPServer()
    failing = set(failing_urls)
    seen: dict[str, str] = {}  # url -> raw_content served so far

    def lookup(query: str, max_results: int) -> list[dict[str, Any]]:
        if callable(corpus):
            return corpus(query)
        if corpus is not None and query in corpus:
            return corpus[query]
        return default_results(query, max_results)

    def authorised(request: RecordedRequest) -> FakeResponse | None:
        problem = _check_key(_bearer(request), api_key)
        return _refuse(f"Unauthorized: {problem}.") if problem else None

    def search(request: RecordedRequest) -> FakeResponse:
        started = time.perf_counter()
        refused = authorised(request)
        if refused:
            return refused
        body = request.json or {}
        query = str(body.get("query") or "")
        if not query:
            return FakeResponse(400, error_body(400, "query is required"))
        max_results = int(body.get("max_results") or 5)
        results = []
        for item in lookup(query, max_results)[:max_results]:
            result = {"raw_content": None, "score": 0.5, "content": "", **item}
            if result["raw_content"]:
                seen[result["url"]] = result["raw_content"]
            if not body.get("include_raw_content"):
                result["raw_content"] = None
            results.append(result)
        return FakeResponse(
            json={
                "query": query,
                "follow_up_questions": None,
                "answer": None,
                "images": [],
                "results": results,
                "response_time": round(time.perf_counter() - started + 0.01, 3),
            }
        )

    def extract(request: RecordedRequest) -> FakeResponse:
        refused = authorised(request)
        if refused:
            return refused
        urls = (request.json or {}).get("urls") or []
        urls = [urls] if isinstance(urls, str) else list(urls)
        ok = [
            {"url": u, "raw_content": seen.get(u) or _paragraphs(u.rsplit("/", 1)[-1], u)}
            for u in urls
            if u not in failing
        ]
        failed = [{"url": u, "error": "fake extraction failure"} for u in urls if u in failing]
        return FakeResponse(json={"results": ok, "failed_results": failed, "response_time": 0.01})

    server.route("POST", "/search", search)
    server.route("POST", "/extract", extract)
    return server.start()
