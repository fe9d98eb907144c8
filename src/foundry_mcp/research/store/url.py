"""A store URL shown safely: its password is a secret, never logged nor put in an error."""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, unquote, urlsplit

HIDDEN = "***"
_QUERY_PASSWORD = re.compile(r"(?i)((?:^|&)password=)[^&]*")
_RAW_QUERY_PASSWORD = re.compile(r"(?i)(?:^|&)password=([^&]*)")


def redact_url(url: str) -> str:
    """``url`` with its password (in the user part or as ``?password=``) replaced by ``***``."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return f"{url.partition(':')[0] or 'postgresql'}://{HIDDEN}"
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, _, hosts = netloc.rpartition("@")
        user, colon, _ = userinfo.partition(":")
        netloc = f"{user}:{HIDDEN}@{hosts}" if colon else f"{user}@{hosts}"
    query = _QUERY_PASSWORD.sub(rf"\g<1>{HIDDEN}", parts.query)
    shown = f"{parts.scheme}://{netloc}{parts.path}"
    return f"{shown}?{query}" if query else shown


def passwords_in(url: str) -> list[str]:
    """The password(s) a URL carries, as written and percent-decoded."""
    found: list[str] = []
    try:
        parts = urlsplit(url)
    except ValueError:
        return found
    userinfo = parts.netloc.rpartition("@")[0]
    if ":" in userinfo:
        found.append(userinfo.partition(":")[2])
    found += [match.group(1) for match in _RAW_QUERY_PASSWORD.finditer(parts.query)]
    found += [value for key, value in parse_qsl(parts.query) if key.lower() == "password"]
    found += [unquote(secret) for secret in found]
    return [secret for secret in dict.fromkeys(found) if secret]


def scrub(text: str, url: str) -> str:
    """``text`` (a driver's message, say) with every password of ``url`` in it hidden."""
    pieces = text.split(url)  # the URL itself is shown redacted, the rest scrubbed
    for secret in sorted(passwords_in(url), key=len, reverse=True):
        pieces = [piece.replace(secret, HIDDEN) for piece in pieces]
    return redact_url(url).join(pieces)
