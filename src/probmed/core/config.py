"""params.yaml (with the registries beside it) is the single source of parameters; sub-commands take dotted overrides.

`probmed <command> key.sub=value model=tiny` merges the overrides on top of the
file with OmegaConf, the same keys DVC stages declare and `dvc exp run -S`
sets, so a value has one name everywhere. Parameters never carry secrets: a
credential-named key or a key-shaped value is refused before any work
(probmed.core.secrets), since params reach git, dvc.lock and MLflow. OmegaConf
is imported when a file is read, not with this module, so every command starts
fast (`probmed --help`).

Parameters are plain data, checked as the commands will see them: the YAML
loader refuses anchors and aliases (a "billion laughs" file of a few hundred
bytes expands to 9^d values in OmegaConf) and nesting deeper than
:data:`MAX_DEPTH`, and any ``${...}`` interpolation is refused (params.yaml has
none by design, keys come from ``api_key_env``, and ``${oc.env:...}`` would
carry a key past the secret guard into every log), each naming the key.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from probmed.core.errors import ConfigError
from probmed.core.secrets import leaves, refuse_secrets

if TYPE_CHECKING:
    from omegaconf import DictConfig

OVERRIDE_KEY = re.compile(r"^[A-Za-z_][\w\-]*(?:\.[\w\-]+|\[\d+\])*$")

DEFAULT_PARAMS = Path("params.yaml")
MAX_DEPTH = 32  # nesting levels a params tree may have (params.yaml has 5)

def _parse_override(override: str) -> tuple[str, Any]:
    """One dotted ``key=value``: the key and its value read as YAML 1.2 (like params.yaml); ConfigError names it."""
    import yaml

    key, sep, text = override.partition("=")
    if not sep or not OVERRIDE_KEY.match(key):
        raise ConfigError(f"override {override!r} is not of the form key=value (a dotted key, e.g. score.seed=1)")
    if len(re.split(r"\.|\[", key)) > MAX_DEPTH:
        raise ConfigError(f"override {key[:60]}...: the key has more than {MAX_DEPTH} parts")
    try:
        return key, (yaml.load(text, Loader=yaml12_loader()) if text else "")
    except _NotPlain as exc:
        raise ConfigError(f"override {key}=...: {exc.at(key)}") from None
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

    The registry files beside `path` (params_schema.PARAM_FILES: models.yaml)
    are merged in first (:func:`merge_registries`), so an override reaches a
    key whichever file keeps it (``models.tiny.threads=2``).
    Merging follows `dvc exp run -S` (Hydra): a mapping value merges into the
    mapping it overrides, anything else replaces the old value. The file and
    every override are checked as plain data before OmegaConf sees them (no
    interpolation, no secret), and the merged tree's resolved values once more
    for secrets. Whether the result is a valid parameter set is
    :func:`check_config`'s question.
    """
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    path = Path(path)
    data = _read_mapping(path)
    merge_registries(data, path)
    parsed = [(override, *_parse_override(override)) for override in overrides]
    for _, key, value in parsed:  # every override checked before any is applied
        refuse_unplain(_as_tree(key, value), "overrides")
    cfg = OmegaConf.create(data)
    for override, key, value in parsed:
        try:
            OmegaConf.update(cfg, key, value, merge=True)
        except OmegaConfBaseException as exc:
            reason = str(exc).splitlines()[0]
            raise ConfigError(f"override {override!r}: cannot set {key} ({reason})") from None
    refuse_secrets(to_plain(cfg), "params")  # what every command reads: the resolved tree
    return cfg


def _read_mapping(path: Path) -> dict[str, Any]:
    """A parameter file as plain data: a mapping, no interpolation, no secret; ConfigError names the file."""
    if not path.exists():
        raise ConfigError(f"parameter file {path} not found")
    data = read_yaml_12(path)
    if not isinstance(data, dict):
        raise ConfigError(f"parameter file {path}: expected a mapping of parameters")
    refuse_unplain(data, str(path))
    return data


def merge_registries(data: dict[str, Any], path: Path) -> None:
    """Merge each registry file found beside `path` into `data` (in place).

    A registry file holds only the keys PARAM_FILES gives it; a key set in
    both files is refused, naming both, since neither could win silently.
    A missing registry file is fine: `path` is then self-contained.
    """
    from probmed.core.params_schema import PARAM_FILES

    for name, keys in PARAM_FILES.items():
        registry = path.parent / name
        if registry.resolve() == path.resolve() or not registry.is_file():
            continue
        more = _read_mapping(registry)
        _refuse_foreign(more, keys, registry)
        for key in keys:
            parts = key.split(".")
            value = _get(more, parts)
            if value is _ABSENT:
                continue
            if _get(data, parts) is not _ABSENT:
                raise ConfigError(f"{key} is set in both {path} and {registry}: keep it in {name} only")
            parent = data
            for part in parts[:-1]:
                parent = parent.setdefault(part, {})
                if not isinstance(parent, dict):
                    raise ConfigError(f"parameter file {path}: {part} must be a mapping ({key} is set in {registry})")
            parent[parts[-1]] = value


_ABSENT = object()


def _get(tree: Any, parts: list[str]) -> Any:
    for part in parts:
        if not isinstance(tree, dict) or part not in tree:
            return _ABSENT
        tree = tree[part]
    return tree


def _refuse_foreign(tree: dict[str, Any], keys: tuple[str, ...], registry: Path, prefix: str = "") -> None:
    """ConfigError naming the first key of a registry file that is not one it keeps (it belongs in params.yaml)."""
    for name, value in tree.items():
        key = f"{prefix}{name}"
        if key in keys:
            continue
        if isinstance(value, dict) and any(k.startswith(f"{key}.") for k in keys):
            _refuse_foreign(value, keys, registry, f"{key}.")
            continue
        raise ConfigError(f"parameter file {registry}: {key} is not kept there (it keeps {', '.join(keys)}); "
                          "write it in params.yaml")


def refuse_unplain(tree: Any, where: str) -> None:
    """ConfigError naming each key whose value interpolates (``${...}``), then each secret (probmed.core.secrets).

    Interpolation is refused outright: params.yaml has none by design, OmegaConf
    and DVC would resolve it where no check looks (``${oc.env:OPENAI_API_KEY}``
    puts a key into the output, dvc.lock and MLflow), and keys are read from
    the environment variable ``api_key_env`` names.
    """
    found = [key for key, value in leaves(tree) if isinstance(value, str) and "${" in value]
    if found:
        raise ConfigError(
            f"{where}: {', '.join(found)}: '${{...}}' interpolation is not allowed in parameters (value not shown); "
            "write the value itself (an API key is never a parameter: name its environment variable in the "
            "model's api_key_env)"
        )
    refuse_secrets(tree, where)


def check_config(cfg: Any) -> None:
    """The whole parameter tree against probmed.core.params_schema; ConfigError names the first bad key."""
    from probmed.core.params_schema import check_params

    check_params(to_plain(cfg))


class _NotPlain(Exception):
    """The YAML holds an anchor, an alias or too deep a nesting (raised while composing, before any value is built)."""

    def __init__(self, keys: list[str], line: int, reason: str) -> None:
        super().__init__(reason)
        self.keys, self.line, self.reason = keys, line, reason

    def at(self, prefix: str = "") -> str:
        """The message, naming the key (under ``prefix``) and the line."""
        key = _dotted([prefix, *self.keys]) or "(top level)"
        return f"key {key} (line {self.line}): {self.reason}"


def _dotted(parts: list[str]) -> str:
    """``["a", "b", "[0]"]`` as ``a.b[0]`` (empty parts, the document and mapping keys, left out)."""
    out = ""
    for part in filter(None, parts):
        out += part if part.startswith("[") or not out else f".{part}"
    return out


def yaml12_loader() -> type:
    """A YAML loader for parameters: YAML 1.2 booleans (only true/false), the way DVC reads params.yaml, and plain data.

    OmegaConf's own loader follows YAML 1.1, where ``yes``/``no``/``on``/``off`` are
    booleans. DVC rewrites params.yaml on ``dvc exp run -S`` and drops quotes, so a
    quoted ``"yes"`` key would come back as ``True``; reading with 1.2 rules keeps
    both tools agreeing on every value. Anchors and aliases are refused, and
    nesting past :data:`MAX_DEPTH`, while the document is composed: an alias
    costs nothing to parse but OmegaConf copies what it points at, so nine
    lines of aliases make 9^9 values (a "billion laughs"), and deep nesting
    exhausts the recursion of every tree walker.
    """
    import yaml
    from omegaconf._utils import get_yaml_loader

    base = get_yaml_loader()
    bool_tag = "tag:yaml.org,2002:bool"

    class Yaml12Loader(base):  # type: ignore[misc, valid-type]
        def __init__(self, stream: Any) -> None:
            super().__init__(stream)
            self.keys: list[str] = []  # the path to the node being composed

        def compose_node(self, parent: Any, index: Any) -> Any:
            keys = self.keys
            keys.append(f"[{index}]" if isinstance(index, int) else str(getattr(index, "value", "")))
            event = self.peek_event()
            if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
                raise _NotPlain(list(keys), event.start_mark.line + 1, "a YAML anchor or alias (&name, *name): parameters "
                                "are plain values, write each one out")
            if len(keys) > MAX_DEPTH:
                raise _NotPlain(list(keys), event.start_mark.line + 1, f"nested more than {MAX_DEPTH} levels deep")
            try:
                return super().compose_node(parent, index)
            finally:
                keys.pop()

    Yaml12Loader.yaml_implicit_resolvers = {
        first: [(tag, rx) for tag, rx in resolvers if tag != bool_tag]
        for first, resolvers in base.yaml_implicit_resolvers.items()
    }
    Yaml12Loader.add_implicit_resolver(bool_tag, re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF"))
    return Yaml12Loader


def read_yaml_12(path: str | Path) -> Any:
    """Parse a parameter file (see :func:`yaml12_loader`); ConfigError names the file, and the key where it can."""
    import yaml

    try:
        with open(path, encoding="utf-8") as fh:
            return yaml.load(fh, Loader=yaml12_loader()) or {}
    except _NotPlain as exc:
        raise ConfigError(f"parameter file {path}: {exc.at()}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"parameter file {path} is not valid YAML: {exc}") from None


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
