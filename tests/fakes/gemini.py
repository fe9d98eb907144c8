"""A fake of Google's Gemini API that the real ``google-genai`` SDK can talk to."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .brain import ResearchBrain
from .http import FakeHTTPServer, FakeResponse, RecordedRequest

# Models the fake knows; a request for any other model gets a 404 (as from Gemini).
GEMINI_MODELS = ("gemini-2.5-flash", "gemini-2.5-pro", "gemini-test")


def gemini_error(status: int, message: str, code_name: str) -> dict[str, Any]:
    """An error body shaped like Gemini's."""
    return {"error": {"code": status, "message": message, "status": code_name}}


def _text_of(content: Any) -> str:
    """The text parts of a Gemini ``Content`` (or a list of them)."""
    if isinstance(content, list):
        return "\n\n".join(_text_of(item) for item in content)
    if not isinstance(content, dict):
        return ""
    parts = content.get("parts") or []
    return "".join(str(part.get("text", "")) for part in parts if isinstance(part, dict))


def fake_gemini(
    brain: ResearchBrain | None = None,
    *,
    api_key: str | None = None,
    models: Iterable[str] = GEMINI_MODELS,
) -> FakeHTTPServer:
    """A started fake of ``POST /v1/models/{model}:generateContent``; point the SDK at
    ``HttpOptions(base_url=server.base_url)`` (or ``GOOGLE_GEMINI_BASE_URL``)."""
    server = FakeHTTPServer()
    server.brain = brain = brain or ResearchBrain()

    def generate(model: str) -> Any:
        def handle(request: RecordedRequest) -> FakeResponse:
            key = request.headers.get("x-goog-api-key")
            if not key:
                return FakeResponse(
                    403,
                    gemini_error(
                        403, "Method doesn't allow unregistered callers.", "PERMISSION_DENIED"
                    ),
                )
            if api_key is not None and key != api_key:
                return FakeResponse(
                    400,
                    gemini_error(
                        400,
                        "API key not valid. Please pass a valid API key.",
                        "INVALID_ARGUMENT",
                    ),
                )
            body = request.json or {}
            system = _text_of(body.get("systemInstruction"))
            user = _text_of(body.get("contents"))
            reply = brain.reply(system, user)
            return FakeResponse(
                json={
                    "candidates": [
                        {
                            "content": {"parts": [{"text": reply.text}], "role": "model"},
                            "finishReason": "STOP",
                            "index": 0,
                        }
                    ],
                    "usageMetadata": {
                        "promptTokenCount": reply.input_tokens,
                        "candidatesTokenCount": reply.output_tokens,
                        "totalTokenCount": reply.input_tokens + reply.output_tokens,
                    },
                    "modelVersion": model,
                }
            )

        return handle

    for model in models:
        server.route("POST", f"/v1/models/{model}:generateContent", generate(model))
    return server.start()
