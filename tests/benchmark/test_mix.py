"""Image-type caps of a question set: seeded, every type kept, no type over its share."""

from __future__ import annotations

import pytest

from probmed.benchmark.mix import capped_counts, sample_records
from probmed.core.errors import ConfigError
from probmed.core.params_schema import ImageTypeCaps, parse_params
from probmed.core.records import ImageRecord


def _records(counts: dict[tuple[str, str], int]) -> list[ImageRecord]:
    out = []
    for (modality, organ), n in counts.items():
        out += [ImageRecord(f"{modality}-{organ}-{i}", "s", modality, organ, image_path=f"{i}.png") for i in range(n)]
    return out


def test_caps_bound_the_largest_type_and_keep_every_type() -> None:
    counts = {"X-ray - Chest": 900, "MRI - Brain": 300, "CT Scan - Chest": 60, "X-ray - Brain": 3}
    kept = capped_counts(counts, ImageTypeCaps(max_share=0.5))
    assert kept["X-ray - Chest"] == 363 and kept["MRI - Brain"] == 300 and kept["X-ray - Brain"] == 3
    assert max(kept.values()) <= 0.5 * sum(kept.values())
    assert capped_counts(counts, ImageTypeCaps(max_share=0.5, max_images=100)) == {
        "X-ray - Chest": 100, "MRI - Brain": 100, "CT Scan - Chest": 60, "X-ray - Brain": 3}
    assert capped_counts({"X-ray - Chest": 5, "MRI - Brain": 5}, ImageTypeCaps(max_share=0.5)) == {"X-ray - Chest": 5, "MRI - Brain": 5}
    with pytest.raises(ConfigError, match="cannot hold with 3 image types"):
        capped_counts({"a": 5, "b": 5, "c": 5}, ImageTypeCaps(max_share=0.2))


def test_sampling_is_seeded_and_keeps_order() -> None:
    recs = _records({("x-ray", "chest"): 90, ("mri", "brain"): 20, ("ct", "chest"): 10})
    recs.append(ImageRecord("caption-only", "ROCO"))  # no image: passed through, never counted
    a, report = sample_records(recs, ImageTypeCaps(max_share=0.5), seed=1)
    b, _ = sample_records(recs, ImageTypeCaps(max_share=0.5), seed=1)
    c, _ = sample_records(recs, ImageTypeCaps(max_share=0.5), seed=2)
    assert [r.image_id for r in a] == [r.image_id for r in b] != [r.image_id for r in c]
    assert report["images_before"]["X-ray - Chest"] == 90 and report["images_after"]["X-ray - Chest"] == 30
    assert report["largest_share_after"] == 0.5
    order = [r.image_id for r in recs]
    assert [order.index(r.image_id) for r in a] == sorted(order.index(r.image_id) for r in a)
    assert "caption-only" in {r.image_id for r in a}


def test_caps_from_params_name_the_key() -> None:
    def caps(image_types: object) -> ImageTypeCaps:
        qset = {"sources": ["vqarad"], **({} if image_types is None else {"image_types": image_types})}
        return parse_params({"datasets": {"question_sets": {"probmed": qset}}}).datasets.question_sets["probmed"].image_types

    assert caps(None) == ImageTypeCaps(max_share=0.5, max_images=None)
    with pytest.raises(ConfigError, match=r"datasets\.question_sets\.probmed\.image_types\.max_share = 2"):
        caps({"max_share": 2})
    with pytest.raises(ConfigError, match="not a parameter"):
        caps({"share": 0.4})
