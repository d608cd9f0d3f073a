"""The dataset card says what the released rows hold, what the set is for, and its limits with this set's numbers."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest
import yaml
from test_build import VERSION, card_parts, release

from probmed.benchmark.audit.blind_ceiling import BlindCeiling, paper_unit
from probmed.benchmark.review import read_truth_sheet, truth_rates
from probmed.core.params_schema import Release

VALUE_FIELDS = ("source", "category", "answer", "modality", "organ", "evidence")


@pytest.fixture(scope="module")
def released(small_set, repo_root, tmp_path_factory, monkeypatch_module) -> Path:
    out = tmp_path_factory.mktemp("card")
    monkeypatch_module.chdir(repo_root)  # release.truth_reviews are repository paths, as the release stage reads them
    assert release(small_set, out, repo_root) == 0
    return out / "small" / VERSION


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as mp:
        yield mp


def _field_table(body: list[str]) -> dict[str, dict[str, str]]:
    start = body.index("| field | meaning | values (rows) |")
    rows = {}
    for line in body[start + 2:]:
        if not line.startswith("|"):
            break
        field, meaning, values = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
        rows[field] = {"meaning": meaning, "values": values}
    return rows


def _rows(folder: Path) -> pd.DataFrame:
    return pd.concat([pd.read_parquet(p, columns=list(VALUE_FIELDS)) for p in sorted((folder / "data").glob("*.parquet"))])


def test_the_field_table_lists_every_value_as_it_occurs_in_the_rows(released):
    _, body = card_parts(released)
    table = _field_table(body)
    rows = _rows(released)
    for field in VALUE_FIELDS:
        listed = dict(re.findall(r"`([^`]+)` \(([\d,]+)\)", table[field]["values"]))
        counts = rows[field].value_counts()
        expected = {str(v): f"{n:,}" for v, n in counts.items() if v != ""}
        assert listed == expected, (field, listed, expected)
    assert table["qid"]["values"] == ""  # ids are not enumerated


def test_code_spans_carry_no_html_entities(released):
    text = (released / "README.md").read_text()
    assert not re.findall(r"`[^`\n]*&(?:lt|gt|amp);[^`\n]*`", text)
    assert "`<image_id>:abnormality`" in text


def test_intended_use_says_not_for_clinical_decisions(released):
    _, body = card_parts(released)
    section = "\n".join(body[body.index("## Intended use"):body.index("## Known limitations")])
    assert "Out of scope: clinical decisions" in section and "research" in section


def test_limitations_state_this_sets_numbers(released, small_set, repo_root):
    _, body = card_parts(released)
    section = "\n".join(body[body.index("## Known limitations"):body.index("## How to score")])
    q = small_set["frame"]
    abnormal = q[q["category"] == "abnormality"]
    top = abnormal["image_type"].value_counts()
    if abnormal.empty:  # the 20-image set asks none: the card does not invent a share
        assert "Abnormality is asked" not in section
    else:
        assert f"{len(abnormal):,} questions on {len(top)} image type(s), {100 * top.iloc[0] / len(abnormal):.1f}% of " \
               f"them on {top.index[0]}" in section
    audit = json.loads(Path(small_set["passing_audit"]).read_text())
    organ = BlindCeiling.from_json(audit["blind_ceiling"]).cell("organ", paper_unit("organ"))
    assert organ is not None and f"organ {organ.ceiling:.1f} (random {organ.random:.1f})" in section
    for sheet in Release().truth_reviews:
        c = truth_rates(read_truth_sheet(repo_root / sheet))["overall"]
        assert (f"({sheet}): {c['questions']} questions" in section
                and f"{c['true']} true, {c['doubtful']} doubtful, {c['false']} false" in section), sheet


def test_the_citation_carries_the_release_url_or_a_placeholder(released, small_set, repo_root, tmp_path, monkeypatch):
    _, body = card_parts(released)
    assert "  url = {<URL or https://doi.org/DOI: set release.url>}," in body
    monkeypatch.chdir(repo_root)
    assert release(small_set, tmp_path, repo_root, "release.url=https://doi.org/10.5281/zenodo.1") == 0
    folder = tmp_path / "small" / VERSION
    _, body = card_parts(folder)
    assert "  url = {https://doi.org/10.5281/zenodo.1}," in body
    assert yaml.safe_load((folder / "CITATION.cff").read_text())["url"] == "https://doi.org/10.5281/zenodo.1"


def test_the_card_names_its_folder_by_the_semantic_version(released):
    _, body = card_parts(released)
    info = json.loads((released / "release.json").read_text())
    assert info["version"].startswith(f"{VERSION}+") and released.name == VERSION
    assert f"`small/{VERSION}`" in "\n".join(body[:6]) and f'load_dataset("path/to/small/{VERSION}"' in "\n".join(body)
