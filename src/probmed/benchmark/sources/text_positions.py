"""Positions read from text become questions only from an extractor measured precise enough (issue 38).

A position question must be true at the goal rate (97% by eye). A caption's, a clinical note's or a QA
pair's position is only as good as the rules that read it, and their held-out position precision is
below 0.9 on every labelled caption set (docs/benchmark/extraction.md). So a source's text positions are
withheld unless the source is listed in ``curate.positions.text_sources``, which a test allows only
for a source whose extractor's held-out precision on its labelled set (``TEXT_POSITION_SOURCES``)
reaches ``curate.positions.min_text_precision``. A withheld position leaves its finding in place (its
condition questions stay) and is named, with the reason, in ``provenance.positions_withheld``.
Positions from boxes follow their own rules (curation.positions.unsure, curation.brain_positions).
"""

from __future__ import annotations

from probmed.benchmark.sources.base import SourceResult
from probmed.core.params_schema import CuratePositions
from probmed.core.records import Finding

# source -> the labelled caption set (extract_eval.LABELLED_SETS) that measures its extractor's positions;
# None: no labelled set measures it (clinical notes, VQA-RAD's questions), so its positions cannot be listed
TEXT_POSITION_SOURCES: dict[str, str | None] = {
    "roco_images": "roco-images",
    "medicat": "roco-images",  # the same rules in the same profile, on figure captions of the same literature
    "roco": "roco-images",
    "roco_extended": "roco-extended",
    "covid_ct": None,
    "vqarad": None,
}


def withhold_text_positions(result: SourceResult, source: str, policy: CuratePositions) -> None:
    """Withhold every text position of ``source`` unless the policy lists it (module docstring)."""
    if source not in TEXT_POSITION_SOURCES or source in policy.text_sources:
        return
    why = (f"positions read from {source}'s text are not asked: curate.positions.text_sources lists only sources whose "
           f"extractor reaches held-out position precision {policy.min_text_precision}")
    withheld = 0
    for rec in result.records:
        placed = [f for f in rec.findings if f.position]
        if not placed:
            continue
        rec.provenance["positions_withheld"] = [{"condition": f.condition, "position": str(f.position), "why": why}
                                                for f in placed]
        rec.findings = list(dict.fromkeys(Finding(f.condition, None) for f in rec.findings))
        withheld += len(placed)
    result.notes["positions_withheld"] = {"text position of an unmeasured or imprecise extractor": withheld}
