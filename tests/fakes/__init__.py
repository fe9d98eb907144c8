"""Scriptable fake HTTP servers (OpenAI, Anthropic, Tavily) and a deterministic LLM brain."""

from .brain import HALLUCINATED_ID, BrainReply, ResearchBrain, question_of
from .http import FakeHTTPServer, FakeResponse, Handler, RecordedRequest, error_body
from .providers import (
    SHARED_URL,
    default_results,
    fake_anthropic,
    fake_openai,
    fake_tavily,
    slugify,
)

__all__ = [
    "HALLUCINATED_ID",
    "SHARED_URL",
    "BrainReply",
    "FakeHTTPServer",
    "FakeResponse",
    "Handler",
    "RecordedRequest",
    "ResearchBrain",
    "default_results",
    "error_body",
    "fake_anthropic",
    "fake_openai",
    "fake_tavily",
    "question_of",
    "slugify",
]
