"""params.yaml is the single source of parameters; sub-commands take dotted overrides.

`probmed <command> key.sub=value model=tiny` merges the overrides on top of the
file with OmegaConf, the same keys DVC stages declare and `dvc exp run -S`
sets, so a value has one name everywhere. Parameters never carry secrets: a
credential-named key or a key-shaped value is refused before any work
(probmed.core.secrets), since params reach git, dvc.lock and MLflow. OmegaConf
is imported when a file is read, not with this module, so every command starts
fast (`probmed --help`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from probmed.core.errors import ConfigError
from probmed.core.secrets import refuse_secrets

if TYPE_CHECKING:
    from omegaconf import DictConfig

DEFAULT_PARAMS = Path("params.yaml")


def load_params(path: str | Path = DEFAULT_PARAMS, overrides: Sequence[str] = ()) -> DictConfig:
    """Read params.yaml and apply dotted ``key=value`` overrides."""
    from omegaconf import DictConfig, OmegaConf

    path = Path(path)
    if not path.exists():
        raise ConfigError(f"parameter file {path} not found")
    cfg = OmegaConf.create(read_yaml_12(path))
    bad = [o for o in overrides if "=" not in o]
    if bad:
        raise ConfigError(f"override(s) {bad} are not of the form key=value")
    refuse_secrets(OmegaConf.to_container(cfg, resolve=False), str(path))
    if overrides:
        extra = OmegaConf.from_dotlist(list(overrides))
        refuse_secrets(OmegaConf.to_container(extra, resolve=False), "overrides")
        cfg = OmegaConf.merge(cfg, extra)
    assert isinstance(cfg, DictConfig)
    return cfg


def read_yaml_12(path: str | Path) -> Any:
    """Parse YAML with YAML 1.2 booleans (only true/false), the way DVC reads params.yaml.

    OmegaConf's own loader follows YAML 1.1, where ``yes``/``no``/``on``/``off`` are
    booleans. DVC rewrites params.yaml on ``dvc exp run -S`` and drops quotes, so a
    quoted ``"yes"`` key would come back as ``True``; reading with 1.2 rules keeps
    both tools agreeing on every value.
    """
    import re

    import yaml
    from omegaconf._utils import get_yaml_loader

    base = get_yaml_loader()
    bool_tag = "tag:yaml.org,2002:bool"

    class Yaml12Loader(base):  # type: ignore[misc, valid-type]
        pass

    Yaml12Loader.yaml_implicit_resolvers = {
        first: [(tag, rx) for tag, rx in resolvers if tag != bool_tag]
        for first, resolvers in base.yaml_implicit_resolvers.items()
    }
    Yaml12Loader.add_implicit_resolver(bool_tag, re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF"))
    with open(path, encoding="utf-8") as fh:
        return yaml.load(fh, Loader=Yaml12Loader) or {}


def to_plain(cfg: Any) -> Any:
    """Resolved plain Python containers (for MLflow params, JSON, hashing)."""
    from omegaconf import OmegaConf

    if OmegaConf.is_config(cfg):
        return OmegaConf.to_container(cfg, resolve=True)
    return cfg


def flatten(obj: Any, prefix: str = "") -> dict[str, Any]:
    """Nested mappings -> ``{"a.b.c": leaf}`` (the dotted names overrides use); lists and scalars are leaves."""
    if not isinstance(obj, Mapping):
        return {prefix: obj}
    out: dict[str, Any] = {}
    for key, value in obj.items():
        out.update(flatten(value, f"{prefix}.{key}" if prefix else str(key)))
    return out
