"""An OpenAI-compatible endpoint's URL: checked before any request, and spelled one way in the answer-store key.

The key holds the endpoint, not how it was written: `http://127.0.0.1:8000/v1`,
`http://localhost:8000/v1/` and `HTTP://LOCALHOST:8000/v1` are one server, and an
entry without `base_url` asks the same API as one spelling out
`https://api.openai.com/v1`. Keys written before this normalisation (the URL as
written, trailing slashes cut) stay readable: :func:`former_spellings` lists
them, and the run loop looks answers up under them too.
"""

from __future__ import annotations

import urllib.parse

from probmed.core.errors import ConfigError
from probmed.core.secrets import redact_urls, url_secrets

DEFAULT_BASE_URL = "https://api.openai.com/v1"  # the openai client's own default: an entry without base_url asks it
_DEFAULT_PORTS = {"http": 80, "https": 443}
# Names of this machine's loopback interface a client may write for a local server (0.0.0.0, as servers
# print their address, reaches it too); keyed as 127.0.0.1.
_LOOPBACK = ("127.0.0.1", "localhost", "::1", "0.0.0.0")


def check_base_url(url: str, where: str) -> None:
    """ConfigError naming `where` unless `url` is an http(s) URL with a host and a valid port (credentials not
    shown): such a URL would fail every request the same way, so it is refused before the first."""
    shown = f"{where} = {url!r}" if not url_secrets(url) else f"{where} (value not shown: it carries credentials)"
    try:
        parts = urllib.parse.urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a port out of range or not a number
    except ValueError as exc:
        raise ConfigError(f"params: {shown} is not a valid URL ({exc})") from None
    if parts.scheme.lower() not in _DEFAULT_PORTS or not parts.hostname or url != url.strip():
        raise ConfigError(f"params: {shown} is not an http:// or https:// URL with a host, e.g. http://127.0.0.1:8000/v1")


def _spell(scheme: str, host: str, port: int | None, path: str, query: str) -> str:
    netloc = f"[{host}]" if ":" in host else host
    if port is not None:
        netloc += f":{port}"
    return urllib.parse.urlunsplit((scheme, netloc, path, query, ""))


def _parts(url: str) -> tuple[str, str, int | None, str, str]:
    """(scheme, host, port, path, query) as keyed: lower-case scheme and host, no default port, a loopback alias as
    127.0.0.1, slashes in the path collapsed and none at its end, credentials masked (a new key is the same endpoint)."""
    parts = urllib.parse.urlsplit(redact_urls(url.strip()))
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    host = "127.0.0.1" if host in _LOOPBACK else host
    port = None if parts.port in (None, _DEFAULT_PORTS.get(scheme)) else parts.port
    path = "/" + "/".join(p for p in parts.path.split("/") if p) if parts.path.strip("/") else ""
    return scheme, host, port, path, parts.query


def endpoint_key(url: str | None) -> str | None:
    """The endpoint as the answer-store key spells it (:func:`_parts`); the default API as None, as an entry
    without base_url has always been keyed."""
    if not url:
        return None
    key = _spell(*_parts(url))
    return None if key == DEFAULT_BASE_URL else key


def former_spellings(url: str | None) -> list[str | None]:
    """How stores written before :func:`endpoint_key` may have keyed this endpoint: the URL as written (trailing
    slashes cut), and each alias of its host (the loopback names, or the default API's host) with and without the
    default port. Answers stored under any of them are this endpoint's."""
    canonical = endpoint_key(url)
    scheme, host, port, path, query = _parts(url or DEFAULT_BASE_URL)
    hosts = _LOOPBACK if host == "127.0.0.1" else (host,)
    ports = (port,) if port is not None else (None, _DEFAULT_PORTS[scheme])
    spellings = [url.rstrip("/") if url else None] + [_spell(scheme, h, p, path, query) for h in hosts for p in ports]
    return [s for s in dict.fromkeys(spellings) if s != canonical and not (s is None and canonical is None)]
