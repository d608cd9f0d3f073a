"""Extension points as tables: a kind names the object that implements it, lazily.

Each extension point (model backends, data sources, report figures) is one
``Registry``: a mapping from the kind a user writes in params.yaml to a
``"module:attribute"`` string. Nothing is imported until a kind is used, so the
table imports none of its implementations and none of them imports the table:
no import cycle, and `probmed plan` can check every kind without loading torch.
Adding an implementation is one module plus one line in its table.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Mapping

from probmed.core.errors import ConfigError


def load_object(target: str) -> Any:
    """The object a ``"package.module:attribute"`` string names."""
    module, _, attribute = target.partition(":")
    if not module or not attribute:
        raise ValueError(f"registry entry {target!r} is not of the form 'package.module:attribute'")
    return getattr(importlib.import_module(module), attribute)


@dataclass(frozen=True)
class Registry:
    """One extension point: ``what`` names it in messages, ``entries`` maps kind -> "module:attribute"."""

    what: str
    entries: Mapping[str, str]

    @property
    def kinds(self) -> tuple[str, ...]:
        return tuple(self.entries)

    def check(self, kind: Any, key: str) -> str:
        """`kind` itself, or a ConfigError naming the params `key` that holds it and the known kinds."""
        if kind not in self.entries:
            where = key if key.endswith(f".{kind}") else f"{key} = {kind!r}"  # a table's key, or a value
            raise ConfigError(f"params: {where} is not a known {self.what}; expected one of {list(self.kinds)}")
        return str(kind)

    def load(self, kind: Any, key: str | None = None) -> Any:
        """The implementation of `kind` (imported now); like :meth:`check`, `kind` may be any params value."""
        return load_object(self.entries[self.check(kind, key or self.what)])
