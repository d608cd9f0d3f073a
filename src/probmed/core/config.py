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

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from probmed.core.errors import ConfigError
from probmed.core.secrets import refuse_secrets

if TYPE_CHECKING:
    from omegaconf import DictConfig

OVERRIDE_KEY = re.compile(r"^[A-Za-z_][\w\-]*(?:\.[\w\-]+|\[\d+\])*$")

DEFAULT_PARAMS = Path("params.yaml")

def _parse_override(override: str) -> tuple[str, Any]:
    """One dotted ``key=value``: the key and its value read as YAML 1.2 (like params.yaml); ConfigError names it."""
    import yaml

    key, sep, text = override.partition("=")
    if not sep or not OVERRIDE_KEY.match(key):
        raise ConfigError(f"override {override!r} is not of the form key=value (a dotted key, e.g. score.seed=1)")
    try:
        return key, (yaml.load(text, Loader=yaml12_loader()) if text else "")
    except yaml.YAMLError as exc:
        reason = str(exc).splitlines()[0]
        raise ConfigError(f"override {override!r}: cannot set {key} ({reason})") from None


def _as_tree(key: str, value: Any) -> dict[str, Any]:
    """``a.b[0]=v`` as ``{a: {b: {0: v}}}``: the shape the secret check walks."""
    for part in reversed(re.split(r"\.|\[", key)):
        value = {part.rstrip("]"): value}
    return value


def load_params(path: str | Path = DEFAULT_PARAMS, overrides: Sequence[str] = ()) -> DictConfig:
    """Read params.yaml and apply dotted ``key=value`` overrides (values read as YAML 1.2, as DVC reads them).

    Merging follows `dvc exp run -S` (Hydra): a mapping value merges into the
    mapping it overrides, anything else replaces the old value. Whether the
    result is a valid parameter set is :func:`check_config`'s question.
    """
    import yaml
    from omegaconf import DictConfig, OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    path = Path(path)
    if not path.exists():
        raise ConfigError(f"parameter file {path} not found")
    try:
        cfg = OmegaConf.create(read_yaml_12(path))
    except yaml.YAMLError as exc:
        raise ConfigError(f"parameter file {path} is not valid YAML: {exc}") from None
    if not isinstance(cfg, DictConfig):
        raise ConfigError(f"parameter file {path}: expected a mapping of parameters")
    refuse_secrets(OmegaConf.to_container(cfg, resolve=False), str(path))
    parsed = [(override, *_parse_override(override)) for override in overrides]
    for _, key, value in parsed:  # every override checked for secrets before any is applied
        refuse_secrets(_as_tree(key, value), "overrides")
    for override, key, value in parsed:
        try:
            OmegaConf.update(cfg, key, value, merge=True)
        except OmegaConfBaseException as exc:
            reason = str(exc).splitlines()[0]
            raise ConfigError(f"override {override!r}: cannot set {key} ({reason})") from None
    return cfg


def check_config(cfg: Any) -> None:
    """The whole parameter tree against probmed.core.params_schema; ConfigError names the first bad key."""
    from probmed.core.params_schema import check_params

    check_params(to_plain(cfg))


def yaml12_loader() -> type:
    """A YAML loader with YAML 1.2 booleans (only true/false), the way DVC reads params.yaml.

    OmegaConf's own loader follows YAML 1.1, where ``yes``/``no``/``on``/``off`` are
    booleans. DVC rewrites params.yaml on ``dvc exp run -S`` and drops quotes, so a
    quoted ``"yes"`` key would come back as ``True``; reading with 1.2 rules keeps
    both tools agreeing on every value.
    """
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
    return Yaml12Loader


def read_yaml_12(path: str | Path) -> Any:
    """Parse a YAML file with YAML 1.2 booleans (see :func:`yaml12_loader`)."""
    import yaml

    with open(path, encoding="utf-8") as fh:
        return yaml.load(fh, Loader=yaml12_loader()) or {}


def to_plain(cfg: Any) -> Any:
    """Resolved plain Python containers (for MLflow params, JSON, hashing)."""
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    if OmegaConf.is_config(cfg):
        try:
            return OmegaConf.to_container(cfg, resolve=True)
        except OmegaConfBaseException as exc:
            raise ConfigError(f"params: {str(exc).splitlines()[0]}") from None
    return cfg


def flatten(obj: Any, prefix: str = "") -> dict[str, Any]:
    """Nested mappings -> ``{"a.b.c": leaf}`` (the dotted names overrides use); lists and scalars are leaves."""
    if not isinstance(obj, Mapping):
        return {prefix: obj}
    out: dict[str, Any] = {}
    for key, value in obj.items():
        out.update(flatten(value, f"{prefix}.{key}" if prefix else str(key)))
    return out
