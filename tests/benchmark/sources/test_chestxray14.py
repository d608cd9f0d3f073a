"""ChestX-ray14 curation on the real data: counts, labels, positions, image hygiene, bad input."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from PIL import Image

from probmed.benchmark.curation.vocabularies import CXR14_CONDITIONS
from probmed.benchmark.sources.chestxray14 import load_chestxray14
from probmed.cli import main
from probmed.core.errors import SourceError
from probmed.core.records import read_image_records


@pytest.fixture(scope="module")
def curated(shared_data: Path, tmp_path_factory: pytest.TempPathFactory):
    """All 1,030 images really decoded and re-written (~10-30 s on 2 shared cores)."""
    out = tmp_path_factory.mktemp("cxr14")
    res = load_chestxray14(shared_data / "chestxray14", out / "images", out, workers=2)
    return res, out


@pytest.fixture(scope="module")
def records_only(shared_data: Path, tmp_path_factory: pytest.TempPathFactory):
    out = tmp_path_factory.mktemp("cxr14meta")
    return load_chestxray14(shared_data / "chestxray14", out / "images", out, write_images=False), out


def test_record_counts(records_only) -> None:
    res, _ = records_only
    assert len(res.records) == 1030
    assert sum(r.abnormal is True for r in res.records) == 880
    assert sum(r.abnormal is False for r in res.records) == 150
    assert res.excluded == {}
    assert res.summary()["pixels"] == {"no_finding_jpg": 137, "no_finding_png": 13, "original_1024": 127, "thumbnail_256": 753}
    assert all(r.patient_id for r in res.records)
    assert {(r.modality, r.organ) for r in res.records} == {("x-ray", "chest")}


@pytest.mark.slow
def test_normal_and_abnormal_images_identical_in_format(curated) -> None:
    res, root = curated
    assert len(res.records) == 1030 and res.excluded == {}
    seen: dict[bool, set] = {True: set(), False: set()}
    for r in res.records:
        with Image.open(root / r.image_path) as im:
            seen[r.abnormal].add((im.format, im.mode, im.size))
        assert r.image_path.endswith(".png")
    assert seen[True] == seen[False] == {("PNG", "L", (256, 256))}


def test_labels_present_absent_and_positions(records_only) -> None:
    res, _ = records_only
    by_id = {r.image_id: r for r in res.records}
    rec = by_id["cxr14-00000032_037"]  # box: Infiltrate; table: Cardiomegaly|Edema|Infiltration
    conds = {f.condition: f.position for f in rec.findings}
    # box centre x 425 of 1024: image left = patient right; a hazy AP film whose left lung is not found: the
    # mirrored field is a guess, so the position is withheld (issue 38) and the record says why
    assert conds["infiltration"] is None
    assert rec.provenance["lung_field"]["fallback"] == "left lung not found: mirrored from the right"
    [withheld] = rec.provenance["positions_withheld"]
    assert withheld["condition"] == "infiltration" and withheld["why"].startswith("lung field fell back")
    eff = by_id["cxr14-00002395_007"]  # issue 22: an effusion on the right hemidiaphragm of an AP film
    assert [f.position for f in eff.findings if f.condition == "effusion"] == [None]  # its field's bases lie too high
    assert eff.provenance["positions_withheld"][0]["position"] in ("right base", "right costophrenic angle")
    assert set(eff.provenance["unruled"]["effusion"]) == {"left:upper", "left:middle", "left:lower"}
    assert set(eff.provenance["unruled"]["effusion"]) <= set(eff.provenance["extents"]["effusion"])
    assert conds["cardiomegaly"] is None and conds["edema"] is None  # known present, no box
    assert set(rec.absent_conditions) == set(CXR14_CONDITIONS) - {"infiltration", "cardiomegaly", "edema"}
    for r in res.records:
        present = {f.condition for f in r.findings}
        assert not present & set(r.absent_conditions)
        assert "infiltrate" not in present
        if not r.abnormal:
            assert not r.findings and set(r.absent_conditions) == set(CXR14_CONDITIONS)
    b = by_id["cxr14-00000032_037"].provenance["boxes_256"][0]
    assert b["x"] == pytest.approx(339.166137566138 / 4)


def test_no_position_rests_on_an_unsure_field_or_box(records_only) -> None:
    """Issue 38: a position is kept only on a plausible located field (never a fallback) for a box within its zone;
    the films the issue named are no longer asked as they were."""
    res, _ = records_only
    by_id = {r.image_id: r for r in res.records}
    kept = withheld = 0
    for r in res.records:
        positions = [f.position for f in r.findings if f.position]
        kept += len(positions)
        withheld += len(r.provenance.get("positions_withheld", []))
        if r.abnormal and r.provenance["lung_field"]["fallback"] is not None:
            assert not positions, r.image_id
    assert kept >= 150 and withheld >= 500, (kept, withheld)  # today: 211 kept, 692 withheld
    reasons = res.notes["positions_withheld"]
    assert {"lung field fell back", "lung field implausible", "the box crosses the midline"} <= set(reasons)
    atelectasis = by_id["cxr14-00019154_002"]  # box at 12-33% of the height; the base was located at 46%
    assert "right middle lung zone" not in {f.position for f in atelectasis.findings}
    mass = by_id["cxr14-00001787_008"]  # the fallback frame, a box crossing the midline
    assert [f.position for f in mass.findings] == [None]
    assert mass.provenance["positions_withheld"][0]["why"].startswith("lung field fell back")


@pytest.mark.slow
def test_reuses_curated_images(curated, shared_data: Path) -> None:
    res, root = curated
    before = {p: p.stat().st_mtime_ns for p in (root / "images").glob("*.png")}
    again = load_chestxray14(shared_data / "chestxray14", root / "images", root, workers=1)
    assert len(again.records) == 1030
    assert {p: p.stat().st_mtime_ns for p in (root / "images").glob("*.png")} == before


def _bad_copy(shared: Path, tmp: Path) -> Path:
    src = shared / "chestxray14"
    d = tmp / "cxr"
    (d / "thumbnails_256").mkdir(parents=True)
    (d / "images_no_finding").mkdir()
    lines = (src / "BBox_List_2017.csv").read_text().splitlines()
    good = lines[1:4]
    names = [line.split(",")[0] for line in good]
    bad = [
        "00000001_000.png,Atelectasis,1,2,3",  # too few values
        "00000002_000.png,Tumour,1,2,3,4",  # unknown label
        "00000003_000.png,Mass,a,b,c,d",  # non-numeric
    ]
    missing = lines[10]
    (d / "BBox_List_2017.csv").write_text("\n".join([lines[0], *good, *bad, missing]) + "\n")
    for n in names[:2]:
        shutil.copy(src / "thumbnails_256" / n, d / "thumbnails_256" / n)
    (d / "thumbnails_256" / names[2]).write_bytes(b"not a png")  # unreadable
    normal = sorted((src / "images_no_finding").glob("*.png"))[0]
    shutil.copy(normal, d / "images_no_finding" / normal.name)
    (d / "Data_Entry_2017_v2020.csv.gz").symlink_to(src / "Data_Entry_2017_v2020.csv.gz")
    return d


def test_bad_input_is_reported_not_dropped(shared_data: Path, tmp_path: Path) -> None:
    d = _bad_copy(shared_data, tmp_path)
    res = load_chestxray14(d, tmp_path / "out", tmp_path, workers=1)
    assert len(res.records) == 3  # 2 boxed + 1 normal
    ex = res.excluded
    assert ex["malformed box row (expected 6 values)"] == ["line 5 (00000001_000.png)"]
    assert ex["unknown box label"] == ["line 6 (00000002_000.png): Tumour"]
    assert ex["malformed box row (non-numeric box)"] == ["line 7 (00000003_000.png)"]
    assert len(ex["missing image file"]) == 1
    assert len(ex["unreadable image file"]) == 1 and "not a png" not in ex["unreadable image file"][0]
    assert not (tmp_path / "out" / f"{Path(ex['unreadable image file'][0].split(':')[0]).stem}.png").exists()


def test_cli_writes_records_and_report(shared_data: Path, tmp_path: Path, repo_root: Path) -> None:
    d = _bad_copy(shared_data, tmp_path)
    out = tmp_path / "rec.parquet"
    rc = main(["curate", "chestxray14", f"curate.chestxray14.images_dir={tmp_path / 'img'}", "--data", str(d),
               "--out", str(out), "--image-root", str(tmp_path), "--params", str(repo_root / "params.yaml")])
    assert rc == 0
    assert len(read_image_records(out)) == 3
    import json

    report = json.loads(out.with_suffix(".report.json").read_text())
    assert report["excluded"]["unknown box label"]["count"] == 1


def test_unusable_source_fails_clearly(tmp_path: Path, capsys, repo_root: Path) -> None:
    with pytest.raises(SourceError, match="box list not found"):
        load_chestxray14(tmp_path, tmp_path / "o", tmp_path)
    (tmp_path / "BBox_List_2017.csv").write_text("Image Index,Finding Label,Bbox [x,y,w,h],,,\n")
    with pytest.raises(SourceError, match="no usable box rows"):
        load_chestxray14(tmp_path, tmp_path / "o", tmp_path)
    rc = main(["curate", "chestxray14", "--data", str(tmp_path / "nope"), "--out", str(tmp_path / "r.parquet"), "--params", str(repo_root / "params.yaml")])
    assert rc == 2 and "not found" in capsys.readouterr().err
    assert not (tmp_path / "r.parquet").exists()
