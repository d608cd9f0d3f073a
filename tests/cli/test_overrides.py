"""One override grammar on every command: dotted ``key=value`` anywhere on the line, checked before any work.

Every command of `probmed --help` is listed in COMMANDS with the smallest
argument list argparse accepts (files need not exist: the params are checked
before the command reads anything). The command's handler is replaced by a
recorder, so "before any work" is literal: a bad key or type must stop the
command without the handler ever being called.
"""

from __future__ import annotations

import argparse
import sys

import pytest

from probmed import cli
from probmed.cli import build_parser, main

COMMANDS: dict[str, list[str]] = {
    "score": ["q.json", "p.parquet", "--out-dir", "out"],
    "score-responses": ["r.json", "--out-dir", "out"],
    "score-official": ["r.json", "--out", "o.json"],
    "baseline": ["random", "q.json", "--out", "p.parquet"],
    "curate": ["chestxray14", "--data", "d"],
    "generate": ["--records", "r.parquet", "--seed", "1"],
    "vqarad-adversarial": ["--data", "d"],
    "extract": ["c.tsv", "--out", "o.jsonl"],
    "extract-eval": ["--method", "rules"],
    "stats": ["--records", "a.parquet", "b.parquet"],
    "review export": ["--n", "3"],
    "review import": ["sheet.csv"],
    "review truth": ["--n", "3"],
    "review rates": ["sheet.csv"],
    "import-release": ["test.json", "--out", "q.parquet"],
    "predict": ["--questions", "q.parquet", "--no-progress"],
    "run-plan": ["probmed-tiny-*", "--dry-run"],
    "describe": ["--questions", "q.parquet", "--no-progress"],
    "merge": ["q.parquet", "s1.parquet", "s2.parquet", "--out", "m.parquet"],
    "export-responses": ["q.parquet", "p.parquet", "--out", "r.json"],
    "build-tiny-model": ["--out", "model"],
    "fetch-data": ["--source", "data"],
    "plan": ["--out-dir", "plan"],
    "subset": ["q.parquet", "--question-set", "probmed", "--out", "s.parquet"],
    "track": ["--out", "runs.json"],
    "report": ["--out-dir", "report"],
    "finetune": ["--stage", "adapt"],
    "audit": ["q.parquet", "--no-pixels", "--records", "r1.parquet", "r2.parquet"],
    "release": ["q.parquet", "--audit", "a.json", "--out-dir", "rel"],
    "models": ["--profile", "paper"],
    "pin": ["llava-1.5", "--revision", "main"],
    "transfer": ["--no-progress"],
    "compare": ["probmed/tiny/vanilla", "probmed/random/vanilla"],
}


def _commands(parser: argparse.ArgumentParser, prefix: str = "") -> dict[str, argparse.ArgumentParser]:
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        return {prefix.strip(): parser}
    out: dict[str, argparse.ArgumentParser] = {}
    for sub in subs:
        for name, child in sub.choices.items():
            out.update(_commands(child, f"{prefix} {name}"))
    return out


@pytest.fixture()
def recorded(monkeypatch):
    """Replace every command handler by a recorder; returns the list of Namespaces it was called with."""
    calls: list[argparse.Namespace] = []

    def recorder(args: argparse.Namespace) -> int:
        calls.append(args)
        return 0

    for parser in _commands(build_parser()).values():
        func = parser.get_default("func")
        monkeypatch.setattr(sys.modules[func.__module__], func.__name__, recorder)
    return calls


def test_every_command_is_listed():
    assert set(_commands(build_parser())) == set(COMMANDS)


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_override_after_the_options_applies(command, recorded, monkeypatch, repo_root):
    monkeypatch.chdir(repo_root)
    argv = [*command.split(), *COMMANDS[command], "score.bootstrap_resamples=7", "seed=3"]
    assert main(argv) == 0
    (args,) = recorded
    assert args.cfg.score.bootstrap_resamples == 7 and args.cfg.seed == 3


MISSPELT = ("score.bootstrp=200", "params: score.bootstrp is not a parameter; score takes: bootstrap_resamples")
WRONG_TYPE = ("score.bootstrap_resamples=lots", "params: score.bootstrap_resamples = 'lots', expected an integer >= 0")


def _refused(argv: list[str], message: str, recorded: list, capsys) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err, err
    assert "Traceback" not in err
    assert recorded == []


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize(("override", "message"), [MISSPELT, WRONG_TYPE], ids=["misspelt", "wrong-type"])
def test_bad_key_or_type_stops_every_command_before_work(command, override, message, recorded, monkeypatch,
                                                          repo_root, capsys):
    monkeypatch.chdir(repo_root)
    _refused([*command.split(), override, *COMMANDS[command]], message, recorded, capsys)


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("datasets.question_sets.probmed.max_image=3", "datasets.question_sets.probmed.max_image is not a parameter"),
        ("datasets.question_sets.probmed.max_images=0", "max_images = 0, expected a positive integer or null"),
        ("finetune.lora.r=eight", "params: finetune.lora.r = 'eight', expected a positive integer"),
        ("finetune.profiles.gpu.trainer.devise=2", "finetune.profiles.gpu.trainer.devise is not a parameter"),
        ("pipeline.runs.probmed-tiny-cot.modle=tiny", "pipeline.runs.probmed-tiny-cot.modle is not a parameter"),
        ("score.subset_fractions=[0.5,2]", "score.subset_fractions[1] = 2, expected a number in (0, 1]"),
        ("seed=", "params: seed = '', expected an integer"),
    ],
)
def test_keys_and_types_are_checked_anywhere_in_the_tree(override, message, recorded, monkeypatch, repo_root,
                                                         capsys):
    monkeypatch.chdir(repo_root)
    _refused(["plan", "--out-dir", "plan", override], message, recorded, capsys)


def test_an_option_value_that_looks_like_an_override_stays_the_value(recorded, monkeypatch, repo_root):
    monkeypatch.chdir(repo_root)
    assert main(["score", "q.json", "p.parquet", "--out-dir", "a=b", "--name", "x=y", "seed=2"]) == 0
    (args,) = recorded
    assert (args.out_dir, args.name, args.overrides, args.cfg.seed) == ("a=b", "x=y", ["seed=2"], 2)


def test_overrides_inside_an_open_ended_option_list_are_taken_out(recorded, monkeypatch, repo_root):
    monkeypatch.chdir(repo_root)
    assert main(["stats", "--records", "a.parquet", "seed=5", "b.parquet"]) == 0
    (args,) = recorded
    assert args.records == ["a.parquet", "b.parquet"] and args.cfg.seed == 5


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["plan", "seed"], "'seed' is not of the form key=value"),
        (["plan", "score.seed=[1,"], "override 'score.seed=[1,': cannot set score.seed"),
        (["plan", "score=3"], "params: score = 3, expected a mapping with keys bootstrap_resamples"),
        (["plan", "pipeline.runs.x.model=tiny"], "pipeline.runs.x"),
    ],
)
def test_malformed_overrides_exit_2_without_a_traceback(argv, message, recorded, monkeypatch, repo_root, capsys):
    monkeypatch.chdir(repo_root)
    rc = main(argv)
    err = capsys.readouterr().err
    if message == "pipeline.runs.x":  # a valid override (a partial run) is the plan's business, not the grammar's
        assert rc == 0
        return
    assert rc == 2 and message in err, err
    assert "Traceback" not in err and recorded == []


def test_overrides_without_a_params_file_are_refused(recorded, monkeypatch, tmp_path, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["score-official", "r.json", "--out", "o.json"]) == 0  # needs no params
    assert main(["score-official", "r.json", "--out", "o.json", "seed=1"]) == 2
    assert "no params.yaml to apply them to" in capsys.readouterr().err
    assert len(recorded) == 1


def test_cli_module_exposes_main():
    assert callable(cli.main)
