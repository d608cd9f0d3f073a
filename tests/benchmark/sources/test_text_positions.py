"""Issue 38: positions read from text become questions only from an extractor measured precise enough."""

from __future__ import annotations

from pathlib import Path

import pytest

from probmed.benchmark.curation.extract_eval import LABELLED_SETS, read_roco_captions, score_labelled_set
from probmed.benchmark.curation.extract_rules import extract
from probmed.benchmark.sources.registry import SOURCES
from probmed.benchmark.sources.text_positions import TEXT_POSITION_SOURCES, withhold_text_positions
from probmed.cli import main
from probmed.core.config import load_params, to_plain
from probmed.core.params_schema import CuratePositions, parse_params
from probmed.core.records import read_image_records

REPO = Path(__file__).resolve().parents[3]


def _heldout_position_precision(shared: Path, name: str) -> float:
    labelled = LABELLED_SETS[name]
    scores = score_labelled_set(REPO / labelled.labels, read_roco_captions(shared / labelled.captions),
                                lambda i, c: extract(i, c, labelled.profile))
    return float(scores["heldout"]["position"]["precision"])


@pytest.mark.slow
def test_only_sources_measured_precise_enough_are_listed(shared_data: Path, repo_root: Path) -> None:
    """Every source params.yaml lets ask text positions reaches the held-out precision it demands; today none does."""
    policy = parse_params(to_plain(load_params(repo_root / "params.yaml"))).curate.positions
    assert set(TEXT_POSITION_SOURCES) <= set(SOURCES.kinds)
    measured = {name: _heldout_position_precision(shared_data, name) for name in LABELLED_SETS}
    print(f"held-out position precision: {measured}")
    for source in policy.text_sources:
        labelled = TEXT_POSITION_SOURCES[source]
        assert labelled is not None, f"{source}: no labelled set measures its text positions"
        assert measured[labelled] >= policy.min_text_precision, (source, measured[labelled])
    assert max(measured.values()) < policy.min_text_precision and policy.text_sources == []


def test_text_positions_are_withheld_with_their_reason(shared_data: Path, tmp_path: Path, repo_root: Path) -> None:
    """`probmed curate vqarad` keeps every finding but no position, and says why in the record."""
    out = tmp_path / "vqarad.parquet"
    assert main(["curate", "vqarad", "--out", str(out), "--image-root", str(shared_data),
                 "--data", str(shared_data / "vqa-rad"), "--params", str(repo_root / "params.yaml")]) == 0
    records = read_image_records(out)
    withheld = [w for r in records for w in r.provenance.get("positions_withheld", [])]
    assert withheld and not [f for r in records for f in r.findings if f.position]
    assert all("curate.positions.text_sources" in w["why"] for w in withheld)
    for r in records:  # the finding of every withheld position is still there, without it
        assert {w["condition"] for w in r.provenance.get("positions_withheld", [])} <= {f.condition for f in r.findings}
    listed = main(["curate", "vqarad", "--out", str(tmp_path / "listed.parquet"), "--image-root", str(shared_data),
                   "--data", str(shared_data / "vqa-rad"), "--params", str(repo_root / "params.yaml"),
                   "curate.positions.text_sources=[vqarad]"])
    assert listed == 0
    kept = [(r.image_id, f) for r in read_image_records(tmp_path / "listed.parquet") for f in r.findings if f.position]
    assert len(kept) == len(withheld)


def test_box_sources_are_not_touched() -> None:
    from probmed.benchmark.sources.base import SourceResult
    from probmed.core.records import Finding, ImageRecord

    rec = ImageRecord(image_id="x", source="ChestX-ray14", modality="x-ray", organ="chest", abnormal=True,
                      findings=[Finding("nodule", "right upper lung zone")])
    result = SourceResult("ChestX-ray14", [rec])
    withhold_text_positions(result, "chestxray14", CuratePositions())
    assert rec.findings == [Finding("nodule", "right upper lung zone")]
