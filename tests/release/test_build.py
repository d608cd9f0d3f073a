"""`probmed release` on a real 20-image set: the folder, loading it with `datasets`, the gate, versions, atomicity."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from probmed.cli import main
from probmed.core.params_schema import Release
from probmed.core.records import write_questions
from probmed.core.release_format import read_question_file
from probmed.release.table import RELEASE_COLUMNS

VERSION = Release().version  # the configured release version (params.yaml release.version)


def release(small_set, out: Path, repo_root: Path, *extra: str, questions: Path | None = None, audit: str = "passing_audit"):
    args = ["release", str(questions or small_set["questions"]), "--out-dir", str(out), "--image-root",
            str(small_set["image_root"]), "--params", str(repo_root / "params.yaml")]
    if audit:
        args += ["--audit", str(small_set[audit])]
    return main(args + list(extra))


def tree(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def card_parts(folder: Path) -> tuple[dict, list[str]]:
    _, front, body = (folder / "README.md").read_text().split("---\n", 2)
    return yaml.safe_load(front), body.strip().splitlines()


@pytest.fixture(scope="module")
def released(small_set, repo_root, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("release")
    assert release(small_set, out, repo_root) == 0
    return out / "small" / VERSION


def test_the_folder_holds_data_card_croissant_citation_and_the_original_format(released):
    names = {p.relative_to(released).as_posix() for p in released.rglob("*") if p.is_file()}
    assert {"README.md", "croissant.json", "CITATION.cff", "test.json", "SHA256SUMS", "release.json"} <= names
    assert {n for n in names if n.startswith("data/")} == {
        "data/test-commercial-paper.parquet", "data/test-commercial-other.parquet", "data/test-noncommercial-paper.parquet"}
    assert len([n for n in names if n.startswith("images/")]) == 20
    meta, body = card_parts(released)
    assert meta["license"] == "other" and meta["task_categories"] == ["visual-question-answering"]
    assert meta["annotations_creators"] == ["machine-generated"] and meta["size_categories"] == ["n<1K"]
    assert [c["config_name"] for c in meta["configs"]] == ["all", "commercial", "paper"]
    assert body[0].startswith(f"# small {VERSION}+")  # audited: nothing before the title
    for heading in ("## Audit", "## Image-type mix beside the paper's Table 1", "## Known limitations", "## How to score",
                    "## Sources, licences and citations", "## Citation"):
        assert heading in body
    info = json.loads((released / "release.json").read_text())
    cff = yaml.safe_load((released / "CITATION.cff").read_text())
    crois = json.loads((released / "croissant.json").read_text())
    assert info["version"] == cff["version"] == crois["version"] and info["version"] in body[0]


def test_version_is_the_semver_plus_the_hash_of_the_listed_files(released):
    info = json.loads((released / "release.json").read_text())
    sums = (released / "SHA256SUMS").read_text()
    assert hashlib.sha256(sums.encode()).hexdigest() == info["content_sha256"]
    assert info["version"] == VERSION + "+" + info["content_sha256"][:12]
    listed = dict(reversed(line.split("  ", 1)) for line in sums.splitlines())
    assert listed == {k: v for k, v in tree(released).items() if k.startswith(("data/", "images/")) or k == "test.json"}
    crois = json.loads((released / "croissant.json").read_text())
    shas = {d["contentUrl"]: d["sha256"] for d in crois["distribution"] if d["@type"] == "cr:FileObject"}
    assert shas and all(listed[p] == s for p, s in shas.items())
    assert crois["conformsTo"] == "http://mlcommons.org/croissant/1.1" and crois["citeAs"].startswith("@misc{")
    assert {"rai:dataCollection", "rai:dataBiases", "rai:dataLimitations", "rai:personalSensitiveInformation"} <= set(crois)


def test_datasets_loads_every_config_offline_with_decoded_images(released, small_set, tmp_path, monkeypatch):
    import datasets

    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    q = small_set["frame"]
    expected = {"all": len(q), "commercial": int((q["licence"] != "CC BY-NC 4.0").sum()),
                "paper": int((q["image_type"] != "Unknown - Brain").sum())}
    assert datasets.get_dataset_config_names(str(released)) == list(expected)
    for config, n in expected.items():
        ds = datasets.load_dataset(str(released), config, split="test", cache_dir=str(tmp_path / "hf"))
        assert len(ds) == n and list(ds.features) == list(RELEASE_COLUMNS)
        assert isinstance(ds.features["image"], datasets.Image)
    ds = datasets.load_dataset(str(released), split="test", cache_dir=str(tmp_path / "hf"))  # the default: all
    by_qid = {r["qid"]: r for r in q.to_dict("records")}
    for row in ds.select(range(0, len(ds), 7)):
        src = by_qid[row["qid"]]
        assert (row["answer"], row["pair_id"], row["category"], row["licence"]) == (
            src["answer"], src["pair_id"], src["category"], src["licence"])
        with open(small_set["image_root"] / src["image_path"], "rb") as f:
            from PIL import Image

            original = Image.open(f)
            original.load()
        image = row["image"]
        assert image.size == original.size and image.tobytes() == original.tobytes()


def test_test_json_is_the_original_format_of_the_same_questions(released, small_set):
    back = read_question_file(released / "test.json")
    q = small_set["frame"]
    assert back["qid"].tolist() == q["qid"].tolist() and back["answer"].tolist() == q["answer"].tolist()
    assert all((released / p).is_file() for p in back["image_path"].unique())


def test_a_set_that_fails_its_gate_is_refused_unless_allowed(small_set, repo_root, tmp_path, capsys):
    assert release(small_set, tmp_path, repo_root, audit="audit") == 2
    err = capsys.readouterr().err
    assert "failed its audit gate" in err and "oracle" in err and "--allow-unaudited" in err
    assert not (tmp_path / "small" / VERSION).exists()
    assert not [p for p in (tmp_path / "small").iterdir()] if (tmp_path / "small").exists() else True
    assert release(small_set, tmp_path, repo_root, "--allow-unaudited", audit="audit") == 0
    meta, body = card_parts(tmp_path / "small" / VERSION)
    assert body[0].startswith("**UNAUDITED: released with --allow-unaudited; the set failed its audit gate: ")
    assert "modality" in body[0] and "oracle" in body[0]
    assert "UNAUDITED" in meta["pretty_name"]


def test_a_set_without_an_audit_is_refused(small_set, repo_root, tmp_path, capsys):
    lone = tmp_path / "lone.parquet"
    lone.write_bytes(small_set["questions"].read_bytes())
    assert release(small_set, tmp_path / "out", repo_root, questions=lone, audit="") == 2
    assert "has no audit" in capsys.readouterr().err and not (tmp_path / "out" / "lone" / VERSION).exists()


def test_same_content_is_kept_other_content_needs_a_new_version(released, small_set, repo_root, tmp_path, capsys):
    out = released.parent.parent
    before = tree(released)
    assert release(small_set, out, repo_root) == 0  # the same content again: nothing changes
    assert '"created": false' in capsys.readouterr().out and tree(released) == before
    q = small_set["frame"]
    fewer = tmp_path / "small.parquet"
    write_questions(q[q["image_id"] != q["image_id"].iat[0]].reset_index(drop=True), fewer)
    assert release(small_set, out, repo_root, questions=fewer) == 2
    assert "exists with other content" in capsys.readouterr().err and tree(released) == before
    assert release(small_set, out, repo_root, "release.version=1.0.1", questions=fewer) == 0
    assert json.loads((out / "small" / "1.0.1" / "release.json").read_text())["version"].startswith("1.0.1+")
    assert sorted(p.name for p in (out / "small").iterdir()) == sorted([VERSION, "1.0.1"])


def test_a_killed_release_leaves_the_previous_version_intact(small_set, repo_root, tmp_path):
    out = tmp_path / "out"
    assert release(small_set, out, repo_root) == 0
    before = tree(out / "small" / VERSION)
    script = ("import os, sys; import probmed.release.build as b; "
              "b.describe = lambda *a: os.kill(os.getpid(), 9); "
              "from probmed.cli import main; sys.exit(main(sys.argv[1:]))")
    args = ["release", str(small_set["questions"]), "--out-dir", str(out), "--image-root", str(small_set["image_root"]),
            "--audit", str(small_set["passing_audit"]), "--params", str(repo_root / "params.yaml"), "release.version=2.0.0"]
    proc = subprocess.run([sys.executable, "-c", script, *args], env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
                          capture_output=True, text=True)
    assert proc.returncode == -9
    left = sorted(p.name for p in (out / "small").iterdir())
    assert "2.0.0" not in left and VERSION in left and any(n.startswith(".2.0.0.") for n in left)  # staging only
    assert tree(out / "small" / VERSION) == before
    assert release(small_set, out, repo_root, "release.version=2.0.0") == 0  # the next run clears the staging folder
    assert sorted(p.name for p in (out / "small").iterdir()) == sorted([VERSION, "2.0.0"])


def test_a_missing_image_is_named_and_nothing_is_written(small_set, repo_root, tmp_path, capsys):
    q = small_set["frame"].copy()
    q.loc[q["image_id"] == q["image_id"].iat[0], "image_path"] = "vqa-rad/VQA_RAD Image Folder/no-such-image.jpg"
    broken = tmp_path / "broken.parquet"
    write_questions(q, broken)
    assert release(small_set, tmp_path / "out", repo_root, questions=broken) == 2
    err = capsys.readouterr().err
    assert q["image_id"].iat[0] in err and "not found" in err
    assert not (tmp_path / "out").exists()  # no empty <out>/broken/ left behind, and no --out-dir it made


def test_a_failed_release_into_an_existing_folder_leaves_it_as_it_was(small_set, repo_root, tmp_path, capsys):
    """A release refused after writing began (other content under the version) leaves the set's folder as it was:
    its versions, no staging folder, no lock file beside it."""
    out = tmp_path / "out"
    assert release(small_set, out, repo_root) == 0
    before = tree(out)
    q = small_set["frame"]
    fewer = tmp_path / "small.parquet"
    write_questions(q[q["image_id"] != q["image_id"].iat[0]].reset_index(drop=True), fewer)
    assert release(small_set, out, repo_root, questions=fewer) == 2
    assert "exists with other content" in capsys.readouterr().err
    assert tree(out) == before and sorted(p.name for p in out.rglob(".*")) == []


@pytest.mark.parametrize("name", ["../../evil", "..", ".", "a/b", "<tmp>/abs", "a\nb", 'a"b', "a'b", ".hidden", "-x",
                                  "", "x" * 101])
def test_a_name_that_is_not_one_folder_name_is_refused_and_nothing_is_written(name, small_set, repo_root, tmp_path,
                                                                              capsys):
    """The probe's `--name ../../evil` wrote a whole release two levels above --out-dir (exit 0); an absolute name
    (here one inside the test's folder) wrote there."""
    name = name.replace("<tmp>", str(tmp_path))
    out = tmp_path / "a" / "b" / "out"
    out.mkdir(parents=True)
    assert release(small_set, out, repo_root, f"--name={name}") == 2
    err = capsys.readouterr().err
    assert f"--name = {name!r}: expected a name of ASCII letters" in err and err.count("\n") == 1
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")) == ["a", "a/b", "a/b/out"]


def test_a_file_name_that_is_not_a_folder_name_needs_a_name(small_set, repo_root, tmp_path, capsys):
    odd = tmp_path / "my set.parquet"
    odd.write_bytes(small_set["questions"].read_bytes())
    assert release(small_set, tmp_path / "out", repo_root, questions=odd) == 2
    assert f"the set's name (the stem of {odd}; --name gives another) = 'my set'" in capsys.readouterr().err
    assert release(small_set, tmp_path / "out", repo_root, "--name", "my-set", questions=odd) == 0
    assert (tmp_path / "out" / "my-set" / VERSION / "release.json").is_file()


@pytest.mark.parametrize("version", ["1.0", "1", "v1.0.0", "1.0.0/..", "../1.0.0"])
def test_a_version_that_is_not_a_semantic_version_is_refused(version, small_set, repo_root, tmp_path, capsys):
    """The probe's `release.version=1.0` (a YAML float) ended in an AttributeError, exit 4."""
    assert release(small_set, tmp_path / "out", repo_root, f"release.version={version}") == 2
    assert "params: release.version = " in capsys.readouterr().err and not (tmp_path / "out").exists()


RUN = "import sys; from probmed.cli import run; sys.argv = ['probmed', *sys.argv[1:]]; run()"
HELD = ("import pathlib, sys, time; import probmed.release.build as b; describe = b.describe\n"
        "gate = pathlib.Path(sys.argv[1])\n"
        "def held(*args):\n"
        "    gate.with_suffix('.inside').touch()\n"
        "    while not gate.exists():\n"
        "        time.sleep(0.05)\n"
        "    describe(*args)\n"
        "b.describe = held\n"
        "from probmed.cli import run; sys.argv = ['probmed', *sys.argv[2:]]; run()")


def wait_for(test, what: str, timeout_s: float = 180) -> None:
    deadline = time.monotonic() + timeout_s
    while not test():
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.1)


def test_two_releases_of_one_version_at_once_both_end_cleanly(small_set, repo_root, tmp_path):
    """Two real `probmed release` processes of one version: the first is held in the middle of its release (content
    written, not yet described) while the second starts. The second waits for the first, then finds the version
    written with the same content (nothing to do). Before, the second removed the first's staging folder and the
    first crashed (FileNotFoundError, exit 4)."""
    out = tmp_path / "out"
    gate = tmp_path / "go"
    args = ["release", str(small_set["questions"]), "--out-dir", str(out), "--image-root", str(small_set["image_root"]),
            "--audit", str(small_set["passing_audit"]), "--params", str(repo_root / "params.yaml")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    logs = {name: (tmp_path / f"{name}.out", tmp_path / f"{name}.err") for name in ("first", "second")}
    with open(logs["first"][0], "w") as o1, open(logs["first"][1], "w") as e1:
        first = subprocess.Popen([sys.executable, "-c", HELD, str(gate), *args], env=env, stdout=o1, stderr=e1)
        try:
            wait_for(lambda: gate.with_suffix(".inside").exists() or first.poll() is not None, "the first release")
            with open(logs["second"][0], "w") as o2, open(logs["second"][1], "w") as e2:
                second = subprocess.Popen([sys.executable, "-c", RUN, *args], env=env, stdout=o2, stderr=e2)
                try:
                    wait_for(lambda: "waiting for release" in logs["second"][1].read_text() or second.poll() is not None,
                             "the second release to wait or end")
                    gate.touch()
                    codes = first.wait(timeout=300), second.wait(timeout=300)
                finally:
                    second.kill()
        finally:
            gate.touch()
            first.kill()
    out1, err1, out2, err2 = (path.read_text() for pair in logs.values() for path in pair)
    assert "Traceback" not in err1 + err2 and codes == (0, 0), err1 + err2
    assert f"waiting for release {out / 'small' / VERSION}, held by pid {first.pid}" in err2
    assert json.loads(out1)["created"] is True and json.loads(out2)["created"] is False
    assert sorted(p.name for p in (out / "small").iterdir()) == [VERSION] and not list(out.glob(".*"))
    assert json.loads((out / "small" / VERSION / "release.json").read_text())["version"].startswith(VERSION + "+")


def test_the_harness_folder_and_the_vlmevalkit_tsv(released, small_set):
    harness = released / "harness"
    spec = json.loads((harness / "probmed_task.json").read_text())
    assert spec["prompt"] == "{question} Answer with a single word: yes or no." and spec["task"] == "probmed_small"
    assert (harness / "probmed_answer_parser.py").read_text().startswith('"""Free-text model response')
    task = yaml.load((harness / "lmms_eval" / "probmed_small.yaml").read_text(), Loader=yaml.BaseLoader)  # !function kept
    assert task["dataset_path"] == "parquet" and task["doc_to_target"] == "answer"
    assert task["dataset_kwargs"]["data_files"]["test"] == json.loads((released / "release.json").read_text())["configs"]["all"]["files"]
    assert [m["metric"] for m in task["metric_list"]] == ["strict_overall"] + [f"strict_{c}" for c in spec["categories"]]
    assert "!function utils.process_results" in " ".join((harness / "lmms_eval" / "probmed_small.yaml").read_text().replace("'", "").split())
    lines = (harness / "vlmevalkit" / "probmed_small.tsv").read_text().splitlines()
    head, rows = lines[0].split("\t"), [dict(zip(lines[0].split("\t"), line.split("\t"))) for line in lines[1:]]
    assert head[:5] == ["index", "image", "question", "answer", "category"] and len(rows) == len(small_set["frame"])
    first = {}
    for row in rows:
        assert row["answer"] in ("Yes", "No")
        if row["image_id"] in first:
            assert row["image"] == first[row["image_id"]]  # the index of the row holding its base64
        else:
            first[row["image_id"]] = row["index"]
            assert base64.b64decode(row["image"]) == (released / "images" / f"{row['image_id']}.jpg").read_bytes()


def test_a_same_content_release_refreshes_what_describes_it(small_set, repo_root, tmp_path):
    out = tmp_path / "out"
    assert release(small_set, out, repo_root) == 0
    folder = out / "small" / VERSION
    data = {k: v for k, v in tree(folder).items() if k.startswith(("data/", "images/")) or k == "test.json"}
    assert release(small_set, out, repo_root, "settings.vanilla='{question} Reply yes or no.'") == 0
    assert json.loads((folder / "harness" / "probmed_task.json").read_text())["prompt"] == "{question} Reply yes or no."
    assert {k: v for k, v in tree(folder).items() if k in data} == data
    assert not [p for p in folder.iterdir() if p.name.startswith(".")]


def test_the_card_shows_the_blind_ceiling_and_what_a_batching_harness_would_leak(released, small_set):
    """The card's yardstick is the blind ceiling on the scorer's unit beside random and the floor, and it states,
    with the audit's numbers, what showing an image's questions together would leak."""
    _, body = card_parts(released)
    text = "\n".join(body)
    audit = json.loads((small_set["passing_audit"]).read_text())
    assert "The yardstick: the blind ceiling" in text and "| category | unit | units | exact random | floor |" in text
    modality = next(c for c in audit["blind_ceiling"]["cells"] if c["category"] == "modality" and c["unit"] == "pair")
    assert f"| modality | pair | {modality['units']} | 25.0 |" in text
    leak = audit["context_leaks"]["leaks"]["condition_pair_implies_abnormal"]
    assert "Ask one question per prompt." in text and f"{leak['implied']} questions" in text
    assert "the blind ceiling of the set" not in text  # the per-text oracle is no longer called that
