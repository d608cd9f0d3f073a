"""The model backends a `models:` entry in models.yaml can name with `backend:`, and how they are built.

One line per backend: its kind and the class that implements it, imported only
when a model of that kind is built or checked. The kinds `probmed plan` accepts
are this table's keys; the keys each entry may carry are its backend's typed
config (`config_class`, see models.config). A new backend is one module (the
class and its config) plus one line here.
"""

from __future__ import annotations

from typing import Any, Mapping

from probmed.core.errors import ConfigError, did_you_mean
from probmed.inference.models.base import Backend
from probmed.inference.models.hub import pin_problem
from probmed.infra.registry import Registry

BACKENDS = Registry(
    "model backend",
    {
        "random": "probmed.inference.models.baselines:RandomBackend",
        "always-yes": "probmed.inference.models.baselines:AlwaysYesBackend",
        "always-no": "probmed.inference.models.baselines:AlwaysNoBackend",
        "blind": "probmed.inference.models.baselines:BlindBackend",
        "hf": "probmed.inference.models.hf:HFBackend",
        "openai": "probmed.inference.models.openai_api:OpenAIBackend",
    },
)


def check_model_entries(models: Mapping[str, Any]) -> None:
    """Every `models:` entry, enabled or not: a registered backend, and only keys of the right type that it takes."""
    for name, entry in models.items():
        entry = entry or {}
        BACKENDS.load(entry.get("backend"), f"models.{name}.backend").config_class.from_entry(name, entry)


def model_config(models: Mapping[str, Any], name: str) -> dict[str, Any]:
    """The registry entry for `name`, checked: known, enabled, with a known backend."""
    if name not in models:
        raise ConfigError(f"unknown model {name!r}{did_you_mean(name, models)}; "
                          f"params 'models' defines: {', '.join(sorted(models))}")
    cfg = dict(models[name] or {})
    if not cfg.get("enabled", True):
        raise ConfigError(f"model {name!r} is disabled in models.yaml; enable it with models.{name}.enabled=true")
    BACKENDS.check(cfg.get("backend"), f"models.{name}.backend")
    problem = pin_problem(name, cfg)
    if problem:
        raise ConfigError(problem)
    return cfg


def build_backend(models: Mapping[str, Any], name: str, **context: Any) -> Backend:
    """Build the backend registered as `name` in the params `models` section.

    `context` carries run-wide values a backend may need (seed, pricing table).
    """
    cfg = model_config(models, name)
    cls = BACKENDS.load(cfg["backend"])
    return cls(name, cfg, context)
