"""``<release>/harness/``: the task spec, the copied task code, the lmms-eval YAML and the VLMEvalKit TSV.

Everything here is derived from the release's rows and this package's code, so
it sits outside the content hash (a fixed task needs no new data version) and is
refreshed on a same-content re-release like the card.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pandas as pd
import yaml

from probmed.core import answer_parser
from probmed.infra.io import write_text_atomic
from probmed.release.harness import strict_pairs
from probmed.release.harness.strict_pairs import CATEGORIES

HARNESS_DIR = "harness"
_HERE = Path(__file__).resolve().parent  # the task files import their harness, so they are read, never imported
# file in the release -> the source copied verbatim
COPIED: dict[str, Path] = {
    "probmed_answer_parser.py": Path(answer_parser.__file__),
    "probmed_strict.py": Path(strict_pairs.__file__),
    "inspect_task.py": _HERE / "inspect_task.py",
    "lmms_eval/utils.py": _HERE / "lmms_eval_utils.py",
}
TSV_COLUMNS = ("index", "image", "question", "answer", "category", "image_id", "pair_id", "qid")


def task_name(set_name: str) -> str:
    """The harness task name of a set: probmed_<set> with underscores."""
    return "probmed_" + "".join(c if c.isalnum() else "_" for c in set_name)


def task_spec(name: str, version: str, prompt: str, configs: list[str]) -> dict[str, object]:
    """probmed_task.json: what the copied task code reads."""
    return {"name": name, "task": task_name(name), "version": version, "prompt": prompt,
            "categories": list(CATEGORIES), "configs": configs}


class _Function(str):
    """A value lmms-eval reads as ``!function module.name``."""


class _TaskDumper(yaml.SafeDumper):
    """YAML with lmms-eval's ``!function`` tag."""


_TaskDumper.add_representer(_Function, lambda dumper, value: dumper.represent_scalar("!function", str(value)))


def lmms_eval_yaml(name: str, version: str, files: list[str]) -> str:
    """The lmms-eval task: config ``all``'s Parquet files through `datasets` (paths relative to the release folder,
    where lmms-eval runs)."""
    metrics = [{"metric": f"strict_{c}", "aggregation": _Function(f"utils.aggregate_{c}"), "higher_is_better": True}
               for c in ["overall", *CATEGORIES]]
    doc = {"task": task_name(name), "dataset_path": "parquet", "dataset_kwargs": {"data_files": {"test": files}},
           "test_split": "test",
           "output_type": "generate_until", "doc_to_visual": _Function("utils.doc_to_visual"),
           "doc_to_text": _Function("utils.doc_to_text"), "doc_to_target": "answer",
           "generation_kwargs": {"max_new_tokens": 16, "temperature": 0, "do_sample": False},
           "process_results": _Function("utils.process_results"), "metric_list": metrics,
           "metadata": {"version": version}}
    return yaml.dump(doc, Dumper=_TaskDumper, sort_keys=False, width=1000)


def vlmevalkit_tsv(questions: pd.DataFrame, image_files: dict[str, Path]) -> str:
    """Yes/no TSV in VLMEvalKit's layout: an image's first row carries its base64, later rows that row's index."""
    lines = ["\t".join(TSV_COLUMNS)]
    first: dict[str, int] = {}
    for index, row in enumerate(questions.itertuples(index=False)):
        image_id = str(row.image_id)
        if image_id in first:
            image = str(first[image_id])
        else:
            first[image_id] = index
            image = base64.b64encode(image_files[image_id].read_bytes()).decode("ascii")
        fields = [str(index), image, row.question, row.answer.capitalize(), row.category, image_id, row.pair_id, row.qid]
        lines.append("\t".join(" ".join(str(f).split()) for f in fields))
    return "\n".join(lines) + "\n"


def write_harness(folder: Path, questions: pd.DataFrame, image_files: dict[str, Path], name: str, version: str,
                  prompt: str, configs: dict[str, list[str]]) -> None:
    """The harness folder of a release folder; ``configs``: each config's Parquet files."""
    harness = folder / HARNESS_DIR
    spec = task_spec(name, version, prompt, list(configs))
    write_text_atomic(json.dumps(spec, indent=2) + "\n", harness / "probmed_task.json")
    for rel, source in COPIED.items():
        write_text_atomic(source.read_text(encoding="utf-8"), harness / rel)
    write_text_atomic(lmms_eval_yaml(name, version, configs["all"]), harness / "lmms_eval" / f"{spec['task']}.yaml")
    write_text_atomic(vlmevalkit_tsv(questions, image_files), harness / "vlmevalkit" / f"{spec['task']}.tsv")
    write_text_atomic(harness_readme(str(spec["task"]), name), harness / "README.md")


def harness_readme(task: str, name: str) -> str:
    """How to run each harness on this release (also in the card)."""
    return f"""# Harness tasks for {name}

Every task shows the image and the vanilla prompt (`probmed_task.json`), parses the answer as
`probmed score` does (`probmed_answer_parser.py`) and reports strict pair accuracy per category and
the paper's weighted overall (`probmed_strict.py`): the same numbers as `probmed score` on the same answers.

- **inspect_ai** (`pip install inspect-ai datasets pillow`):
  `inspect eval harness/inspect_task.py --model openai/<model> [-T config=commercial]`
  (an OpenAI-compatible server: `OPENAI_BASE_URL`, `-M responses_api=false`).
- **lmms-eval**, run from the release folder (the task reads config `all`'s Parquet files by relative path):
  `lmms-eval --include_path harness/lmms_eval --tasks {task} --model <model> --model_args ... --log_samples`.
- **VLMEvalKit** (not on PyPI; not run here): `vlmevalkit/{task}.tsv` has VLMEvalKit's yes/no columns
  (`index, image, question, answer, category`; an image's later rows give the index of the row holding
  its base64, as VLMEvalKit's image datasets allow) plus `image_id, pair_id, qid`. Copy it to
  `$LMUData/{task}.tsv` and register it as a yes/no image dataset (a subclass of `ImageYORNDataset` with
  `DATASET_URL = {{"{task}": ""}}`); its built-in yes/no score is per question, so score strict pairs
  with `probmed_strict.strict_scores` on its per-question answers.
"""
