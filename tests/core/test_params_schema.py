"""params.yaml and its schema stay in sync; params.yaml is written the way `dvc exp run -S` writes it."""

from __future__ import annotations

import shutil

import pytest
from omegaconf import OmegaConf

from probmed.core.config import check_config, load_params, to_plain
from probmed.core.errors import ConfigError
from probmed.core.params_schema import PARAM_FILES, Params, Section, check_params, describe, file_of, keys_of

CANONICALIZE = ("python -c \"from dvc.utils.hydra import apply_overrides; "
                "apply_overrides('params.yaml', ['seed=0'])\"  (then restore comments that moved)")


def test_the_repository_params_load_through_the_schema(repo_root):
    check_config(load_params(repo_root / "params.yaml"))


def _leaf_keys(value, prefix=""):
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _leaf_keys(item, f"{prefix}.{key}" if prefix else key)
    else:
        yield prefix


def test_every_section_of_the_schema_is_typed_and_every_params_key_is_known(repo_root):
    params = to_plain(load_params(repo_root / "params.yaml"))
    assert set(params) == set(keys_of(Params))  # no section of the schema is missing from params.yaml
    assert "models.tiny.max_new_tokens" in set(_leaf_keys(params))

    def sections(cls):
        yield cls
        for hint in keys_of(cls).values():
            if isinstance(hint, type) and issubclass(hint, Section):
                yield from sections(hint)

    for section in sections(Params):
        for key, hint in keys_of(section).items():
            assert describe(hint), f"{section.__name__}.{key}"


def test_params_yaml_has_no_interpolation(repo_root):
    """`dvc exp run -S` would resolve ${...} and write the value back for good."""
    for name in ("params.yaml", *PARAM_FILES):
        assert "${" not in (repo_root / name).read_text(), name


def test_each_registry_file_keeps_exactly_its_keys_and_params_yaml_none_of_them(repo_root):
    """models.yaml holds the registry (every model, profile, price, fine-tuning checkpoint); params.yaml none of it,
    so `dvc exp show` lists only the entries stages declare."""
    from probmed.core.config import read_yaml_12

    own = read_yaml_12(repo_root / "params.yaml")
    for name, keys in PARAM_FILES.items():
        registry = read_yaml_12(repo_root / name)
        assert sorted(_leaf_keys(registry)) and all(file_of(key) == name for key in _leaf_keys(registry)), name
        for key in keys:
            assert _has(registry, key), f"{name} lacks {key}"
            assert not _has(own, key), f"params.yaml also sets {key}"
    assert file_of("models.tiny.threads") == "models.yaml" and file_of("finetune.lora.r") == "params.yaml"


def _has(tree, dotted):
    for part in dotted.split("."):
        if not isinstance(tree, dict) or part not in tree:
            return False
        tree = tree[part]
    return True


def _project(tmp_path, repo_root):
    for name in ("params.yaml", *PARAM_FILES):
        shutil.copy(repo_root / name, tmp_path / name)
    return tmp_path / "params.yaml"


def test_overrides_reach_a_registry_key_and_errors_name_its_file(repo_root, tmp_path):
    path = _project(tmp_path, repo_root)
    assert to_plain(load_params(path, ["models.tiny.threads=2"]))["models"]["tiny"]["threads"] == 2
    with pytest.raises(ConfigError, match=r"pricing\.gpt-4o\.input_per_mtok = -1, expected .* \(models\.yaml\)"):
        check_config(load_params(path, ["pricing.gpt-4o.input_per_mtok=-1"]))
    with pytest.raises(ConfigError, match=r"finetune\.profiles\.gpu\.lora\.rank is not a parameter \(models\.yaml\)"):
        check_config(load_params(path, ["finetune.profiles.gpu.lora.rank=4"]))


def test_a_key_in_both_files_or_in_the_wrong_file_is_refused_naming_them(repo_root, tmp_path):
    path = _project(tmp_path, repo_root)
    registry = tmp_path / "models.yaml"
    text = registry.read_text()
    path.write_text(path.read_text() + "pricing:\n  x: {input_per_mtok: 1.0, output_per_mtok: 1.0}\n")
    with pytest.raises(ConfigError, match=rf"pricing is set in both {path} and {registry}: keep it in models.yaml"):
        load_params(path)
    _project(tmp_path, repo_root)
    registry.write_text(text + "score:\n  seed: 3\n")
    with pytest.raises(ConfigError, match=rf"parameter file {registry}: score is not kept there .*params.yaml"):
        load_params(path)
    registry.write_text(text.replace("finetune:", "finetune:\n  lora: {r: 2}", 1))
    with pytest.raises(ConfigError, match=r"finetune\.lora is not kept there"):
        load_params(path)
    registry.write_text(text + "extra: ${oc.env:HOME}\n")
    with pytest.raises(ConfigError, match=rf"{registry}: extra: '\$\{{\.\.\.\}}' interpolation"):
        load_params(path)


def test_a_self_contained_params_file_needs_no_registry_beside_it(repo_root, tmp_path):
    """A test's or a user's single file keeps working: the registry keys written in it, nothing beside it."""
    whole = to_plain(load_params(repo_root / "params.yaml"))
    alone = tmp_path / "alone" / "params.yaml"
    alone.parent.mkdir()
    OmegaConf.save(whole, alone)
    assert to_plain(load_params(alone)) == whole


def test_dvc_exp_set_rewrites_exactly_the_value_it_sets(repo_root, tmp_path):
    """params.yaml is a fixed point of DVC's writer: `-S key=value` changes one line, nothing else."""
    from dvc.utils.hydra import apply_overrides

    path = tmp_path / "params.yaml"
    shutil.copy(repo_root / "params.yaml", path)
    original = path.read_text()
    apply_overrides(path, ["seed=0"])
    assert path.read_text() == original, f"params.yaml is not in DVC's own layout; rewrite it with {CANONICALIZE}"
    registry = tmp_path / "models.yaml"
    shutil.copy(repo_root / "models.yaml", registry)
    apply_overrides(registry, ["models.random.backend=random"])  # what `-S models.yaml:...` writes
    assert registry.read_text() == (repo_root / "models.yaml").read_text(), "models.yaml is not in DVC's own layout"
    layout = tmp_path / "layout.yaml"
    shutil.copy(repo_root / "layout.yaml", layout)
    apply_overrides(layout, ["model=tiny"])
    assert layout.read_text() == (repo_root / "layout.yaml").read_text(), "layout.yaml is not in DVC's own layout"
    apply_overrides(path, ["datasets.question_sets.probmed.max_images=20"])
    changed = [(a, b) for a, b in zip(original.splitlines(), path.read_text().splitlines()) if a != b]
    assert len(original.splitlines()) == len(path.read_text().splitlines())
    assert len(changed) == 1 and "max_images: 20" in changed[0][1], changed
    assert to_plain(load_params(path))["datasets"]["question_sets"]["probmed"]["max_images"] == 20


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda p: p["models"]["tiny"].update(max_new_tokens="many"), None),  # the backend config's business
        (lambda p: p["tracking"].update(enabled="yes"), "params: tracking.enabled = 'yes', expected true or false"),
        (lambda p: p.update(extra=1), "params: extra is not a parameter; params.yaml takes: paths, seed"),
        (lambda p: p["finetune"]["trainer"].update(deterministic="sometimes"),
         "finetune.trainer.deterministic = 'sometimes', expected true or false or 'warn'"),
        (lambda p: p["finetune"]["lora"].update(target_modules=["q_proj", ["k"]]),
         "finetune.lora.target_modules[1] = a list, expected a string"),
        (lambda p: p["pricing"]["gpt-4o"].update(input_per_mtok=-1), "pricing.gpt-4o.input_per_mtok = -1"),
        (lambda p: p["questions"].update(strategy="hard"), "questions.strategy = 'hard', expected one of 'balanced', 'random'"),
        (lambda p: p["datasets"].update(question_sets=[]), "datasets.question_sets = a list, expected a mapping"),
    ],
)
def test_check_names_the_key_and_the_expected_type(repo_root, edit, message):
    params = to_plain(load_params(repo_root / "params.yaml"))
    edit(params)
    if message is None:
        check_params(params)
        return
    with pytest.raises(ConfigError) as err:
        check_params(params)
    assert message in str(err.value)


# --- the typed params: defaults stated once -------------------------------------------

FREE_MAPS = {"models", "model_profiles", "pricing", "finetune.profiles", "datasets.sources",
             "datasets.question_sets", "pipeline.runs", "pipeline.described_runs", "pipeline.describe"}


def _leaves_of(value, prefix=""):
    if isinstance(value, dict) and prefix not in FREE_MAPS:
        for key, item in value.items():
            yield from _leaves_of(item, f"{prefix}.{key}" if prefix else key)
    elif prefix not in FREE_MAPS:
        yield prefix, value


def test_every_default_equals_the_value_params_yaml_gives(repo_root):
    """The schema's defaults are params.yaml's values: a key left out of a params file means what the repo means."""
    from probmed.core.params_schema import as_mapping, parse_params

    from_file = dict(_leaves_of(as_mapping(parse_params(to_plain(load_params(repo_root / "params.yaml"))))))
    defaults = dict(_leaves_of(as_mapping(parse_params({}))))
    assert from_file.keys() == defaults.keys()
    differ = {key: (from_file[key], defaults[key]) for key in from_file if from_file[key] != defaults[key]}
    assert not differ


def test_a_partial_section_merges_into_the_default_standing_at_its_place():
    from probmed.core.params_schema import parse_params

    params = parse_params({"curate": {"vqarad": {}, "roco_images": {"images_dir": "x"}, "images": {"image_size": 128}},
                           "score": {"seed": 7}})
    assert params.curate.vqarad.data == "data/vqa-rad"
    assert params.curate.medicat.data == "data/medicat-sample"
    assert (params.curate.roco_images.images_dir, params.curate.roco_images.data) == ("x", "data/roco-images")
    assert (params.curate.images.image_size, params.curate.images.fit) == (128, "pad")
    assert (params.score.seed, params.score.bootstrap_resamples) == (7, 1000)
    assert params.finetune.pretrain.epochs == 8 and params.finetune.adapt.epochs == 3


def test_a_free_map_entry_without_a_required_key_names_it():
    from probmed.core.params_schema import parse_params

    with pytest.raises(ConfigError, match=r"params: datasets\.question_sets\.mine\.sources is required"):
        parse_params({"datasets": {"question_sets": {"mine": {"max_images": 3}}}})
    with pytest.raises(ConfigError, match=r"datasets\.question_sets\.mine\.max_images = 0, expected a positive"):
        parse_params({"datasets": {"question_sets": {"mine": {"sources": ["x"], "max_images": 0}}}})


def test_the_selected_finetune_profile_merges_into_the_section(repo_root):
    from probmed.core.params_schema import parse_params, selected_finetune

    raw = to_plain(load_params(repo_root / "params.yaml", ["finetune.profile=gpu"]))
    gpu = selected_finetune(parse_params(raw).finetune)
    assert (gpu.base_model, gpu.lora.r, gpu.pretrain.enabled, gpu.pretrain.epochs) == ("llava-hf/llava-1.5-7b-hf", 16, False, 8)
    assert (gpu.trainer.devices, gpu.trainer.gradient_clip_val, gpu.adapt.max_examples) == (4, 1.0, None)
    assert selected_finetune(parse_params(to_plain(load_params(repo_root / "params.yaml"))).finetune).base_model == "tiny"
    with pytest.raises(ConfigError, match="no finetune.profiles.tpu"):
        selected_finetune(parse_params({"finetune": {"profile": "tpu"}}).finetune)
