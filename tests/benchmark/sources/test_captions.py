"""Caption sources (MedICaT sample, ROCO) and the extract command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from probmed.benchmark.sources.captions import load_medicat, load_roco, read_caption_tsv
from probmed.cli import main
from probmed.core.errors import SourceError


def test_roco_every_caption_accounted_for(shared_data: Path) -> None:
    res = load_roco(shared_data / "roco-captions")
    assert res.notes["captions"] == 8179
    dropped = sum(len(v) for v in res.excluded.values())
    assert len(res.records) + dropped == 8179
    assert set(res.excluded) == {"nothing extractable"}
    assert all(r.image_path is None for r in res.records)  # text only: never reaches prediction
    assert len(res.records) > 7000


def test_medicat_radiology_figures(shared_data: Path, tmp_path: Path) -> None:
    res = load_medicat(shared_data / "medicat-sample", shared_data)
    assert len(res.records) == 6
    assert len(res.excluded["not a radiology figure"]) == 4
    for r in res.records:
        assert (shared_data / r.image_path).is_file()
    by = {r.image_id: r for r in res.records}
    assert by["medicat-26491ab76c-3-Figure4-1"].modality == "mri"  # "Nuclear magnetic resonance scan"
    assert by["medicat-5f2d2f2ffb-1-Figure1-1"].findings == []  # "showing no intracranial lesion"


def test_tsv_bad_lines_and_empty_captions(tmp_path: Path, repo_root: Path) -> None:
    tsv = tmp_path / "c.tsv"
    tsv.write_text("A1\tAxial CT of the abdomen shows a liver mass.\nno tab here\nA2\t\nA3\tFigure 2.\nA1\tduplicate\n")
    rc = main(["extract", str(tsv), "--method", "rules", "--out", str(tmp_path / "o.jsonl"), "--params", str(repo_root / "params.yaml")])
    assert rc == 0
    lines = [json.loads(line) for line in (tmp_path / "o.jsonl").read_text().splitlines()]
    assert lines == [{"id": "A1", "modality": "ct", "organ": "abdomen", "findings": [{"condition": "mass", "position": "liver"}]}]
    rep = json.loads((tmp_path / "o.report.json").read_text())
    assert rep["excluded"]["malformed caption line (expected id<TAB>caption)"] == {"count": 2, "ids": ["line 2", "line 3"]}
    assert rep["excluded"]["nothing extractable"] == {"count": 1, "ids": ["A3"]}
    assert rep["excluded"]["duplicate caption id"]["ids"] == ["A1"]
    empty = tmp_path / "e.tsv"
    empty.write_text("garbage\n")
    with pytest.raises(SourceError, match="no usable caption line"):
        read_caption_tsv(empty)
    assert main(["extract", str(empty), "--out", str(tmp_path / "e.jsonl"), "--params", str(repo_root / "params.yaml")]) == 2
    assert not (tmp_path / "e.jsonl").exists()


def test_llm_method_needs_an_endpoint(tmp_path: Path, repo_root: Path, capsys) -> None:
    tsv = tmp_path / "c.tsv"
    tsv.write_text("A1\tChest X-ray.\n")
    assert main(["extract", str(tsv), "--method", "llm", "--out", str(tmp_path / "o.jsonl"), "--params", str(repo_root / "params.yaml")]) == 2
    assert "base_url" in capsys.readouterr().err


def test_caption_records_carry_their_licence(shared_data: Path, tmp_path: Path) -> None:
    from probmed.benchmark.sources.captions import load_medicat, read_roco_licences
    from probmed.core.licences import commercial_use

    licences = read_roco_licences(shared_data / "roco-captions" / "test" / "radiology" / "licences.txt")
    assert licences["ROCO_00001"] == "CC BY-NC" and "ROCO_ID" not in licences
    res = load_medicat(shared_data / "medicat-sample", shared_data)  # the image root holds the figures
    assert res.records and all(r.licence and not commercial_use(r.licence) for r in res.records)
