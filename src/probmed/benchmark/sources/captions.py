"""Caption sources -> ImageRecords: the MedICaT sample (with figures) and ROCO
captions (text only: they feed extraction measurements and statistics, never
prediction, so their records have no image_path).

Caption text -> metadata goes through an extractor (rules by default, or the
LLM extractor). A caption with nothing extractable, or a malformed line, is
excluded and reported by id, never silently dropped.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable, Iterable

from probmed.benchmark.curation.extract_rules import Extraction, is_empty
from probmed.benchmark.curation.extract_rules import extract as extract_rules
from probmed.benchmark.curation.profiles import PAPER, Profile
from probmed.benchmark.sources.base import (
    SourceContext,
    SourceResult,
    relative_path,
    require_file,
)
from probmed.core.errors import ConfigError, SourceError
from probmed.core.licences import MEDICAT as MEDICAT_LICENCE
from probmed.core.records import Finding, ImageRecord
from probmed.infra.progress import progress

Extractor = Callable[[str, str], Extraction]


def read_caption_tsv(path: Path, result: SourceResult | None = None) -> list[tuple[str, str]]:
    """``id<TAB>caption`` lines (the ROCO layout); malformed lines are excluded by line number."""
    out: list[tuple[str, str]] = []
    seen: set[str] = set()
    for lineno, line in enumerate(require_file(Path(path), "caption file").read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        cid, sep, caption = line.partition("\t")
        cid, caption = cid.strip(), caption.strip()
        if not sep or not cid or not caption:
            if result is not None:
                result.exclude("malformed caption line (expected id<TAB>caption)", f"line {lineno}")
            continue
        if cid in seen:
            if result is not None:
                result.exclude("duplicate caption id", cid)
            continue
        seen.add(cid)
        out.append((cid, caption))
    if not out:
        raise SourceError(f"{path}: no usable caption line")
    return out


def run_extractor(
    items: Iterable[tuple[str, str]], extractor: Extractor, result: SourceResult, profile: Profile = PAPER
) -> list[Extraction]:
    """Extract every caption; failures and empty extractions are excluded by id. Modality and organ are read in
    ``profile`` (the paper's caption sources keep its scope; `probmed extract --profile extended` widens it)."""
    out = []
    items = list(items)
    for cid, caption in progress(items, desc="extract", unit="caption", leave=False, disable=len(items) < 500):
        try:
            ex = extractor(cid, caption)
        except ConfigError:
            raise  # the endpoint as a whole is unusable: stop (answers so far are cached)
        except ValueError as exc:  # invalid LLM answer: reported, not crashed on
            result.exclude("extractor error", f"{cid}: {exc}")
            continue
        ex.modality, ex.organ = profile.narrow(ex.modality, ex.organ)
        if is_empty(ex):
            result.exclude("nothing extractable", cid)
            continue
        out.append(ex)
    return out


def _record(ex: Extraction, source: str, caption: str, image_path: str | None, provenance: dict,
            licence: str | None = None) -> ImageRecord:
    findings = [Finding(f["condition"], f.get("position")) for f in ex.findings]
    return ImageRecord(
        image_id=ex.id,
        source=source,
        modality=ex.modality,
        organ=ex.organ,
        abnormal=True if findings else None,  # a caption's silence is not evidence of normality
        findings=findings,
        absent_conditions=list(ex.negated),
        image_path=image_path,
        provenance={"caption": caption, **provenance},
        licence=licence,
    )


def read_roco_licences(path: Path) -> dict[str, str]:
    """ROCO id -> the article's licence (``ROCO_ID,PMC_ID,CC`` lines); empty when the file is absent."""
    if not Path(path).is_file():
        return {}
    out = {}
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) >= 3 and parts[0].startswith("ROCO_") and parts[0] != "ROCO_ID":
            out[parts[0]] = parts[2]
    return out


def load_roco(data_dir: Path, extractor: Extractor = extract_rules) -> SourceResult:
    """ROCO captions -> text-only records through the caption extractor."""
    result = SourceResult("ROCO")
    items = read_caption_tsv(Path(data_dir) / "test" / "radiology" / "captions.txt", result)
    captions = dict(items)
    licences = read_roco_licences(Path(data_dir) / "test" / "radiology" / "licences.txt")
    for ex in run_extractor(items, extractor, result):
        result.records.append(_record(ex, "ROCO", captions[ex.id], None, {"origin": ex.id}, licences.get(ex.id)))
    result.notes["captions"] = len(items)
    return result


def medicat_id(row: dict) -> str:
    """A MedICaT figure's stable image id (paper hash + figure name)."""
    return f"medicat-{row['pdf_hash'][:10]}-{Path(row['fig_uri']).stem}"


def load_medicat(data_dir: Path, image_root: Path, extractor: Extractor = extract_rules, radiology_only: bool = True) -> SourceResult:
    """The MedICaT sample -> records through the caption extractor (radiology figures only by default)."""
    data_dir = Path(data_dir)
    result = SourceResult("MedICaT")
    rows = []
    for lineno, line in enumerate(require_file(data_dir / "sample.jsonl", "MedICaT sample").read_text(encoding="utf-8").splitlines(), 1):
        try:
            row = json.loads(line)
            row["pdf_hash"], row["fig_uri"], row["s2_caption"]
        except (json.JSONDecodeError, KeyError, TypeError):
            result.exclude("malformed MedICaT line", f"line {lineno}")
            continue
        if radiology_only and not row.get("radiology"):
            result.exclude("not a radiology figure", medicat_id(row))
            continue
        fig = data_dir / "figures" / f"{row['pdf_hash']}_{row['fig_uri']}"
        if not fig.is_file():
            result.exclude("missing image file", medicat_id(row))
            continue
        rows.append((row, fig))
    by_id = {medicat_id(r): (r, f) for r, f in rows}
    for ex in run_extractor([(i, r["s2_caption"]) for i, (r, _) in by_id.items()], extractor, result):
        row, fig = by_id[ex.id]
        result.records.append(
            _record(ex, "MedICaT", row["s2_caption"], relative_path(fig, image_root), {"origin": f"{row['pdf_hash']}_{row['fig_uri']}", "compound_possible": True}, MEDICAT_LICENCE)
        )
    if not result.records and not result.excluded:
        raise SourceError(f"{data_dir}: no usable MedICaT figure")
    return result


def load_medicat_source(context: SourceContext) -> SourceResult:
    """The registry's MedICaT loader: captions through the configured extractor."""
    return load_medicat(context.data_dir, context.image_root, context.extractor())


def load_roco_source(context: SourceContext) -> SourceResult:
    """The registry's ROCO loader (text only: records without images)."""
    return load_roco(context.data_dir, context.extractor())
