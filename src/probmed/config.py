"""params.yaml is the single source of parameters; sub-commands take dotted overrides.

`probmed <command> key.sub=value model=tiny` merges the overrides on top of the
file with OmegaConf, the same keys DVC stages declare and `dvc exp run -S`
sets, so a value has one name everywhere.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from omegaconf import DictConfig, OmegaConf

DEFAULT_PARAMS = Path("params.yaml")


class ConfigError(ValueError):
    """A parameter is missing or malformed; the message names the key."""


def load_params(path: str | Path = DEFAULT_PARAMS, overrides: Sequence[str] = ()) -> DictConfig:
    """Read params.yaml and apply dotted ``key=value`` overrides."""
    path = Path(path)
    if not path.exists():
        raise ConfigError(f"parameter file {path} not found")
    cfg = OmegaConf.load(path)
    bad = [o for o in overrides if "=" not in o]
    if bad:
        raise ConfigError(f"override(s) {bad} are not of the form key=value")
    if overrides:
        cfg = OmegaConf.merge(cfg, OmegaConf.from_dotlist(list(overrides)))
    assert isinstance(cfg, DictConfig)
    return cfg


def require(cfg: DictConfig, key: str) -> Any:
    """The value at a dotted key, or a ConfigError naming it."""
    value = OmegaConf.select(cfg, key, default=None)
    if value is None:
        raise ConfigError(f"params: required key {key!r} is missing")
    return value


def to_plain(cfg: Any) -> Any:
    """Resolved plain Python containers (for MLflow params, JSON, hashing)."""
    if isinstance(cfg, DictConfig) or OmegaConf.is_config(cfg):
        return OmegaConf.to_container(cfg, resolve=True)
    return cfg
