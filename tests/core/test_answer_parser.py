"""Answer parsing: a table of realistic responses, each with the label a reader would give."""

from __future__ import annotations

import pytest

from probmed.core.answer_parser import clean_response, parse_answer

CASES: list[tuple[str | None, str]] = [
    # plain and case variants
    ("yes", "yes"),
    ("Yes", "yes"),
    ("YES", "yes"),
    ("yes.", "yes"),
    ("Yes!", "yes"),
    ("no", "no"),
    ("No", "no"),
    ("NO.", "no"),
    ("  no  ", "no"),
    ("nO", "no"),
    # leading answer in a verbose sentence
    ("Yes, there is a nodule.", "yes"),
    ("Yes, the image shows a left-sided pleural effusion.", "yes"),
    ("No, there is no evidence of pneumothorax.", "no"),
    ("No. The lungs are clear.", "no"),
    ("Yes - this is a CT scan of the abdomen.", "yes"),
    ("Yes; a mass is visible in the right upper lobe.", "yes"),
    ('"Yes"', "yes"),
    ("(No)", "no"),
    ("Answer: Yes", "yes"),
    ("A: no", "no"),
    ("Assistant: Yes, it is an MRI.", "yes"),
    # explicit answer phrases, including after reasoning
    ("The answer is no.", "no"),
    ("The answer is yes.", "yes"),
    ("The answer is: Yes", "yes"),
    ("Final answer: no", "no"),
    ("My answer would be yes.", "yes"),
    ("Looking at the opacity, yes seems plausible but on reflection the answer is no.", "no"),
    ("The heart is enlarged. Therefore, yes.", "yes"),
    ("The costophrenic angles are sharp and there is no fluid. So, no.", "no"),
    ("In conclusion, no.", "no"),
    ("Step 1: identify the organ. Step 2: compare. Thus yes", "yes"),
    # reasoning blocks are ignored
    ("<think>It could be yes, the shadow is dense.</think>No.", "no"),
    ("<think>\nMaybe no\n</think>\n\nYes, there is cardiomegaly.", "yes"),
    ("<reasoning>yes yes yes</reasoning> The answer is no.", "no"),
    ("<think>still thinking, no idea, yes or no", "unparsed"),
    # markdown
    ("**Yes**", "yes"),
    ("**No**, the image does not show a fracture.", "no"),
    ("Answer: **No**", "no"),
    ("# Answer\n\n*Yes*", "yes"),
    ("`yes`", "yes"),
    ("__No__", "no"),
    ("**The answer is yes.**", "yes"),
    # refusals
    ("I cannot determine this from the image.", "refusal"),
    ("I can't tell from this image whether there is a nodule.", "refusal"),
    ("I am unable to determine whether there is an effusion; no clear view of the bases.", "refusal"),
    ("Please consult a radiologist for an accurate interpretation.", "refusal"),
    ("It is best to consult a healthcare professional.", "refusal"),
    ("Not sure", "refusal"),
    ("I'm not sure.", "refusal"),
    ("I'm sorry, but I cannot provide a diagnosis.", "refusal"),
    ("As an AI, I cannot diagnose medical images.", "refusal"),
    ("It is impossible to tell from this image.", "refusal"),
    ("This cannot be determined from a single view.", "refusal"),
    ("There is insufficient information to answer.", "refusal"),
    ("Uncertain.", "refusal"),
    # an answer first, advice after: still the answer
    ("Yes. However, please consult a radiologist to confirm.", "yes"),
    ("No, but I am not a doctor; consult a physician.", "no"),
    # whole-word yes/no anywhere
    ("There is no nodule.", "no"),
    ("The image shows no signs of pneumonia.", "no"),
    ("I would say yes, based on the density.", "yes"),
    ("It looks like yes to me", "yes"),
    # unparsed
    ("", "unparsed"),
    ("   ", "unparsed"),
    (None, "unparsed"),
    ("Normal study", "unparsed"),
    ("Normal", "unparsed"),
    ("The image shows the chest.", "unparsed"),
    ("Possibly.", "unparsed"),
    ("Yes/No", "unparsed"),
    ("yes or no: maybe", "unparsed"),
    ("The eyes are symmetric.", "unparsed"),
    ("None of the above.", "unparsed"),
    ("Nothing abnormal is seen.", "unparsed"),
    ("Yesterday's study was similar.", "unparsed"),
    ("Nope", "unparsed"),
    ("The yes-no question is ambiguous.", "unparsed"),
    ("There is no effusion, but yes there is a nodule somewhere.", "unparsed"),
]


def test_table_is_large_enough() -> None:
    assert len(CASES) >= 60


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_parse_answer(text: str | None, expected: str) -> None:
    assert parse_answer(text) == expected


def test_clean_response_strips_reasoning_and_markdown() -> None:
    assert clean_response("<think>a\nb</think> **Yes**,  it is.") == "Yes, it is."


def test_labels_are_from_the_vocabulary() -> None:
    from probmed.core.vocab import LABELS

    assert {parse_answer(t) for t, _ in CASES} <= set(LABELS)
