"""The smoke-scale pipeline whose outputs tests/test_golden.py keeps byte for byte.

Why: restructuring must not change a number. This runs the real commands
(`probmed.cli.main`, in process) on a small, fixed copy of ../shared/data:
curation, question generation, seeded subsets, the VQA-RAD adversarial set,
predictions (random, always-yes, always-no, and the untrained tiny LLaVA built
from config, in logit mode), scoring (every run's metrics.json and tables, the
original-format response file and the official-compatible scorer) and the
report (tables, per-category data, the HTML page). Fine-tuning is left out: it
is the slow part and nothing downstream of scoring depends on how a model got
its weights.

Only text that does not depend on the machine is kept (`collect`):

* Parquet tables as CSV; prediction tables keep ``qid, model, setting,
  response, label`` (``p_yes`` floats, latency, token counts, cost, cache key
  and error are left out: timings, and a cache key that changes with the
  answer-store key scheme, not with answers);
* generation and curation reports without ``seconds``;
* report plots (PNG) as their SHA-256 (``report/plots.sha256``): matplotlib
  and its bundled fonts are pinned, so the pixels are reproducible.

Regenerate after a deliberate change (e.g. new question-generation rules)::

    .venv/bin/python tests/golden_smoke.py --write
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import shutil
import sys
from pathlib import Path

import pandas as pd

TESTS = Path(__file__).resolve().parent
GOLDEN_DIR = TESTS / "golden"
REPO_ROOT = TESTS.parent
SHARED_DATA = REPO_ROOT.parent / "shared" / "data"

CXR_BOXED_EVERY = 40  # every 40th boxed ChestX-ray14 image (by name): 22 images, every box label
CXR_NORMAL = 6  # the first no-finding images (by name)
VQARAD_EVERY = 3  # every 3rd VQA-RAD image (by name): 105 images
PROBMED_IMAGES = 48  # seeded subset across image types: 177 questions, every qa_type
VQARAD_IMAGES = 8
PREDICTION_COLUMNS = ("qid", "model", "setting", "response", "label")
NEW_SOURCES = {"covid_ct": "covid-chestxray-ct", "brats": "brats2015-deepmedic-sample"}  # small sources with a metadata.csv
RUNS = (  # (question set, model, setting, extra overrides)
    ("probmed", "random", "vanilla", ()),
    ("probmed", "always-yes", "vanilla", ()),
    ("probmed", "always-no", "vanilla", ()),
    ("probmed", "tiny", "vanilla", ("models.tiny.mode=logits",)),
    ("vqarad-adv", "random", "vanilla", ()),
    ("vqarad-adv", "tiny", "vanilla", ("models.tiny.mode=logits",)),
    ("vqarad-adv", "tiny", "cot", ("models.tiny.max_new_tokens=4",)),  # generation; the ablation figure
)


def _copy_vqarad(src: Path, dst: Path) -> None:
    """Every VQARAD_EVERY-th image (by name) with all its questions."""
    qa_file, image_dir = "VQA_RAD Dataset Public.json", "VQA_RAD Image Folder"
    records = json.loads((src / qa_file).read_text(encoding="utf-8"))
    chosen = set(sorted({r["image_name"] for r in records})[::VQARAD_EVERY])
    (dst / image_dir).mkdir(parents=True)
    for name in sorted(chosen):
        shutil.copy(src / image_dir / name, dst / image_dir / name)
    kept = [r for r in records if r["image_name"] in chosen]
    (dst / qa_file).write_text(json.dumps(kept, indent=1), encoding="utf-8")


def make_data(shared: Path, data: Path) -> None:
    """A small copy of the raw sources (copied, not linked: image paths must not leave the run directory)."""
    _copy_vqarad(shared / "vqa-rad", data / "vqa-rad")
    shutil.copytree(shared / "medicat-sample", data / "medicat-sample")
    for small in NEW_SOURCES.values():  # whole folders: 49 chest CT and 36 brain MRI slices
        shutil.copytree(shared / small, data / small)
    src, dst = shared / "chestxray14", data / "chestxray14"
    (dst / "images").mkdir(parents=True)
    (dst / "thumbnails_256").mkdir()
    (dst / "images_no_finding").mkdir()
    lines = (src / "BBox_List_2017.csv").read_text(encoding="utf-8").splitlines()
    names = sorted({line.split(",", 1)[0] for line in lines[1:] if line.strip()})
    available = [n for n in names if (src / "images" / n).is_file() or (src / "thumbnails_256" / n).is_file()]
    chosen = set(available[::CXR_BOXED_EVERY])
    for name in sorted(chosen):
        folder = "images" if (src / "images" / name).is_file() else "thumbnails_256"
        shutil.copy(src / folder / name, dst / folder / name)
    normals = sorted(p.name for p in (src / "images_no_finding").iterdir())[:CXR_NORMAL]
    for name in normals:
        shutil.copy(src / "images_no_finding" / name, dst / "images_no_finding" / name)
    keep = [lines[0]] + [line for line in lines[1:] if line.split(",", 1)[0] in chosen]
    (dst / "BBox_List_2017.csv").write_text("\n".join(keep) + "\n", encoding="utf-8")
    wanted = chosen | {f"{Path(n).stem}.png" for n in normals}
    with gzip.open(src / "Data_Entry_2017_v2020.csv.gz", "rt", encoding="utf-8") as fh:
        rows = fh.read().splitlines()
    table = [rows[0]] + [row for row in rows[1:] if row.split(",", 1)[0] in wanted]
    with gzip.open(dst / "Data_Entry_2017_v2020.csv.gz", "wt", encoding="utf-8") as fh:
        fh.write("\n".join(table) + "\n")


def _probmed(*argv: str) -> None:
    from probmed.cli import main

    rc = main(list(argv))
    if rc != 0:
        raise RuntimeError(f"probmed {' '.join(argv)} exited {rc}")


def run_pipeline(work: Path) -> None:
    """Every stage in ``work`` (the current directory must be ``work``: paths are relative)."""
    for name in ("params.yaml", "models.yaml", "layout.yaml"):  # one parameter tree (params_schema.PARAM_FILES)
        shutil.copy(REPO_ROOT / name, work / name)
    make_data(SHARED_DATA, work / "data")
    for source, folder in (("chestxray14", "chestxray14"), ("vqarad", "vqa-rad"), ("medicat", "medicat-sample")):
        _probmed("curate", source, "--images-dir", "build/images",
                 "curate.images.workers=1", "--data", f"data/{folder}", "--out", f"build/records/{source}.parquet")
    for source, folder in NEW_SOURCES.items():
        _probmed("curate", source, "--images-dir", "build/images", "curate.images.workers=1", "--data", f"data/{folder}",
                 "--out", f"build/records/{source}.parquet")
    q = "build/questions"
    _probmed("generate", "--records", "build/records/chestxray14.parquet", "build/records/vqarad.parquet",
             "build/records/medicat.parquet", *(f"build/records/{s}.parquet" for s in NEW_SOURCES),
             "--out", f"{q}/probmed-full.parquet", "--official",
             f"{q}/probmed-full.json", "--report", f"{q}/probmed-full.report.json")
    _probmed("vqarad-adversarial", "--data", "data/vqa-rad", "--out", f"{q}/vqarad-adv-full.parquet",
             "--official", f"{q}/vqarad-adv-full.json", "--report", f"{q}/vqarad-adv-full.report.md")
    for name, n in (("probmed", PROBMED_IMAGES), ("vqarad-adv", VQARAD_IMAGES)):
        _probmed("subset", f"datasets.question_sets.{name}.max_images={n}",  # overrides first: subset's
                 f"datasets.question_sets.{name}.exclude_training_images=false",  # positional comes after them
                 f"datasets.question_sets.{name}.min_units_per_category=3",  # enough condition pairs to score; positions fall short
                 f"datasets.question_sets.{name}.min_image_types=0",
                 f"{q}/{name}-full.parquet", "--question-set", name,
                 "--out", f"{q}/{name}.parquet", "--official", f"{q}/{name}.json")
    _probmed("build-tiny-model", "--out", "build/tiny", "--questions", f"{q}/probmed-full.parquet")
    for qset, model, setting, extra in RUNS:
        pred = f"build/predictions/{qset}/{model}-{setting}.parquet"
        _probmed("predict", "--questions", f"{q}/{qset}.parquet", "--out", pred, "--no-progress",
                 f"model={model}", f"setting={setting}", f"predict.store_dir=build/answers/{qset}/{setting}",
                 "models.tiny.model_id=build/tiny", *extra)
        _probmed("score", f"{q}/{qset}.parquet", pred, "score.bootstrap_resamples=50",
                 "--out-dir", f"build/scores/{qset}/{model}/{setting}", "--name", f"{model} ({setting})")
    tiny = "build/predictions/probmed/tiny-vanilla.parquet"
    _probmed("export-responses", f"{q}/probmed.json", tiny, "--out", "build/official/responses.json")
    _probmed("score-official", "build/official/responses.json", "--out", "build/official/official_scores.json")
    _probmed("stats", "--questions", f"{q}/probmed.parquet", "--out", "build/stats")
    _probmed("report", "--out-dir", "build/report", "--scores-root", "build/scores", "tracking.enabled=false",
             "report.log_to_mlflow=false", "report.transfer_models=[random,tiny]")  # draws the transfer figure


def _text(path: Path) -> str:
    """A file's bytes as text, normalised where the machine would show (see module doc)."""
    if path.suffix == ".parquet":
        frame = pd.read_parquet(path)
        if "label" in frame.columns and "response" in frame.columns:
            frame = frame[list(PREDICTION_COLUMNS)]
        return frame.to_csv(index=False)
    text = path.read_text(encoding="utf-8")
    if path.name.endswith("report.json"):
        report = json.loads(text)
        report.pop("seconds", None)
        return json.dumps(report, indent=2, sort_keys=True) + "\n"
    return text


# What is kept, relative to the run directory (globs).
KEPT = (
    "build/records/*.parquet",
    "build/records/*.report.json",
    "build/questions/*.parquet",
    "build/questions/*.report.*",
    "build/questions/probmed.json",  # the original format (the full set's is the same rows again)
    "build/questions/vqarad-adv*.json",
    "build/predictions/*/*.parquet",
    "build/scores/*/*/*/*",
    "build/official/*",
    "build/stats/*",
    "build/report/*.*",
    "build/report/tables/*",
)


def collect(work: Path) -> dict[str, str]:
    """Golden name -> normalised text for every kept output (Parquet ``x.parquet`` -> ``x.parquet.csv``)."""
    out: dict[str, str] = {}
    for pattern in KEPT:
        for path in sorted(work.glob(pattern)):
            if path.is_file() and path.name != "work.json":  # when the work happened: timings, never golden
                name = path.relative_to(work / "build").as_posix()
                out[name + (".csv" if path.suffix == ".parquet" else "")] = _text(path)
    plots = sorted((work / "build" / "report" / "plots").glob("*.png"))
    out["report/plots.sha256"] = "".join(f"{hashlib.sha256(p.read_bytes()).hexdigest()}  {p.name}\n" for p in plots)
    return out


def build(work: Path) -> dict[str, str]:
    """Run the pipeline in ``work`` and return the collected outputs."""
    cwd = Path.cwd()
    os.chdir(work)
    try:
        run_pipeline(work)
    finally:
        os.chdir(cwd)
    return collect(work)


def golden() -> dict[str, str]:
    return {p.relative_to(GOLDEN_DIR).as_posix(): p.read_text(encoding="utf-8")
            for p in sorted(GOLDEN_DIR.rglob("*")) if p.is_file()}


def write_golden(outputs: dict[str, str]) -> None:
    if GOLDEN_DIR.exists():
        shutil.rmtree(GOLDEN_DIR)
    for name, text in outputs.items():
        path = GOLDEN_DIR / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    import tempfile

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="replace tests/golden with this code's outputs")
    parser.add_argument("--keep", help="run in this (new) directory and keep it, instead of a temporary one")
    args = parser.parse_args(argv)
    os.environ.update(HF_HUB_OFFLINE="1", DVC_NO_ANALYTICS="1", MLFLOW_DISABLE_TELEMETRY="true",
                      TOKENIZERS_PARALLELISM="false")
    with tempfile.TemporaryDirectory(prefix="probmed-golden-") as tmp:
        work = Path(args.keep) if args.keep else Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        outputs = build(work.resolve())
    if args.write:
        write_golden(outputs)
        print(f"wrote {len(outputs)} golden files to {GOLDEN_DIR}")
        return 0
    expected = golden()
    differ = sorted(k for k in set(outputs) | set(expected) if outputs.get(k) != expected.get(k))
    print("\n".join(differ) if differ else f"all {len(outputs)} outputs match the goldens")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
