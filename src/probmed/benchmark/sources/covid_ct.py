"""COVID-19 image data collection, chest CT slices -> ImageRecords.

* modality CT, organ chest; abnormal from the upstream label (``COVID-19`` or ``No Finding``);
* findings of a COVID-19 slice: ``covid-19 pneumonia`` (the label) placed where the clinical notes
  put the disease (``bilateral lungs``, ``right lung``, ``bilateral lung peripheries`` ...), and the lung
  findings the notes name with their lobes (caption rules of curation.extract_rules on the notes'
  imaging sentences: sentences about radiographs, laboratory values or history are left out);
* the notes describe the case, not always this slice: when a patient's slices carry different notes,
  the sentences a slice does not share with the others are its own description and only they are
  read (``own_notes``); otherwise the whole case text is, the record says so in ``provenance``, and
  its findings carry no position (``unplaced``: "consolidation in the right upper lobe" of the case
  may lie outside this slice, so a lobe asked of it would be a guess);
* a slice labelled normal whose case notes name lung findings (and do not call the CT normal) is
  excluded: the label and the notes disagree (patient 218 of the collection);
* a normal slice whose notes call the CT normal has every lung finding known absent;
* pixels: one policy for normal and abnormal slices (grayscale, long side ``image_size``, PNG).
"""

from __future__ import annotations

import re
from pathlib import Path

from probmed.benchmark.curation.extract_rules import find_conditions
from probmed.benchmark.curation.vocabularies import position_phrase
from probmed.benchmark.sources.base import SourceContext, SourceResult, relative_path
from probmed.benchmark.sources.tabular import ImagePolicy, read_metadata, write_images
from probmed.core.errors import SourceError
from probmed.core.records import Finding, ImageRecord

SOURCE = "COVID-19 IDC"
REQUIRED = ("file", "patient_id", "modality", "body_part", "view", "findings", "normal", "licence", "clinical_notes")
DISEASE = "covid-19 pneumonia"
LUNG_FINDINGS = ("ground-glass opacity", "consolidation", "nodule", "effusion", "bronchiectasis", "atelectasis",
                 "pneumothorax", "emphysema", "cavity", "opacity")
IMAGING = re.compile(r"\b(ct|computed tomography|scan|images?|view|window|shows?|showing|demonstrat\w*|note|noted|"
                     r"observed|seen|reveal\w*|evident)\b")
NOT_IMAGING = re.compile(r"radiograph|radiography|x-ray|laborator|history|leukopenia|ferritin")
CT_NORMAL = re.compile(r"\b(ct|computed tomography)\b[^.]*\bis normal\b|\bnormal (chest )?ct\b")


def _sentences(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.!?])\s+", text.strip()) if s]


def own_notes(notes: str, case_notes: list[str]) -> tuple[str, bool]:
    """(the slice's own description, whether it is only the slice's): the notes without the leading
    sentences every differing note of the same patient shares."""
    distinct = list(dict.fromkeys(case_notes))
    if len(distinct) < 2:
        return notes, False
    split = [_sentences(n) for n in distinct]
    shared = 0
    while all(len(x) > shared for x in split) and len({x[shared] for x in split}) == 1:
        shared += 1
    own = _sentences(notes)[shared:]
    return (" ".join(own), True) if own else (notes, False)


def imaging_text(notes: str) -> str:
    """The sentences of the clinical notes that describe imaging findings."""
    sentences = re.split(r"(?<=[.!?])\s+", notes)
    return " ".join(s for s in sentences if IMAGING.search(s.lower()) and not NOT_IMAGING.search(s.lower()))


def notes_findings(notes: str) -> list[Finding]:
    """Lung findings the notes' imaging sentences name, each at its stated places."""
    found, _ = find_conditions(imaging_text(notes), organ="chest")
    return [Finding(f["condition"], f["position"]) for f in found if f["condition"] in LUNG_FINDINGS]


def unplaced(findings: list[Finding]) -> list[Finding]:
    """The findings without their places: notes of the whole case name lobes this slice may not show."""
    return list(dict.fromkeys(Finding(f.condition, None) for f in findings))


def disease_position(notes: str, findings: list[Finding]) -> str | None:
    """Where the notes put the disease: the sides of its findings, in the lung periphery if said so."""
    text = imaging_text(notes).lower()
    sides = {f.position.split()[0] for f in findings if f.position and f.position.split()[0] in ("right", "left", "bilateral")}
    for sentence in re.split(r"(?<=[.!?])\s+", text):  # "... the three lobes of the right lung"
        if "normal" not in sentence:
            sides.update(m.group(1) for m in re.finditer(r"\b(right|left) lung\b", sentence))
    if re.search(r"\bbilateral|\bboth lungs\b", text) or {"right", "left"} <= sides or "bilateral" in sides:
        side = "bilateral"
    elif len(sides) == 1:
        side = sides.pop()
    else:
        return None
    peripheral = re.search(r"\bperipheral|\bsubpleural|\bperiphery", text)
    return position_phrase(side, "lung periphery" if peripheral else "lung")


def _record(
    row: dict[str, str], case_notes: list[str], data_dir: Path, policy: ImagePolicy, image_root: Path, result: SourceResult
) -> ImageRecord | None:
    stem = Path(row["file"]).stem
    image_id = f"covid-ct-{stem}"
    notes, own = own_notes(row["clinical_notes"], case_notes)
    findings = notes_findings(notes) if own else unplaced(notes_findings(notes))
    normal_label = row["normal"].lower() == "yes"
    checks = (
        (not (data_dir / row["file"]).is_file(), "missing image file"),
        (row["modality"].upper() != "CT" or row["body_part"].lower() != "chest", "not a chest CT row"),
        (row["normal"].lower() not in ("yes", "no"), "normal/abnormal label missing"),
        (not row["licence"], "no licence stated"),
        (normal_label and bool(findings) and not CT_NORMAL.search(notes.lower()),
         "labelled normal but the case notes describe lung findings"),
    )
    for failed, reason in checks:
        if failed:
            result.exclude(reason, image_id)
            return None
    if normal_label:
        present: list[Finding] = []
        absent = [DISEASE, *LUNG_FINDINGS] if CT_NORMAL.search(notes.lower()) else []
    else:
        present = [Finding(DISEASE, disease_position(notes, findings) if own else None), *findings]
        absent = []
    return ImageRecord(
        image_id=image_id,
        source=SOURCE,
        modality="ct",
        organ="chest",
        abnormal=not normal_label,
        findings=present,
        absent_conditions=absent,
        image_path=relative_path(policy.out_dir / f"{stem}.png", image_root),
        patient_id=row["patient_id"] or None,
        licence=row["licence"],
        provenance={"origin": row["file"], "plane": row["view"].lower(), "label": row["findings"] or "No Finding",
                    "clinical_notes": row["clinical_notes"],
                    "findings_from": "the slice's own clinical notes" if own else "clinical notes of the case (may describe other slices)",
                    "doi": row.get("doi", ""), "url": row.get("url", "")},
    )


def load_covid_ct(data_dir: Path, policy: ImagePolicy, image_root: Path, write: bool = True) -> SourceResult:
    """The COVID-19 chest CT table -> records with positions from the clinical notes, images written by the policy."""
    data_dir = Path(data_dir)
    if not data_dir.is_dir():
        raise SourceError(f"{SOURCE} directory not found: {data_dir}")
    result = SourceResult(SOURCE)
    pending = []
    rows = read_metadata(data_dir, REQUIRED, SOURCE)
    cases: dict[str, list[str]] = {}
    for row in rows:
        cases.setdefault(row["patient_id"], []).append(row["clinical_notes"])
    for row in rows:
        rec = _record(row, cases[row["patient_id"]], data_dir, policy, image_root, result)
        if rec is not None:
            pending.append((rec, data_dir / row["file"]))
    write_images(pending, policy, result, write)
    if not result.records:
        raise SourceError(f"{data_dir}: no usable {SOURCE} image")
    return result


def load(context: SourceContext) -> SourceResult:
    """The registry's loader: the image policy `curate.images` (folders `curate.covid_ct`)."""
    return load_covid_ct(context.data_dir, ImagePolicy.from_context(context), context.image_root)
