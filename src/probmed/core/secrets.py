r"""Secrets stay in the environment: never in params, never in anything probmed writes.

Two guards. :func:`refuse_secrets` runs when parameters are loaded (params.yaml
and every dotted override), before any work: a key named like a credential
(``api_key``, ``token``, ``secret``, ``password``, ...) or a value shaped like
a provider key (``sk-...``, ``hf_...``, ``AKIA...``) stops the command, because
params.yaml and its values end up in git, ``dvc.lock`` and MLflow. Names of
environment variables (``api_key_env``) are not secrets and pass.

:class:`Redactor` removes a key from text a server sent back, in every encoding
a server may echo it: as is, percent-encoded (either case of hex), JSON
``\\uXXXX``-escaped, base64 (standard and URL-safe, at any alignment), and any
prefix of at least 8 characters of those (a truncated echo).
"""

from __future__ import annotations

import base64
import re
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
    """Dotted keys of params that are or hold a secret (a credential name with a value, or a key-shaped value)."""
    found = []
    for key, value in leaves(params):
        named = is_secret_name(key) and value not in (None, "", False)
        if named or looks_like_key(value):
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
        f"{where}: {', '.join(found)} look(s) like a secret (value not shown). API keys are never read from "
        "params.yaml or overrides (they would reach git, dvc.lock and MLflow): export the key in the environment "
        f"variable named by the model's api_key_env{hint}, and remove it from the parameters"
    )


# --- redaction ----------------------------------------------------------------------


def _char_forms(ch: str) -> str:
    r"""A regex matching one character as is, percent-encoded or \\u-escaped."""
    forms = [re.escape(ch), _percent(ch)]
    if ord(ch) < 0x10000:
        forms.append(rf"\\u(?i:{ord(ch):04x})")
    return "(?:" + "|".join(forms) + ")"


def _percent(ch: str) -> str:
    return "".join(f"%(?i:{b:02x})" for b in ch.encode("utf-8"))


def _prefix_pattern(units: list[str], minimum: int) -> str:
    """Regex for any prefix of ``units`` (a list of sub-patterns) at least ``minimum`` units long."""
    if len(units) < minimum:
        return ""
    tail = ""
    for unit in reversed(units[minimum:]):
        tail = f"(?:{unit}{tail})?"
    return "".join(units[:minimum]) + tail


def _base64_forms(secret: bytes) -> list[str]:
    """The stable part of the key's base64 (standard and URL-safe) at each of the three alignments."""
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


class Redactor:
    """Removes one secret from text in every encoding a server may echo it (see module doc)."""

    def __init__(self, secret: str | None, mask: str = "***") -> None:
        self.mask = mask
        self._pattern: re.Pattern[str] | None = None
        if not secret or len(secret) < MIN_PREFIX:
            self._plain = secret or None
            return
        self._plain = None
        char_units = [_char_forms(ch) for ch in secret]
        alternatives = [_prefix_pattern(char_units, MIN_PREFIX)]
        for text in _base64_forms(secret.encode("utf-8")):
            alternatives.append(_prefix_pattern([re.escape(c) for c in text], MIN_PREFIX + 2))
        self._pattern = re.compile("|".join(a for a in alternatives if a))

    def __call__(self, text: Any) -> str:
        text = "" if text is None else str(text)
        if self._pattern is not None:
            return self._pattern.sub(self.mask, text)
        if self._plain:
            return text.replace(self._plain, self.mask)
        return text
