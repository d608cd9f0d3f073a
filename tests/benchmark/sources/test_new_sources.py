"""The four sources with a metadata.csv, each on a few real files of ../shared/data: records, exclusions
with reasons and ids, positions, licence per record, one image policy for normal and abnormal images."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from PIL import Image

from probmed.benchmark.sources.brain_mri import (
    load_brats_sample,
    load_figshare_brain_tumor,
)
from probmed.benchmark.sources.covid_ct import load_covid_ct, own_notes
from probmed.benchmark.sources.roco_images import load_roco_images
from probmed.benchmark.sources.tabular import ImagePolicy
from probmed.core.errors import SourceError
from probmed.core.licences import commercial_use


def make_source(shared: Path, folder: str, tmp: Path, keep, edit=None) -> Path:
    """A copy of a source folder holding the rows ``keep`` selects (images linked, not copied)."""
    src, dst = shared / folder, tmp / folder
    (dst / "images").mkdir(parents=True)
    with open(src / "metadata.csv", newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        rows = [dict(r) for r in reader if keep(r)]
        fields = reader.fieldnames
    for row in rows:
        (dst / row["file"]).symlink_to(src / row["file"])
    if edit:
        rows = edit(rows)
    with open(dst / "metadata.csv", "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)
    return dst


def formats(root: Path, records) -> set:
    out = set()
    for r in records:
        with Image.open(root / r.image_path) as im:
            out.add((im.format, im.mode, max(im.size)))
    return out


def test_roco_images_records_exclusions_positions_licence(shared_data: Path, tmp_path: Path) -> None:
    ids = {"ROCO_00535", "ROCO_59123", "ROCO_49230", "ROCO_27941", "ROCO_15930", "ROCO_04873", "ROCO_56869"}
    data = make_source(shared_data, "roco-images", tmp_path, lambda r: r["roco_id"] in ids)
    res = load_roco_images(data, ImagePolicy(tmp_path / "img", workers=1), tmp_path)
    by_id = {r.image_id: r for r in res.records}
    assert res.excluded == {
        "organ ambiguous": ["roco-ROCO_49230"],  # "CT scan study of neck and thorax"
        "multi-panel figure": ["roco-ROCO_27941"],  # "Fig 1 Axial ... and Fig 2 sagittal CT"
        "modality other than CT, MRI or X-ray": ["roco-ROCO_56869"],  # "On X-ray and US ..."
    }
    tumour = by_id["roco-ROCO_59123"]  # "CT scan showing large tumor of the right kidney."
    assert (tumour.modality, tumour.organ, tumour.abnormal) == ("ct", "abdomen", True)
    assert [(f.condition, f.position) for f in tumour.findings] == [("tumor", "right kidney")]
    chest = by_id["roco-ROCO_04873"]
    assert {(f.condition, f.position) for f in chest.findings} == {("mass", "left lower lobe"), ("metastasis", "bilateral lungs")}
    assert by_id["roco-ROCO_15930"].abnormal is False  # "... showing no obvious abnormality"
    assert {r.licence for r in res.records} <= {"CC BY", "CC BY-NC", "CC BY-NC-SA", "CC0"} and all(r.licence for r in res.records)
    assert not commercial_use(by_id["roco-ROCO_00535"].licence) or by_id["roco-ROCO_00535"].licence == "CC BY"
    assert formats(tmp_path, res.records) == {("PNG", "L", 256)}  # RGB and grayscale JPEGs alike


def test_covid_ct_notes_positions_and_label_conflicts(shared_data: Path, tmp_path: Path) -> None:
    data = make_source(shared_data, "covid-chestxray-ct", tmp_path, lambda r: r["patient_id"] in ("17", "217", "218"))
    res = load_covid_ct(data, ImagePolicy(tmp_path / "img", workers=1), tmp_path)
    by_id = {r.image_id: r for r in res.records}
    # patient 218: two slices labelled "No Finding" whose own notes describe GGO and consolidation
    assert res.excluded == {"labelled normal but the case notes describe lung findings": ["covid-ct-16631_1_1", "covid-ct-16631_1_2"]}
    normal = by_id["covid-ct-16630_1_1"]  # "Axial chest CT ... is normal"
    assert normal.abnormal is False and not normal.findings and "covid-19 pneumonia" in normal.absent_conditions
    ill = by_id["covid-ct-jkms-35-e79-g001-l-d"]
    # the case's notes ("consolidation in right upper lobe") describe the case, not this slice, which shows
    # the lower lobes (qid 68014d6bb87ecc99 asked "right upper lobe? yes" of it): conditions, no positions
    assert ill.provenance["findings_from"].startswith("clinical notes of the case")
    assert {(f.condition, f.position) for f in ill.findings} == {
        ("covid-19 pneumonia", None), ("consolidation", None), ("ground-glass opacity", None)}
    own_slices = [r for r in res.records if r.provenance["findings_from"] == "the slice's own clinical notes"]
    assert all(r.abnormal is False or r.findings for r in own_slices)
    assert {(r.modality, r.organ) for r in res.records} == {("ct", "chest")}
    assert all(r.licence.startswith("CC BY-NC-SA") and not commercial_use(r.licence) for r in res.records)
    sizes = {r.abnormal: formats(tmp_path, [r]) for r in res.records}
    assert sizes[True] == sizes[False] == {("PNG", "L", 256)}  # one policy for normal and abnormal slices
    own, only = own_notes("Case text. Slice one.", ["Case text. Slice one.", "Case text. Slice two."])
    assert (own, only) == ("Slice one.", True)


def test_figshare_positions_exclusions_and_licence(shared_data: Path, tmp_path: Path) -> None:
    keep = {"images/924.jpg", "images/2035.jpg", "images/192.jpg", "images/20.jpg", "images/11.jpg"}

    def edit(rows):
        rows[0] = {**rows[0], "finding_boxes": "1,2,0,4"}  # no area
        rows[1] = {**rows[1], "findings": "astrocytic blob"}
        return rows

    data = make_source(shared_data, "figshare-brain-tumor", tmp_path, lambda r: r["file"] in keep, edit)
    res = load_figshare_brain_tumor(data, ImagePolicy(tmp_path / "img", workers=1), tmp_path)
    assert sum(len(v) for v in res.excluded.values()) == 2
    assert set(res.excluded) == {"malformed tumour box", "unknown tumour class 'astrocytic blob'"}
    for r in res.records:
        assert (r.modality, r.organ, r.abnormal, r.licence, r.patient_id) == ("mri", "brain", True, "CC BY 4.0", None)
        condition = r.findings[0].condition
        assert set(r.absent_conditions) == {"glioma", "meningioma", "pituitary tumor"} - {condition}
        assert r.provenance["boxes_curated"][0]["w"] == pytest.approx(r.provenance["boxes"][0]["w"] / 2, abs=0.01)
    positions = {r.image_id: r.findings[0].position for r in res.records}
    assert positions.get("figshare-192") in (None, "right hemisphere")
    assert all(p in (None, "left hemisphere", "right hemisphere", "midline", "sellar region") for p in positions.values())


def test_brats_axial_sides_and_patients(shared_data: Path, tmp_path: Path) -> None:
    data = make_source(shared_data, "brats2015-deepmedic-sample", tmp_path, lambda r: "pat0001" in r["file"] or "pat0002" in r["file"])
    res = load_brats_sample(data, ImagePolicy(tmp_path / "img", workers=1), tmp_path)
    assert len(res.records) == 12 and res.excluded == {}
    assert {r.patient_id for r in res.records} == {"brats_2013_pat0001_1", "brats_2013_pat0002_1"}
    sides = {rec.findings[0].position for rec in res.records if rec.patient_id == "brats_2013_pat0001_1"}
    assert sides == {"right hemisphere"}  # the tumour is on the image's left
    assert {r.provenance["plane"] for r in res.records} == {"axial"}
    assert {r.licence for r in res.records} == {"CC BY-NC-SA 3.0 CH"}
    assert formats(tmp_path, res.records) == {("PNG", "L", 256)}


def test_missing_column_and_folder_are_clear_errors(shared_data: Path, tmp_path: Path) -> None:
    data = make_source(shared_data, "brats2015-deepmedic-sample", tmp_path, lambda r: "pat0001" in r["file"],
                       lambda rows: [{k: v for k, v in r.items()} for r in rows])
    text = (data / "metadata.csv").read_text().replace("finding_boxes", "boxes")
    (data / "metadata.csv").write_text(text)
    with pytest.raises(SourceError, match=r"missing column\(s\) \['finding_boxes'\]"):
        load_brats_sample(data, ImagePolicy(tmp_path / "img", workers=1), tmp_path)
    with pytest.raises(SourceError, match="directory not found"):
        load_covid_ct(tmp_path / "nowhere", ImagePolicy(tmp_path / "img"), tmp_path)


def test_roco_images_another_extractor_is_held_to_the_vocabularies(shared_data: Path, tmp_path: Path) -> None:
    """An LLM extractor's free text is normalised into the organ's vocabularies or left out; the rule
    extractor's figure flags still exclude panels."""
    from probmed.benchmark.curation.extract_rules import Extraction

    def llm_like(roco_id: str, caption: str) -> Extraction:
        return Extraction(roco_id, "ct", "abdomen", findings=[
            {"condition": "large renal tumour", "position": "upper pole of the right kidney"},
            {"condition": "incidental something", "position": "left side"},
        ])

    data = make_source(shared_data, "roco-images", tmp_path, lambda r: r["roco_id"] in {"ROCO_59123", "ROCO_27941"})
    res = load_roco_images(data, ImagePolicy(tmp_path / "img", workers=1), tmp_path, extractor=llm_like)
    assert res.excluded == {"multi-panel figure": ["roco-ROCO_27941"]}
    (rec,) = res.records
    assert [(f.condition, f.position) for f in rec.findings] == [("tumor", "right kidney")]


def test_roco_extended_records_exclusions_positions_licence(shared_data: Path, tmp_path: Path) -> None:
    """roco_extended: the roco_images path in the extended profile (ultrasound, the new organs), real files."""
    from probmed.benchmark.curation.profiles import EXTENDED

    ids = {"ROCO_28280", "ROCO_13941", "ROCO_37613", "ROCO_50451", "ROCO_42037", "ROCO_16516", "ROCO_23740", "ROCO_09966"}
    data = make_source(shared_data, "roco-extended", tmp_path, lambda r: r["roco_id"] in ids)
    res = load_roco_images(data, ImagePolicy(tmp_path / "img", workers=1), tmp_path, profile=EXTENDED, folder="roco-extended")
    by_id = {r.image_id: r for r in res.records}
    assert res.excluded == {
        "modality other than CT, MRI, ultrasound or X-ray": ["roco-ROCO_13941"],  # "IOPA radiograph ...": a dental film
        "organ other than abdomen, brain, chest, foot, hand, head and neck, knee, pelvis, shoulder or spine":
            ["roco-ROCO_37613"],  # a testis: the scrotum is too small a region to stand alone
        "multi-panel figure": ["roco-ROCO_50451"],  # "Lateral and dorsoplantar X-ray of the involved foot"
    }
    ovary = by_id["roco-ROCO_28280"]  # "Preoperative transvaginal ultrasound imaging showing right ovarian cyst."
    assert (ovary.modality, ovary.organ, ovary.abnormal) == ("ultrasound", "pelvis", True)
    assert [(f.condition, f.position) for f in ovary.findings] == [("cyst", "right ovary")]
    clavicle = by_id["roco-ROCO_42037"]  # "X-ray of left clavicle ... mid-shaft clavicle fracture and widening of the AC joint"
    assert (clavicle.modality, clavicle.organ) == ("x-ray", "shoulder")
    assert {(f.condition, f.position) for f in clavicle.findings} == {
        ("fracture", "left clavicle"), ("widening", "left acromioclavicular joint")}
    thyroid = by_id["roco-ROCO_09966"]  # "... ultrasound image of the thyroid gland ... lesion in the right lobe"
    assert (thyroid.modality, thyroid.organ) == ("ultrasound", "head and neck")
    assert ("lesion", "right thyroid lobe") in {(f.condition, f.position) for f in thyroid.findings}
    assert [(f.condition, f.position) for f in by_id["roco-ROCO_23740"].findings] == [("effusion", "right")]
    assert by_id["roco-ROCO_16516"].abnormal is False  # "Normal AP radiograph of left knee."
    assert {r.licence for r in res.records} <= {"CC BY", "CC BY-NC", "CC BY-NC-SA"} and all(r.licence for r in res.records)
    assert all(r.provenance["caption"] and r.source == "ROCO" for r in res.records)
    assert formats(tmp_path, res.records) == {("PNG", "L", 256)}  # ultrasound colour overlays alike


def test_roco_extended_is_registered_with_its_params(repo_root: Path) -> None:
    from probmed.benchmark.sources.registry import SOURCES
    from probmed.core.params_schema import Curate

    assert "roco_extended" in SOURCES.kinds and callable(SOURCES.load("roco_extended"))
    from probmed.core.config import load_params, to_plain
    from probmed.core.params_schema import parse_params

    assert Curate().roco_extended.data == "data/roco-extended" and "roco_extended" in Curate().all
    # wired in: curated by `curate all`, read by generation and fine-tuning, a source of the default set
    params = parse_params(to_plain(load_params(repo_root / "params.yaml")))
    assert "build/records/roco_extended.parquet" in params.questions.records
    assert "build/records/roco_extended.parquet" in params.finetune.records
    assert "roco_extended" in params.datasets.question_sets["probmed"].sources


def test_roco_extended_organs_come_from_the_figure_not_a_word(shared_data: Path, tmp_path: Path) -> None:
    """Issue 38: ROCO_55096 (a coronal MRI of the back and thorax, "lesion ... under the left scapula") and ROCO_44526
    (a scapula / chest-wall lesion, the joint not clearly in view) were asked "Does this image show the shoulder?
    yes". The first is now left out (its region is not claimable); the second keeps its record and every other
    question, with no organ question and its provenance saying why; a clavicle film keeps its organ question."""
    from probmed.benchmark.curation.profiles import EXTENDED
    from probmed.benchmark.questions import generate_questions

    ids = {"ROCO_55096", "ROCO_44526", "ROCO_42037"}
    data = make_source(shared_data, "roco-extended", tmp_path, lambda r: r["roco_id"] in ids)
    res = load_roco_images(data, ImagePolicy(tmp_path / "img", workers=1), tmp_path, profile=EXTENDED, folder="roco-extended")
    assert res.excluded == {"organ ambiguous": ["roco-ROCO_55096"]}
    by_id = {r.image_id: r for r in res.records}
    scapula, clavicle = by_id["roco-ROCO_44526"], by_id["roco-ROCO_42037"]
    assert scapula.organ == clavicle.organ == "shoulder"
    assert "scapula" in scapula.provenance["organ_abstained"] and "organ_abstained" not in clavicle.provenance
    questions, report = generate_questions(res.records)
    asked = questions[questions.image_id == "roco-ROCO_44526"]
    assert len(asked) and "organ" not in set(asked.category)  # modality and the rest still asked
    assert not ((questions.category == "organ") & questions.question.str.contains("shoulder")
                & (questions.answer == "yes") & questions.image_id.isin(["roco-ROCO_44526", "roco-ROCO_55096"])).any()
    assert report.skipped_categories["organ: abstained, a site outside the shoulder's field named"] == 1
