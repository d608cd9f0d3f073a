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
from probmed.core.params_schema import ProfileModel
from probmed.inference.models.hub import pin_problem


def entry_status(name: str, entry: Mapping[str, Any]) -> str:
    """"ready", "disabled" or what is missing (a pin)."""
    if not entry.get("enabled", True):
        return "disabled (enable explicitly)"
    problem = pin_problem(name, entry)
    return "not pinned" if problem and "not pinned" in problem else (problem or "ready")


def registry_rows(models: Mapping[str, Any]) -> list[dict[str, str]]:
    """One row per `models:` entry: backend, model id, pinned revision, state and hardware."""
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


def check_profile(models: Mapping[str, Any], profiles: Mapping[str, Mapping[str, ProfileModel]],
                  profile: str) -> Mapping[str, ProfileModel]:
    """The profile `profile`, checked: every entry names a known model or says why not (its `runs` the schema checks)."""
    if profile not in profiles:
        raise ConfigError(f"params: model_profiles.{profile} not found; defined: {', '.join(sorted(profiles))}")
    items = profiles[profile]
    for label, spec in items.items():
        key = f"model_profiles.{profile}.{label}"
        if spec.model is not None and spec.model not in models:
            raise ConfigError(f"params: {key}.model = {spec.model!r} is not in models")
        if spec.model is None and not spec.why:
            raise ConfigError(f"params: {key} names no model, so it must say why (key 'why')")
    return items


def profile_rows(models: Mapping[str, Any], profiles: Mapping[str, Mapping[str, ProfileModel]],
                 profile: str) -> list[dict[str, str]]:
    """One row per model of the profile: how it runs here, its registry entry and that entry's state."""
    rows = []
    for label, spec in check_profile(models, profiles, profile).items():
        model = spec.model
        entry = dict(models.get(model) or {}) if model else {}
        how = str(spec.runs) + (f" (also {spec.serve})" if spec.serve else "")
        rows.append({
            "model": label,
            "runs": how,
            "entry": str(model or ""),
            "model_id": str(entry.get("model_id") or ""),
            "status": entry_status(model, entry) if model else "",
            "needs / why": str(entry.get("hardware") or "") if model else str(spec.why or ""),
        })
    return rows
