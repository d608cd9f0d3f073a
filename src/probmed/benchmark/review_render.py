"""Renders for the by-eye truth check: each sampled question drawn beside what its answer rests on.

Why: a reviewer judges a question by looking, and what to look at differs by source. A ChestX-ray14 film shows
its boxes and the lung field its positions were read on (each lung's apex-to-base height in thirds: the zones,
and the fallback reason when the field was not located); a figshare or BraTS slice its tumour box; a ROCO or
MedICaT figure its caption beside it, since the caption is the figure's only label; every render lists the
record's modality, organ and findings and, for VQA-RAD, the source's own QA. One PNG per question
(``<row>_<qid>.png``, in the sheet's order), so a judged sheet and its renders line up.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any, Iterable

import pandas as pd
from PIL import Image, ImageDraw, ImageFont

from probmed.core.errors import RecordError
from probmed.core.records import ImageRecord
from probmed.infra.io import require_file
from probmed.infra.progress import progress

SIDE = 640  # the image's long side in the render
PANEL = 560  # width of the text panel beside it
FONT_SIZE = 15
BOX_COLOURS = ("#ff3030", "#30c0ff", "#ffd000", "#40ff60", "#ff60ff")
ZONE_COLOUR = "#00ff88"


def _font(size: int = FONT_SIZE) -> Any:
    return ImageFont.load_default(size)


def _boxes(rec: ImageRecord) -> tuple[list[dict[str, Any]], tuple[float, float] | None]:
    """The record's boxes and the frame (width, height) they are pixels of; none when the record has none."""
    prov = rec.provenance
    if "boxes_curated" in prov and prov.get("curated_size"):  # figshare, BraTS: boxes on the curated image
        w, h = prov["curated_size"]
        return list(prov["boxes_curated"]), (float(w), float(h))
    if "boxes" in prov and isinstance(prov["boxes"], list) and rec.source == "ChestX-ray14":
        return list(prov["boxes"]), (1024.0, 1024.0)  # ChestX-ray14's box list: pixels of the 1024 px film
    return [], None


def _box_xywh(box: dict[str, Any]) -> tuple[float, float, float, float]:
    if {"x", "y", "w", "h"} <= box.keys():
        return float(box["x"]), float(box["y"]), float(box["w"]), float(box["h"])
    x0, y0, x1, y1 = (float(box[k]) for k in ("x0", "y0", "x1", "y1"))
    return x0, y0, x1 - x0, y1 - y0


def _draw_lung_field(draw: ImageDraw.ImageDraw, field: dict[str, Any], size: tuple[int, int]) -> None:
    """Each lung's box and its zone lines (thirds of its own height), in image fractions scaled to ``size``."""
    w, h = size
    for side in ("right", "left"):
        top, bottom, x0, x1 = field[side]
        draw.rectangle([x0 * w, top * h, x1 * w, bottom * h], outline=ZONE_COLOUR, width=2)
        for third in (1, 2):
            y = (top + (bottom - top) * third / 3) * h
            draw.line([x0 * w, y, x1 * w, y], fill=ZONE_COLOUR, width=1)
        draw.text((x0 * w + 3, top * h + 2), side[0].upper(), fill=ZONE_COLOUR, font=_font(13))


def _image(rec: ImageRecord, image_root: Path) -> Image.Image:
    """The record's image at SIDE px, its boxes and (ChestX-ray14) lung field drawn on it."""
    img = Image.open(require_file(Path(image_root) / str(rec.image_path), f"image of {rec.image_id}")).convert("RGB")
    scale = SIDE / max(img.size)
    img = img.resize((max(1, round(img.width * scale)), max(1, round(img.height * scale))), Image.Resampling.LANCZOS)
    draw = ImageDraw.Draw(img)
    if rec.source == "ChestX-ray14" and isinstance(rec.provenance.get("lung_field"), dict):
        _draw_lung_field(draw, rec.provenance["lung_field"], img.size)
    boxes, frame = _boxes(rec)
    if frame:
        fx, fy = img.width / frame[0], img.height / frame[1]
        for i, box in enumerate(boxes):
            x, y, bw, bh = _box_xywh(box)
            colour = BOX_COLOURS[i % len(BOX_COLOURS)]
            draw.rectangle([x * fx, y * fy, (x + bw) * fx, (y + bh) * fy], outline=colour, width=3)
            draw.text((x * fx + 3, max(0, y * fy - 16)), str(box.get("label", "")), fill=colour, font=_font(13))
    return img


def _record_lines(rec: ImageRecord) -> list[str]:
    """What the record says: its metadata, findings, absent conditions, and the text it was read from."""
    prov = rec.provenance
    lines = [f"record: {rec.modality} / {rec.organ}  abnormal={rec.abnormal}",
             "findings: " + ("; ".join(f"{f.condition}" + (f" @ {f.position}" if f.position else "") for f in rec.findings) or "none")]
    if rec.absent_conditions:
        lines.append("absent: " + ", ".join(rec.absent_conditions))
    if prov.get("view"):
        lines.append(f"view: {prov['view']}")
    field = prov.get("lung_field")
    if isinstance(field, dict):
        lines.append(f"lung field: {field.get('fallback') or 'located'}")
    if prov.get("table_labels"):
        lines.append(f"labels: {prov['table_labels']}")
    if prov.get("organ_abstained"):
        lines.append(f"organ abstained: {prov['organ_abstained']}")
    for key in ("caption", "clinical_notes"):
        if prov.get(key):
            lines += ["", f"{key}:", str(prov[key])]
    if isinstance(prov.get("qa"), list):
        lines += ["", "source QA:"] + [f"Q: {qa[0]}  A: {qa[1]}" for qa in prov["qa"][:16]]  # [question, answer, type]
    return lines


def _wrap(lines: Iterable[str], width: int = 66) -> list[str]:
    return [w for line in lines for w in (textwrap.wrap(line, width) or [""])]


def render_question(row: Any, rec: ImageRecord, image_root: Path) -> Image.Image:
    """One question's render: the image (boxes, zones) on the left, the question and the record on the right."""
    img = _image(rec, image_root)
    head = [f"{row.qid}  {row.source}  {row.category}  {row.image_type}", "", f"Q: {row.question}", f"A: {row.answer}", ""]
    text = _wrap(head + _record_lines(rec))
    line_h = FONT_SIZE + 4
    height = max(img.height, line_h * len(text) + 20)
    canvas = Image.new("RGB", (img.width + PANEL, height), "white")
    canvas.paste(img, (0, 0))
    draw = ImageDraw.Draw(canvas)
    for i, line in enumerate(text):
        draw.text((img.width + 10, 10 + i * line_h), line, fill="black", font=_font())
    return canvas


def render_truth_sheet(sheet: pd.DataFrame, records: dict[str, ImageRecord], image_root: Path, out_dir: Path) -> list[Path]:
    """A render per sampled question under ``out_dir`` (``<row>_<qid>.png``); every image must have its record."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    missing = sorted(set(sheet["image_id"]) - set(records))
    if missing:
        raise RecordError(f"truth sheet: {len(missing)} image(s) without a record, e.g. {missing[:3]}")
    paths = []
    for i, row in enumerate(progress(list(sheet.itertuples()), desc="renders", unit="question")):
        path = out_dir / f"{i:03d}_{row.qid}.png"
        render_question(row, records[row.image_id], image_root).save(path)
        paths.append(path)
    return paths
