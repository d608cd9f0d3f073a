"""Typed model-backend configs: one dataclass per backend kind, built from a `models:` entry.

A config rejects keys its backend does not have (`models.tiny.max_new_tokenz`
is an error naming that key, not a silently ignored typo) and says, field by
field, whether the value can change an answer (`answer_field`) or only how the
backend runs (`run_field`: concurrency, retries, device). The answer-store key
of a backend is derived from its config: the kind plus every answer field, so a
new parameter joins the key by being declared, never by editing a list. Where an
answer field names a local directory (model weights, a LoRA adapter), its
content hash goes into the key (`hash_as`), so retraining a model in place
re-asks its questions.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import operator
import types
import typing
from pathlib import Path
from typing import Annotated, Any, ClassVar, Mapping, TypeVar

from probmed.core.errors import ConfigError
from probmed.core.params_schema import NonNegativeFloat, check_value

C = TypeVar("C", bound="BackendConfig")
# Files that define what a local checkpoint answers: weights, configs, tokenizer, chat template, and the
# modelling code of a trust_remote_code checkpoint.
_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".json", ".jinja", ".model", ".txt", ".py")
# Kinds respelt after answers were stored under the old spelling keep their old key.
_KEY_KIND = {"always-yes": "always_yes", "always-no": "always_no"}


def answer_field(default: Any = dataclasses.MISSING, *, hash_as: str | None = None, when_set: bool = False) -> Any:
    """A parameter that can change an answer: part of the answer-store key.

    `hash_as`: a local directory here is keyed by its content hash under that name.
    `when_set`: keyed only when it differs from its default (a field that joined the
    key after answers were stored under its default keeps those answers valid).
    """
    return dataclasses.field(default=default, metadata={"answer": True, "hash_as": hash_as, "when_set": when_set})


def run_field(default: Any = dataclasses.MISSING) -> Any:
    """A parameter that steers how a backend runs (speed, retries, device) but never what it answers."""
    return dataclasses.field(default=default, metadata={"answer": False})


def directory_fingerprint(path: Path) -> str:
    """Content hash of a model or adapter directory (weights, configs, tokenizer, remote code)."""
    h = hashlib.sha256()
    for f in sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in _WEIGHT_SUFFIXES):
        h.update(str(f.relative_to(path)).encode())
        size = f.stat().st_size
        h.update(str(size).encode())
        with open(f, "rb") as fh:
            if size <= 512 * 1024 * 1024:
                for chunk in iter(lambda: fh.read(1 << 20), b""):
                    h.update(chunk)
            else:  # multi-GB shards: size plus head and tail
                h.update(fh.read(1 << 20))
                fh.seek(-(1 << 20), 2)
                h.update(fh.read(1 << 20))
    return h.hexdigest()


def _without_checks(hint: Any) -> Any:
    """A field's type without its range (``PositiveInt | None`` -> ``int | None``): what `_coerce` converts to."""
    if typing.get_origin(hint) is Annotated:
        return typing.get_args(hint)[0]
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        return functools.reduce(operator.or_, (_without_checks(option) for option in typing.get_args(hint)))
    return hint


def _coerce(value: Any, hint: Any, key: str) -> Any:
    """`value` as the field's declared type (int, float, bool, str, a mapping, optional of those, Any)."""
    options = typing.get_args(hint) if typing.get_origin(hint) in (typing.Union, types.UnionType) else (hint,)
    if value is None:
        if type(None) in options or Any in options:
            return None
        raise ConfigError(f"params: {key} is required (got null)")
    for kind in options:
        plain = typing.get_origin(kind) or kind  # dict[str, Any] -> dict
        if kind is Any or (kind is not bool and isinstance(value, plain) and not isinstance(value, bool)):
            return value
        if kind is bool and isinstance(value, bool):
            return value
    for kind in options:
        try:
            if kind is float and isinstance(value, int) and not isinstance(value, bool):
                return float(value)
            if kind is int and isinstance(value, str):
                return int(value)
            if kind is str and isinstance(value, (int, float)) and not isinstance(value, bool):
                return str(value)
        except ValueError:
            pass
    names = " or ".join("null" if k is type(None) else getattr(k, "__name__", str(k)) for k in options)
    raise ConfigError(f"params: {key} = {value!r}, expected {names}")


@dataclasses.dataclass(frozen=True, kw_only=True)
class BackendConfig:
    """Keys every `models:` entry may carry, whatever its backend."""

    enabled: bool = run_field(True)
    description: str | None = run_field(None)
    hardware: str | None = run_field(None)  # what one replica needs, for people (probmed models)
    cpus: NonNegativeFloat = run_field(1.0)  # what one replica takes on a Ray cluster (engine.kind: ray): CPU cores
    gpus: NonNegativeFloat = run_field(0.0)  # and GPUs (a fraction shares one: 0.5 fits two replicas on a GPU)

    # Values fixed in code that change answers (an embedding model's name): part of the key too.
    CODE_KEY: ClassVar[Mapping[str, Any]] = {}

    @classmethod
    def from_entry(cls: type[C], name: str, entry: Mapping[str, Any]) -> C:
        """The typed config of `models.<name>`; ConfigError names an unknown, missing, mistyped or out-of-range key.

        A numeric field states its range in its type, as the params schema does (``timeout_s: PositiveFloat``),
        and the schema's own check applies it."""
        hints = typing.get_type_hints(cls, include_extras=True)
        known = {f.name: f for f in dataclasses.fields(cls)}
        values = {}
        for key, value in entry.items():
            if key == "backend":
                continue
            if key not in known:
                raise ConfigError(
                    f"params: models.{name}.{key} is not a parameter of backend {entry.get('backend')!r}; "
                    f"it takes: {', '.join(['backend', *known])}"
                )
            values[key] = _coerce(value, _without_checks(hints[key]), f"models.{name}.{key}")
            check_value(values[key], hints[key], f"models.{name}.{key}")
        for f in known.values():
            if f.name not in values and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise ConfigError(f"params: models.{name}.{f.name} is required")
        return cls(**values)

    def replace(self: C, **changes: Any) -> C:
        """A copy with run-time values filled in (a seed from the run, an endpoint from the environment)."""
        return dataclasses.replace(self, **changes)

    def answer_key(self, kind: str) -> dict[str, Any]:
        """The config's part of every answer-store key: kind, answer fields, content hashes of local directories."""
        key: dict[str, Any] = {"backend": _KEY_KIND.get(kind, kind), **self.CODE_KEY}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if not f.metadata.get("answer") or (f.metadata.get("when_set") and value == f.default):
                continue
            key[f.name] = value
            hash_as = f.metadata.get("hash_as")
            if hash_as and value is not None and Path(str(value)).is_dir():
                key[hash_as] = directory_fingerprint(Path(str(value)))
        return key
