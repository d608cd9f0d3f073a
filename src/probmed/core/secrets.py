r"""Secrets stay in the environment: never in params, never in anything probmed writes.

Two guards. :func:`refuse_secrets` runs when parameters are loaded (params.yaml
and every dotted override), before any work: a key named like a credential
(``api_key``, ``token``, ``secret``, ``password``, ...), a value shaped like
a provider key (``sk-...``, ``hf_...``, ``AKIA...``) or a URL carrying a
credential (``user:password@``, ``?api_key=``, ``?key=``, ``?token=``, ``?sig=``)
stops the command, because params.yaml and its values end up in git,
``dvc.lock`` and MLflow. Names of environment variables (``api_key_env``) are
not secrets and pass.

:class:`Redactor` removes secrets (an API key, a URL's credentials:
:func:`url_secrets`) from text a server sent back, in every encoding a server
may echo them: as is, percent-encoded (either case of hex), JSON
``\\uXXXX``-escaped, base64 (standard and URL-safe, at any alignment), and any
run of at least 8 of their characters in those (a truncated echo, or the key
without its ``sk-...-`` prefix). :func:`redact_urls` masks the credentials of
every URL in a text that probmed prints, stores or logs itself.
"""

from __future__ import annotations

import base64
import re
import urllib.parse
from typing import Any, Iterator, Mapping

from probmed.core.errors import ConfigError

_SECRET_NAME = re.compile(
    r"(api[_-]?key|apikey|secret|passw|authori[sz]ation|bearer|credential|private[_-]?key|access[_-]?key"
    r"|^token$|_token$|^auth$)",
    re.I,
)
# Shapes of real provider keys (OpenAI, Anthropic, Hugging Face, AWS, GitHub, Slack, Google, a bearer header).
_PROVIDER_KEY = re.compile(
    r"(?<![A-Za-z0-9])("
    r"sk-[A-Za-z0-9_\-]{16,}"
    r"|hf_[A-Za-z0-9]{20,}"
    r"|AKIA[0-9A-Z]{16}"
    r"|gh[pousr]_[A-Za-z0-9]{20,}"
    r"|xox[abposr]-[A-Za-z0-9\-]{10,}"
    r"|AIza[0-9A-Za-z_\-]{30,}"
    r"|Bearer\s+[A-Za-z0-9._\-]{16,}"
    r")"
)
# Query parameters that carry a credential (besides credential names: api_key, access_token, ...): Google's
# ?key=, storage signatures (?sig=, X-Amz-Signature), Azure Functions' ?code=, any *-token.
_CREDENTIAL_QUERY = re.compile(r"^(key|sig|signature|code|x-amz-signature|x-amz-credential|.*[-_]token)$", re.I)
# A URL with an authority (scheme://...), up to whitespace, a quote or an angle bracket.
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^\s\"'<>]+")
MIN_PREFIX = 8


def is_secret_name(name: str) -> bool:
    """True for a param name that may hold a credential (``*_env`` names an environment variable: not one)."""
    last = str(name).rsplit(".", 1)[-1]
    if last.endswith("_env") or last.endswith("_env_var"):
        return False
    return bool(_SECRET_NAME.search(last))


def looks_like_key(value: Any) -> bool:
    """True for a string that carries something shaped like a provider API key."""
    return isinstance(value, str) and _PROVIDER_KEY.search(value) is not None


def _split(url: str) -> urllib.parse.SplitResult:
    """The URL's parts; for one urllib refuses (an unclosed ``[``), the authority up to the path, so that its
    credentials are still found and masked."""
    try:
        return urllib.parse.urlsplit(url)
    except ValueError:
        scheme, _, rest = url.partition("://")
        netloc, slash, path = rest.partition("/")
        return urllib.parse.SplitResult(scheme, netloc, slash + path, "", "")


def _is_credential_query(name: str) -> bool:
    return bool(_CREDENTIAL_QUERY.match(name) or _SECRET_NAME.search(name))


def url_secrets(url: str) -> list[str]:
    """The credentials one URL carries: its userinfo and the values of credential-named query parameters.

    ``user:password@`` goes out as HTTP Basic auth, so the password, ``user:password`` and that header's
    base64 are all secrets; a user name without a password is a token (``https://TOKEN@host``).
    """
    parts = _split(url)
    found: list[str] = []
    userinfo, at, _ = parts.netloc.rpartition("@")
    if at and userinfo:
        user, colon, password = userinfo.partition(":")
        if colon and password:
            plain = f"{urllib.parse.unquote(user)}:{urllib.parse.unquote(password)}"
            found += [password, urllib.parse.unquote(password), plain, base64.b64encode(plain.encode()).decode()]
        else:
            found += [user, urllib.parse.unquote(user)]
    for name, value in urllib.parse.parse_qsl(parts.query):
        if value and _is_credential_query(name):
            found += [value, urllib.parse.quote(value, safe="")]
    return list(dict.fromkeys(found))


def carries_url_credential(value: Any) -> bool:
    """True for a string holding a URL with a credential in it (userinfo, ``?api_key=``, ``?sig=``, ...)."""
    return isinstance(value, str) and any(url_secrets(m.group()) for m in _URL.finditer(value))


def _masked_url(url: str, mask: str) -> str:
    parts = _split(url)
    netloc = parts.netloc
    if "@" in netloc:
        netloc = mask + "@" + netloc.rpartition("@")[2]
    query = "&".join(
        f"{name}={mask}" if value and _is_credential_query(urllib.parse.unquote_plus(name)) else piece
        for piece in parts.query.split("&") if piece
        for name, _, value in [piece.partition("=")]
    )
    return urllib.parse.urlunsplit(parts._replace(netloc=netloc, query=query))


def redact_urls(text: Any, mask: str = "***") -> str:
    """`text` with every URL's credentials masked (``http://***@host/v1?key=***``): for the URLs probmed itself
    prints, stores or logs (error lines, MLflow params), whatever the URL came from."""
    return _URL.sub(lambda m: _masked_url(m.group(), mask), "" if text is None else str(text))


def leaves(obj: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """(dotted key, value) for every leaf of a tree of mappings and lists (``a.b[0]``)."""
    if isinstance(obj, Mapping):
        for key, value in obj.items():
            yield from leaves(value, f"{prefix}.{key}" if prefix else str(key))
    elif isinstance(obj, (list, tuple)):
        for i, value in enumerate(obj):
            yield from leaves(value, f"{prefix}[{i}]")
    else:
        yield prefix, obj


def find_secrets(params: Any) -> list[str]:
    """Dotted keys of params that are or hold a secret (a credential name with a value, a key-shaped value, or a
    URL carrying a credential)."""
    found = []
    for key, value in leaves(params):
        named = is_secret_name(key) and value not in (None, "", False)
        if named or looks_like_key(value) or carries_url_credential(value):
            found.append(key)
    return found


def refuse_secrets(params: Any, where: str) -> None:
    """ConfigError naming every offending key (never its value) if params carry a secret."""
    found = find_secrets(params)
    if not found:
        return
    model_keys = sorted({k.split(".")[1] for k in found if k.startswith("models.") and k.count(".") >= 2})
    hint = "; e.g. " + ", ".join(f"models.{m}.api_key_env" for m in model_keys) if model_keys else ""
    raise ConfigError(
        f"{where}: {', '.join(found)} look(s) like a secret (value not shown). Credentials are never read from "
        "params.yaml or overrides (they would reach git, dvc.lock and MLflow): export an API key in the environment "
        f"variable named by the model's api_key_env{hint}; an endpoint URL that carries credentials "
        "(user:password@, ?key=) in the one named by its base_url_env; and remove it from the parameters"
    )


# --- redaction ----------------------------------------------------------------------

_ESCAPE = re.compile(r"%([0-9A-Fa-f]{2})|\\u([0-9A-Fa-f]{4})")


def _decoded(text: str) -> tuple[bytes, list[int], list[int]]:
    r"""The text's UTF-8 bytes with every ``%XX`` and ``\uXXXX`` decoded, and the text span each byte came from.

    Matching the key's bytes against this one view finds it in any mix of the three spellings, so a run of
    the key is found whether a server echoed it as is, percent-encoded (either case of hex) or JSON-escaped.
    """
    data = bytearray()
    starts: list[int] = []
    ends: list[int] = []
    pos = 0
    for m in [*_ESCAPE.finditer(text), None]:
        raw = text[pos: m.start() if m else len(text)]
        if raw.isascii():  # the common case, without a loop over characters
            data += raw.encode("ascii")
            starts.extend(range(pos, pos + len(raw)))
            ends.extend(range(pos + 1, pos + len(raw) + 1))
        else:
            for offset, ch in enumerate(raw):
                n = len(ch.encode("utf-8", "surrogatepass"))
                data += ch.encode("utf-8", "surrogatepass")
                starts += [pos + offset] * n
                ends += [pos + offset + 1] * n
        if m is None:
            break
        piece = bytes.fromhex(m.group(1)) if m.group(1) else chr(int(m.group(2), 16)).encode("utf-8", "surrogatepass")
        data += piece
        starts += [m.start()] * len(piece)
        ends += [m.end()] * len(piece)
        pos = m.end()
    return bytes(data), starts, ends


def _base64_forms(secret: bytes) -> list[str]:
    """The stable part of the key's base64 (standard and URL-safe) at each of the three alignments.

    Any run of the key encoded at any offset shares its stable characters with one of these three
    (bytes group in threes the same way whenever the offsets agree modulo 3).
    """
    out = []
    for shift in range(3):
        encoded = base64.b64encode(b"\0" * shift + secret).decode("ascii").rstrip("=")
        lead = (shift * 8 + 5) // 6  # characters that also carry the padding bytes
        body = encoded[lead:]
        body = body[: len(body) - 1] if len(body) > 1 else body  # the last one may mix in what follows
        for text in {body, body.replace("+", "-").replace("/", "_")}:
            if len(text) >= MIN_PREFIX + 2:
                out.append(text)
    return out


def _grams(seq: Any, size: int) -> set[Any]:
    """Every run of ``size`` consecutive items of ``seq``."""
    return {seq[i: i + size] for i in range(len(seq) - size + 1)}


class Redactor:
    """Masks every run of at least 8 characters of its secrets, in every encoding a server may echo them (module doc).

    Any 8-character run of a key, not only its prefixes: a server that drops the ``sk-test-`` prefix or
    shows the key's middle still echoes the part that grants access. Found by sliding an 8-byte window
    over the decoded text (and a 10-character window over the raw text for base64), so the cost is linear
    in the text whatever the keys' length; overlapping hits merge into one mask. A secret shorter than 8
    characters is masked where it appears whole.
    """

    def __init__(self, *secrets: str | None, mask: str = "***") -> None:
        self.mask = mask
        given = [s for s in secrets if s]
        self._plain = sorted((s for s in given if len(s) < MIN_PREFIX), key=len, reverse=True)
        self._byte_grams: set[bytes] = set()
        self._b64_grams: set[str] = set()
        for secret in (s for s in given if len(s) >= MIN_PREFIX):
            key = secret.encode("utf-8", "surrogatepass")
            self._byte_grams |= _grams(key, MIN_PREFIX)
            for text in _base64_forms(key):
                self._b64_grams |= _grams(text, MIN_PREFIX + 2)

    def _spans(self, text: str) -> list[tuple[int, int]]:
        """Text spans holding a run of the key, merged where they overlap."""
        data, starts, ends = _decoded(text)
        hits = [(starts[i], ends[i + MIN_PREFIX - 1]) for i in range(len(data) - MIN_PREFIX + 1)
                if data[i: i + MIN_PREFIX] in self._byte_grams]
        size = MIN_PREFIX + 2
        hits += [(i, i + size) for i in range(len(text) - size + 1) if text[i: i + size] in self._b64_grams]
        merged: list[tuple[int, int]] = []
        for start, end in sorted(hits):
            if merged and start <= merged[-1][1]:
                merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
            else:
                merged.append((start, end))
        return merged

    def __call__(self, text: Any) -> str:
        text = "" if text is None else str(text)
        if self._byte_grams:
            out, pos = [], 0
            for start, end in self._spans(text):
                out += [text[pos:start], self.mask]
                pos = end
            text = "".join(out) + text[pos:]
        for secret in self._plain:
            text = text.replace(secret, self.mask)
        return text
