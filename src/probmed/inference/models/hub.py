"""Pin a hub model: resolve a branch or tag to the commit sha a result can name.

A hub id alone names whatever `main` holds today; a commit sha names exact
weights, code and chat template. `probmed pin` asks the hub (huggingface_hub,
`HF_ENDPOINT` for a mirror, `HF_TOKEN` for gated models such as MedGemma) and
writes the sha into models.yaml. Offline there is nothing to ask: it refuses
rather than guessing.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Mapping

from probmed.core.errors import BackendError, ConfigError, did_you_mean

SHA = re.compile(r"[0-9a-f]{40}")
HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+")  # namespace/name; a local path is anything else


def is_hub_id(model_id: str) -> bool:
    """A hub repository id rather than a local directory (which may not be built yet, e.g. build/...)."""
    return bool(HUB_ID.fullmatch(model_id)) and not Path(model_id).exists()


class HubOfflineError(BackendError):
    """The hub cannot be asked (offline mode, or no connection); the message names the model."""


def offline() -> bool:
    """HF_HUB_OFFLINE (or TRANSFORMERS_OFFLINE) as it is now, not as it was when huggingface_hub was imported."""
    value = os.environ.get("HF_HUB_OFFLINE") or os.environ.get("TRANSFORMERS_OFFLINE") or ""
    return value.strip().lower() in {"1", "on", "yes", "true"}


def pin_problem(name: str, entry: Mapping[str, Any]) -> str | None:
    """Why registry entry `name` cannot run yet, or None: a hub checkpoint must be pinned, and one that
    runs its own code (trust_remote_code) must be pinned to a commit sha, not a branch or tag."""
    if entry.get("backend") != "hf":
        return None
    model_id = str(entry.get("model_id") or "")
    if not is_hub_id(model_id):
        return None
    revision = str(entry.get("revision") or "")
    if not revision:
        return f"models.{name} ({model_id}) is not pinned to a revision: run `probmed pin {name}`"
    if entry.get("trust_remote_code") and not SHA.fullmatch(revision):
        return (f"models.{name} runs code from the checkpoint (trust_remote_code), so its revision must be a "
                f"commit sha, not {revision!r}: run `probmed pin {name} --revision {revision}`")
    return None


def pinnable(models: Mapping[str, Any], name: str) -> str:
    """The hub id of registry entry `name`, or a ConfigError saying why there is nothing to pin."""
    if name not in models:
        raise ConfigError(f"unknown model {name!r}{did_you_mean(name, models)}; "
                          f"params 'models' defines: {', '.join(sorted(models))}")
    entry = dict(models[name] or {})
    if entry.get("backend") != "hf":
        raise ConfigError(f"models.{name} has backend {entry.get('backend')!r}: only hub checkpoints (backend hf) "
                          "are pinned; an API model is named by its model_id")
    model_id = str(entry.get("model_id") or "")
    if not model_id:
        raise ConfigError(f"models.{name}.model_id is missing")
    if not is_hub_id(model_id):
        raise ConfigError(f"models.{name}.model_id = {model_id!r} is a local directory, not a hub id "
                          "(namespace/name): local models are fingerprinted by content, not pinned")
    return model_id


def resolve_revision(name: str, model_id: str, revision: str = "main", endpoint: str | None = None) -> str:
    """The commit sha `revision` (a branch, tag or sha) of `model_id` points to on the hub."""
    from huggingface_hub import HfApi
    from huggingface_hub.errors import HfHubHTTPError, RepositoryNotFoundError, RevisionNotFoundError

    where = endpoint or os.environ.get("HF_ENDPOINT") or "https://huggingface.co"
    if offline():
        raise HubOfflineError(
            f"model {name} ({model_id}): offline (HF_HUB_OFFLINE is set), cannot resolve {revision!r} to a commit; "
            f"unset HF_HUB_OFFLINE, or write a known sha with models.{name}.revision=<sha>"
        )
    try:
        info = HfApi(endpoint=where).model_info(model_id, revision=revision)
    except RevisionNotFoundError:
        raise ConfigError(f"model {name} ({model_id}): revision {revision!r} not found on {where}") from None
    except RepositoryNotFoundError:
        raise ConfigError(f"model {name}: repository {model_id!r} not found on {where} (or gated: set HF_TOKEN "
                          "after accepting its licence)") from None
    except HfHubHTTPError as exc:  # the hub answered with another error status
        raise BackendError(f"model {name} ({model_id}): the hub at {where} answered: {exc}") from None
    except Exception as exc:  # noqa: BLE001 - no connection: the HTTP client's errors derive from no stdlib type
        raise HubOfflineError(f"model {name} ({model_id}): cannot reach the hub at {where}: {exc}") from None
    sha = str(getattr(info, "sha", "") or "")
    if not SHA.fullmatch(sha):
        raise BackendError(f"model {name} ({model_id}): the hub at {where} returned no commit sha for {revision!r}")
    return sha
