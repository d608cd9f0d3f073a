"""ROCO radiology figures with their captions (roco-images) -> ImageRecords, through the caption extractor.

The paper's construction path: figure caption -> metadata -> questions. Every caption goes through
the extractor (rules offline; the LLM extractor when ``extract.llm`` points at an endpoint, cached);
the rule extractor's figure flags apply to both. A figure is left out, with its reason and id, when
it is a multi-panel figure, an animal study or a non-radiology figure, when its modality is not CT,
MRI or X-ray, or is not stated or ambiguous, or when its organ is not one of the four, or is not
stated or ambiguous. Findings named in the caption are present, with their positions in the organ's
vocabulary; silence is not evidence of absence (``abnormal`` stays unknown unless the caption names a
finding, or says the image is normal). A figure whose caption names a site outside its organ's usual field of view
(curation/tables/off_field_sites.csv: the scapula of a shoulder caption) keeps its organ but is asked no organ
question: provenance ``organ_abstained`` says why. Licence per figure, as ROCO records it.
Pixels: every figure written the same way (grayscale, long side ``image_size``, one filter, PNG).

The loader takes a caption profile (curation.profiles): roco_images keeps the paper's scope
(``PAPER``); roco_extended reads the same way in the extended one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from probmed.benchmark.curation.extract_rules import Extraction, normalise_finding, organ_abstention
from probmed.benchmark.curation.extract_rules import extract as extract_rules
from probmed.benchmark.curation.profiles import PAPER, Profile
from probmed.benchmark.sources.base import SourceContext, SourceResult, relative_path
from probmed.benchmark.sources.tabular import ImagePolicy, read_metadata, write_images
from probmed.core.errors import ConfigError, SourceError
from probmed.core.records import Finding, ImageRecord
from probmed.infra.progress import progress

SOURCE = "ROCO"
REQUIRED = ("file", "roco_id", "pmc_article", "licence", "caption")
Extractor = Callable[[str, str], Extraction]


def exclusion(rules: Extraction, ex: Extraction, profile: Profile = PAPER) -> str | None:
    """Why a captioned figure cannot be one benchmark image of the profile's scope, or None.

    ``rules`` is the rule extraction (figure flags, ambiguity); ``ex`` the extraction used for the
    record (the same one, or the LLM's)."""
    for flag in ("multi-panel figure", "animal study", "non-radiology figure"):
        if flag in rules.flags:
            return flag
    if ex.modality not in profile.modalities and ex.modality != "unknown":
        return f"modality other than {profile.outside_modalities}"
    if ex.modality not in profile.modalities:
        ambiguous = any(f.startswith("ambiguous modality") for f in rules.flags)
        return "modality ambiguous" if ambiguous else "modality not stated"
    if ex.organ not in profile.organs and ex.organ != "unknown":
        return f"organ other than {profile.outside_organs}"
    if ex.organ not in profile.organs:
        ambiguous = any(f.startswith("ambiguous organ") for f in rules.flags)
        return "organ ambiguous" if ambiguous else "organ not stated"
    return None


def _extract(roco_id: str, caption: str, extractor: Extractor, result: SourceResult,
             profile: Profile) -> tuple[Extraction, Extraction] | None:
    rules = extract_rules(roco_id, caption, profile)
    if extractor is extract_rules:  # the rules, read in the source's profile
        return rules, rules
    try:
        return rules, extractor(roco_id, caption)
    except ConfigError:
        raise  # the endpoint as a whole is unusable: stop (answers so far are cached)
    except ValueError as exc:  # an invalid LLM answer: reported, not crashed on
        result.exclude("extractor error", f"{roco_id}: {exc}")
        return None


def load_roco_images(
    data_dir: Path, policy: ImagePolicy, image_root: Path, extractor: Extractor = extract_rules, write: bool = True,
    profile: Profile = PAPER, folder: str = "roco-images",
) -> SourceResult:
    """ROCO figures of a ``metadata.csv`` folder (``folder`` names it in messages) -> records of the profile's scope."""
    data_dir = Path(data_dir)
    if not data_dir.is_dir():
        raise SourceError(f"{folder} directory not found: {data_dir}")
    result = SourceResult(SOURCE)
    rows = read_metadata(data_dir, REQUIRED, folder)
    pending = []
    for row in progress(rows, desc="captions", unit="caption", leave=False, disable=len(rows) < 200):
        image_id = f"roco-{row['roco_id']}"
        src = data_dir / row["file"]
        if not src.is_file():
            result.exclude("missing image file", image_id)
            continue
        if not row["licence"]:
            result.exclude("no licence stated", image_id)
            continue
        got = _extract(row["roco_id"], row["caption"], extractor, result, profile)
        if got is None:
            continue
        rules, ex = got
        if ex is not rules:  # another extractor (the LLM) answers in every recorded value: narrowed to the profile
            ex.modality, ex.organ = profile.narrow(ex.modality, ex.organ)
        reason = exclusion(rules, ex, profile)
        if reason:
            result.exclude(reason, image_id)
            continue
        if ex is not rules:  # another extractor's free text, in the controlled vocabularies (or left out)
            kept = [n for f in ex.findings
                    if (n := normalise_finding(f["condition"], f.get("position"), ex.organ, profile))]
            ex.findings = list({(n["condition"], n["position"]): n for n in kept}.values())
        findings = [Finding(f["condition"], f.get("position")) for f in ex.findings]
        abstained = organ_abstention(row["caption"], ex.organ)  # the organ kept, its question not asked
        pending.append((ImageRecord(
            image_id=image_id,
            source=SOURCE,
            modality=ex.modality,
            organ=ex.organ,
            abnormal=True if findings else (False if rules.normal else None),
            findings=findings,
            absent_conditions=list(ex.negated),
            image_path=relative_path(policy.out_dir / f"{src.stem}.png", image_root),
            licence=row["licence"],
            provenance={"origin": row["file"], "roco_id": row["roco_id"], "pmc_article": row["pmc_article"],
                        "caption": row["caption"], "keywords": row.get("keywords", ""), "flags": rules.flags,
                        **({"organ_abstained": abstained} if abstained else {})},
        ), src))
    write_images(pending, policy, result, write)
    if not result.records:
        raise SourceError(f"{data_dir}: no usable {folder} figure")
    result.notes["captions"] = len(rows)
    return result


def load(context: SourceContext) -> SourceResult:
    """The registry's loader: the image policy `curate.images` (folders `curate.roco_images`), the configured caption extractor."""
    return load_roco_images(context.data_dir, ImagePolicy.from_context(context), context.image_root, context.extractor())
