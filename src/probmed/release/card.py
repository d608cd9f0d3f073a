"""The dataset card (README.md): the Hub's YAML metadata, then what a reviewer needs to trust and use the set.

The metadata is what the Hugging Face Hub and `datasets` read (configs and their
data files, features, sizes, licence, task); the body says how the set was built,
what its audit measured, how its image-type mix compares with the paper's Table 1,
its known limitations, each source's citation and licence, how to score it, and
how to cite this exact version.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import yaml

from probmed.core.categories import CATEGORY_SPECS
from probmed.core.licences import commercial_use
from probmed.core.markdown import markdown_table
from probmed.release.card_text import FIELD_MEANINGS, INTENDED_USE, LIMITATIONS, SCORING, VALUE_FIELDS, built_section
from probmed.release.citations import PROBMED_PAPER_BIBTEX, citation_of
from probmed.release.manifest import Release
from probmed.release.table import IMAGE_COLUMN, RELEASE_COLUMNS, SPLIT

_HUB_LICENCES = {"CC0 1.0": "cc0-1.0", "CC0": "cc0-1.0", "CC BY 4.0": "cc-by-4.0", "CC BY-NC-SA 4.0": "cc-by-nc-sa-4.0",
                 "CC BY-NC 4.0": "cc-by-nc-4.0"}
_SIZES = ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M"))


def size_category(n: int) -> str:
    """The Hub's size bucket of n rows."""
    return next((label for limit, label in _SIZES if n < limit), "n>1M")


def _features_yaml() -> list[dict[str, str]]:
    return [{"name": c, "dtype": "image" if c == IMAGE_COLUMN else "string"} for c in RELEASE_COLUMNS]


def metadata(release: Release) -> dict[str, Any]:
    """The Hub's YAML metadata block."""
    licences = sorted(set(release.questions["licence"].fillna("").astype(str)))
    hub_licence = _HUB_LICENCES.get(licences[0]) if len(licences) == 1 else None
    meta: dict[str, Any] = {"pretty_name": f"{release.name}: ProbMed-style probing pairs for medical VQA"
                            + (" (UNAUDITED)" if release.unaudited_reason else ""),
                            "license": hub_licence or "other"}
    if hub_licence is None:
        meta["license_name"] = "per-source"
        meta["license_details"] = "Each image keeps its source's licence (column `licence`; table in the card)."
    meta.update({
        "language": ["en"], "task_categories": ["visual-question-answering"],
        "tags": ["medical", "radiology", "probing", "adversarial-pairs", "hallucination", "yes-no", "probmed"],
        "size_categories": [size_category(len(release.questions))],
        "source_datasets": [f"extended|{s}" for s in sorted(release.questions["source"].unique())],
        "annotations_creators": ["machine-generated"],
        "configs": [{"config_name": c.name, **({"default": True} if c.name == "all" else {}),
                     "data_files": [{"split": SPLIT, "path": [s.path for s in c.shards]}]} for c in release.configs],
        "dataset_info": [{"config_name": c.name, "features": _features_yaml(),
                          "splits": [{"name": SPLIT, "num_bytes": c.arrow_bytes, "num_examples": c.questions}],
                          "download_size": sum(release.file_sizes[s.path] for s in c.shards),
                          "dataset_size": c.arrow_bytes} for c in release.configs],
    })
    return meta


def _head(release: Release) -> list[str]:
    out = []
    if release.unaudited_reason:
        out += [f"**UNAUDITED: released with --allow-unaudited; {release.unaudited_reason}.**", ""]
    out += [f"# {release.name} {release.version}", "",
            f"A ProbMed-style probing benchmark for medical visual question answering: {len(release.questions):,} closed "
            f"yes/no questions on {release.images:,} radiology images, each ground-truth question paired with an "
            "adversarial twin about a hallucinated attribute. A pair counts only when both answers are right.", "",
            f"Version `{release.version}`: the semantic version `{release.semver}` (this folder's name, "
            f"`{release.name}/{release.semver}`) plus the first 12 hex digits of the content hash (sha256 of "
            f"`SHA256SUMS`, which lists every data file: `{release.digest}`).", ""]
    return out


def _load_section(release: Release) -> list[str]:
    rows = pd.DataFrame([{"config": c.name, "questions": f"{c.questions:,}", "images": f"{c.images:,}",
                          "rows": c.description} for c in release.configs])
    out = ["## Load", "", "```python", "from datasets import load_dataset",
           f'ds = load_dataset("path/to/{release.name}/{release.semver}", "all", split="{SPLIT}")   # or "commercial", "paper"',
           'row = ds[0]; row["image"]  # a PIL image', "```", "", markdown_table(rows)]
    for name in release.omitted_configs:
        out += [f"Config `{name}` is left out: no row of this set belongs to it.", ""]
    out += ["Fields (every one a string but `image`), with the values that occur in the rows of config `all`:", "",
            markdown_table(pd.DataFrame(field_rows(release.questions))),
            "A prompt shows the image and `question` only; `answer` and `evidence` are labels. `test.json` holds the "
            "same questions in the original ProbMed release's format (its `image` paths point into `images/`).", ""]
    return out


def field_values(released: pd.DataFrame, column: str) -> dict[str, int]:
    """The values of one field of the released rows (release.table.text_rows) with their row counts (missing as
    `unknown`/empty)."""
    counts = released[column].value_counts()
    return {str(v): int(counts[v]) for v in sorted(counts.index)}


def field_rows(questions: pd.DataFrame) -> list[dict[str, str]]:
    """The card's field table: each field, its meaning and, for the categorical ones, every value with its rows."""
    from probmed.release.table import text_rows

    released = text_rows(questions)
    rows = []
    for c in RELEASE_COLUMNS:
        values = ""
        if c in VALUE_FIELDS:
            values = ", ".join(f"`{v}` ({n:,})" if v else f"empty ({n:,})" for v, n in field_values(released, c).items())
        rows.append({"field": c, "meaning": FIELD_MEANINGS[c], "values (rows)": values})
    return rows


def limitations(release: Release) -> list[str]:
    """The known limitations, measured on this set where a number exists, then the fixed ones."""
    from probmed.release.card_text import measured_limitations

    return [*measured_limitations(release), *LIMITATIONS]


def _audit_section(release: Release) -> list[str]:
    from probmed.benchmark.audit.report import baseline_rows

    out = ["## Audit", ""]
    audit, gate = release.audit, release.gate
    if audit is None:
        return out + ["This set has no audit: nothing below is measured.", ""]
    verdict = "passed" if gate and gate["passed"] else "FAILED"
    out += [f"Gate ({verdict}): a text-only oracle (the majority answer of each question text, learnt on other images) "
            "may not beat exact random by more than the margin in any category, and no lint finding or contradicted "
            "\"no\" may remain.", ""] + [f"- {f}" for f in (gate or {}).get("failures", [])]
    out += _ceiling_lines(audit)
    out += ["", "For reference, strict accuracy (%) of the per-text majority oracle and the blind baseline beside exact "
            "random (per-text majority is 50/50 by construction once texts balance: it is not the yardstick):", "",
            markdown_table(pd.DataFrame(baseline_rows(audit)))]
    out += _context_lines(audit)
    fixed = {c: m for c, m in ((audit.get("fixed_policy") or {}).get("by_category") or {}).items() if m["accuracy"] is not None}
    if fixed:
        out += ["Upper bound for the categories with few texts (the best fixed answer per text, chosen with the answers "
                "in hand; not a model): " + ", ".join(f"{c} {m['accuracy']:.1f} vs random {m['random']:.1f}"
                                                      for c, m in fixed.items()) + ".", ""]
    c, ev = audit["contradictions"], audit["evidence"]["all"]
    truth = (f"{c['count']} of {c['checked_no_answers']:,} \"no\" answers contradicted by the image's own metadata or QA"
             if c.get("checked") else "not checked (the audit had no image records)")
    out += [f"Truth check: {truth}; {100 * ev['known_absent_share']:.1f}% of the \"no\" answers rest on a label table or "
            f"QA answer (known absent), the rest on absence of mention; {audit['lint']['findings']} grammar lint findings.", ""]
    return out


def _ceiling_lines(audit: dict[str, Any]) -> list[str]:
    """The blind ceiling on the scorer's unit per category beside random and the floor; the other units by name."""
    from probmed.benchmark.audit.blind_ceiling import BlindCeiling, learner_label

    ceiling = BlindCeiling.from_json(audit.get("blind_ceiling"))
    if ceiling is None:
        return ["", "The audit has no blind ceiling per unit: re-run probmed audit on the set."]
    rows = [{"category": c.category, "unit": c.unit, "units": c.units, "exact random": round(c.random, 1),
             "floor": None if c.floor is None else round(c.floor, 1), "blind ceiling": round(c.ceiling, 1),
             "reached by": learner_label(c.reached_by)} for c in ceiling.cells if c.paper_unit]
    others = ", ".join(f"{c.category} {c.unit} {c.ceiling:.1f} (random {c.random:.1f})" for c in ceiling.cells
                       if not c.paper_unit and not c.exempt)
    return ["", "The yardstick: the blind ceiling, the best strict accuracy (%) a model that never sees the image "
            "reaches (fixed answer tables keyed on the text, image type + text or source + text, searched for the "
            "unit's accuracy, and a learnt text-only model, each learnt on 4/5 of the images and scored on the rest), "
            "on the scorer's unit, beside exact random and the floor n/(4(n-1)) of a pair over n values. A model "
            "between random and the ceiling is above random but below a blind policy, not 'worse than random':", "",
            markdown_table(pd.DataFrame(rows)), f"Other units: {others}." if others else ""]


def _context_lines(audit: dict[str, Any]) -> list[str]:
    """What a harness that showed an image's questions together would leak (audit.leaks), with the numbers."""
    leaks = audit.get("context_leaks")
    if not leaks:
        return []
    parts = [f"{e['what']}: {e['implied']} questions ({100 * e['share_of_questions']:.1f}%), the implied answer right "
             f"on {e['right']}" for e in leaks["leaks"].values()]
    gain = leaks["all"]["strict_gain"]["overall"]
    return ["", "Ask one question per prompt. A harness that showed a model all questions of an image at once would "
            "leak answers without the image: " + "; ".join(parts) + (f". Together they lift strict accuracy "
            f"{gain:.1f} points above exact random (original weighting) for a model that answers by them and guesses "
            "elsewhere." if gain is not None else ".") + " Every task and file of this release, and probmed's own "
            "prompts, carry one question each.", ""]


def _mix_section(release: Release) -> list[str]:
    from probmed.reporting.table1 import table1_vs_paper, to_markdown

    return ["## Image-type mix beside the paper's Table 1", "",
            "Images and questions per image type (% of the set) beside the paper's shares (— where its text gives none):",
            "", to_markdown(table1_vs_paper(release.questions))]


def _sources_section(release: Release) -> list[str]:
    q = release.questions
    rows = []
    for source, group in q.groupby("source", sort=True):
        cite = citation_of(str(source))
        licences = sorted(set(group["licence"].fillna("").astype(str)))
        rows.append({"source": source, "images": group["image_id"].nunique(), "questions": len(group),
                     "licences (per image)": "; ".join(licences), "commercial use": "yes" if all(map(commercial_use, licences))
                     else ("no" if not any(map(commercial_use, licences)) else "some images"),
                     "terms": cite.terms, "citation": f"{cite.reference} <{cite.url}>"})
    return ["## Sources, licences and citations", "",
            "Every image keeps its source's licence (`licence` column); the `commercial` config keeps only rows whose "
            "licence allows commercial use.", "", markdown_table(pd.DataFrame(rows))]


def _harness_section(release: Release) -> list[str]:
    from probmed.release.harness.files import task_name

    task = task_name(release.name)
    return ["## Run in a harness", "",
            "`harness/` holds tasks that show the image and the vanilla prompt, parse answers and score strict pairs as "
            "`probmed score` does (`harness/README.md`):", "", "```bash",
            "inspect eval harness/inspect_task.py --model openai/<model> -M responses_api=false   # -T config=commercial",
            f"lmms-eval --include_path harness/lmms_eval --tasks {task} --model <model> --model_args ...   # from this folder",
            "```", "", f"`harness/vlmevalkit/{task}.tsv` is the same set as a VLMEvalKit yes/no TSV.", ""]


def bibtex(release: Release) -> str:
    """The BibTeX entry of this exact version (its content hash in the note)."""
    key = f"probmed_{release.name}_{release.semver}".replace("-", "_").replace(".", "_")
    return (f"@misc{{{key},\n  title = {{{{{release.name}}}: a ProbMed-style probing set for medical VQA}},\n"
            f"  author = {{{{probmed contributors}}}},\n  version = {{{release.version}}},\n"
            f"  url = {{{release_url(release)}}},\n"
            f"  note = {{content sha256 {release.digest}}},\n  howpublished = {{probmed release}}\n}}")


URL_PLACEHOLDER = "<URL or https://doi.org/DOI: set release.url>"


def release_url(release: Release) -> str:
    """Where the release is published (params release.url), or the placeholder its releaser replaces."""
    return release.url or URL_PLACEHOLDER


def _cite_section(release: Release) -> list[str]:
    sources = [citation_of(str(s)).bibtex for s in sorted(release.questions["source"].unique())]
    return ["## Citation", "", f"Cite this version as `{release.name} {release.version}` (content sha256 `{release.digest}`), "
            f"published at {release_url(release)}, with the ProbMed paper whose protocol it follows and every source "
            "whose images it holds:", "",
            "```bibtex", bibtex(release), "", PROBMED_PAPER_BIBTEX, "", *[b + "\n" for b in sources], "```", ""]


def card_text(release: Release) -> str:
    """README.md of the release."""
    front = yaml.safe_dump(metadata(release), sort_keys=False, allow_unicode=True, width=1000)
    categories = ", ".join(f"{c.name} ({'pairs' if c.paired else 'single questions'})" for c in CATEGORY_SPECS)
    body = (_head(release) + _load_section(release) + built_section(release, categories) + _audit_section(release)
            + _mix_section(release) + ["## Intended use", "", *[f"- {x}" for x in INTENDED_USE], ""]
            + ["## Known limitations", "", *[f"- {x}" for x in limitations(release)], ""]
            + ["## How to score", "", SCORING, ""] + _harness_section(release) + _sources_section(release)
            + _cite_section(release))
    return "---\n" + front + "---\n\n" + "\n".join(body).rstrip("\n") + "\n"
