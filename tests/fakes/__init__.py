"""Scriptable fake HTTP servers (OpenAI, Anthropic, Tavily, Google, Semantic Scholar, web
pages) and a deterministic LLM brain."""

from .brain import HALLUCINATED_ID, BrainReply, ResearchBrain, question_of
from .gemini import GEMINI_MODELS, fake_gemini, gemini_error
from .http import Exchange, FakeHTTPServer, FakeResponse, Handler, RecordedRequest, error_body
from .providers import (
    SHARED_URL,
    default_results,
    fake_anthropic,
    fake_openai,
    fake_tavily,
    slugify,
)
from .search_apis import (
    article_html,
    fake_google,
    fake_pages,
    fake_semantic_scholar,
    google_error,
    google_items,
    html_page,
    long_paragraphs,
    make_pdf,
    paper,
    redirect,
    scholar_papers,
)

__all__ = [
    "GEMINI_MODELS",
    "HALLUCINATED_ID",
    "SHARED_URL",
    "BrainReply",
    "Exchange",
    "FakeHTTPServer",
    "FakeResponse",
    "Handler",
    "RecordedRequest",
    "ResearchBrain",
    "article_html",
    "default_results",
    "error_body",
    "fake_anthropic",
    "fake_gemini",
    "fake_google",
    "fake_openai",
    "fake_pages",
    "fake_semantic_scholar",
    "fake_tavily",
    "gemini_error",
    "google_error",
    "google_items",
    "html_page",
    "long_paragraphs",
    "make_pdf",
    "paper",
    "question_of",
    "redirect",
    "scholar_papers",
    "slugify",
]
