"""The model registry as a table people read: what each entry is, whether it can run, what it needs.

`probmed models` lists params `models:`; `probmed models --profile paper` lists
a profile of params `model_profiles:` (the paper's Table 3): for each model how
it runs here (`hf`: the local Hugging Face backend; `api`: an OpenAI-compatible
endpoint, which is also how a vLLM server is used; `unsupported`, with why),
the registry entry that runs it and that entry's state.
"""

from __future__ import annotations

from typing import Any, Mapping

from probmed.core.errors import ConfigError
from probmed.inference.models.hub import pin_problem

RUNS = ("hf", "api", "unsupported")


def entry_status(name: str, entry: Mapping[str, Any]) -> str:
    """"ready", "disabled" or what is missing (a pin)."""
    if not entry.get("enabled", True):
        return "disabled (enable explicitly)"
    problem = pin_problem(name, entry)
    return "not pinned" if problem and "not pinned" in problem else (problem or "ready")


def registry_rows(models: Mapping[str, Any]) -> list[dict[str, str]]:
    rows = []
    for name, entry in models.items():
        entry = dict(entry or {})
        revision = str(entry.get("revision") or "")
        rows.append({
            "name": name,
            "backend": str(entry.get("backend", "")),
            "model_id": str(entry.get("model_id") or ""),
            "revision": revision[:12] if revision else "",
            "status": entry_status(name, entry),
            "hardware": str(entry.get("hardware") or ""),
        })
    return rows


def check_profile(models: Mapping[str, Any], profiles: Mapping[str, Any], profile: str) -> dict[str, Any]:
    """The profile `profile`, checked: every entry says how it runs, names a known model or says why not."""
    if profile not in (profiles or {}):
        raise ConfigError(f"params: model_profiles.{profile} not found; defined: {', '.join(sorted(profiles or {}))}")
    items = dict(profiles[profile] or {})
    for label, spec in items.items():
        key = f"model_profiles.{profile}.{label}"
        spec = dict(spec or {})
        if spec.get("runs") not in RUNS:
            raise ConfigError(f"params: {key}.runs = {spec.get('runs')!r}, expected one of {list(RUNS)}")
        model = spec.get("model")
        if model is not None and model not in models:
            raise ConfigError(f"params: {key}.model = {model!r} is not in models")
        if model is None and not spec.get("why"):
            raise ConfigError(f"params: {key} names no model, so it must say why (key 'why')")
    return items


def profile_rows(models: Mapping[str, Any], profiles: Mapping[str, Any], profile: str) -> list[dict[str, str]]:
    rows = []
    for label, spec in check_profile(models, profiles, profile).items():
        spec = dict(spec or {})
        model = spec.get("model")
        entry = dict(models.get(model) or {}) if model else {}
        how = str(spec["runs"]) + (f" (also {spec['serve']})" if spec.get("serve") else "")
        rows.append({
            "model": label,
            "runs": how,
            "entry": str(model or ""),
            "model_id": str(entry.get("model_id") or ""),
            "status": entry_status(model, entry) if model else "",
            "needs / why": str(entry.get("hardware") or "") if model else str(spec.get("why") or ""),
        })
    return rows
