"""More ROCO figures with their captions (roco-extended) -> ImageRecords, through the caption extractor.

The roco_images path (sources.roco_images: same caption rules, image policy, exclusions with reasons and
ids, licence per figure) in the extended caption profile (curation.profiles.EXTENDED): ultrasound is a
modality of its own, and the organs are those of ``core.vocab.EXTENDED_ORGANS``, merged from the fine body
regions a caption names by ``curation/tables/organ_regions.csv`` (breast, scrotum, elbow and leg figures
are too few to stand alone and are excluded as another organ). Doppler-only, contrast-enhanced ultrasound,
elastography and dental films are other techniques, excluded like mammography.
"""

from __future__ import annotations

from probmed.benchmark.curation.profiles import EXTENDED
from probmed.benchmark.sources.base import SourceContext, SourceResult
from probmed.benchmark.sources.roco_images import load_roco_images
from probmed.benchmark.sources.tabular import ImagePolicy


def load(context: SourceContext) -> SourceResult:
    """The registry's loader: the image policy `curate.images` (folders `curate.roco_extended`), the configured caption extractor
    (the rules read each caption in the extended profile; an LLM extractor's answer keeps every extended value)."""
    return load_roco_images(context.data_dir, ImagePolicy.from_context(context), context.image_root, context.extractor(),
                            profile=EXTENDED, folder="roco-extended")
