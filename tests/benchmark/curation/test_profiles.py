"""Caption profiles: another extractor's values (the LLM answers in every recorded value) read in a source's scope."""

from __future__ import annotations

from probmed.benchmark.curation.extract_llm import SCHEMA, SYSTEM_PROMPT
from probmed.benchmark.curation.profiles import EXTENDED, PAPER
from probmed.core.vocab import ASKABLE_MODALITIES, ASKABLE_ORGANS


def test_the_llm_prompt_and_schema_name_every_askable_value() -> None:
    for value in ASKABLE_MODALITIES + ASKABLE_ORGANS:
        assert repr(value) in SYSTEM_PROMPT, value
    assert set(ASKABLE_MODALITIES) <= set(SCHEMA["properties"]["modality"]["enum"])
    assert set(ASKABLE_ORGANS) <= set(SCHEMA["properties"]["organ"]["enum"])


def test_the_paper_profile_narrows_the_new_values_as_its_rules_read_them() -> None:
    assert PAPER.narrow("ultrasound", "pelvis") == ("other", "abdomen")   # pelvic organs are the abdomen
    assert PAPER.narrow("ct", "head and neck") == ("ct", "other")
    assert PAPER.narrow("x-ray", "knee") == ("x-ray", "other")
    assert PAPER.narrow("mri", "brain") == ("mri", "brain")
    assert PAPER.narrow("unknown", "unknown") == ("unknown", "unknown")


def test_the_extended_profile_keeps_every_value() -> None:
    assert EXTENDED.narrow("ultrasound", "pelvis") == ("ultrasound", "pelvis")
    assert EXTENDED.narrow("ct", "head and neck") == ("ct", "head and neck")
