"""The grammar lint on a table of good and bad questions."""

from __future__ import annotations

import pytest

from probmed.benchmark.lint import indefinite, lint_question, lint_questions, wants_an

GOOD = [
    "Is there evidence of a mass in this image?",
    "Is there evidence of an effusion in this image?",
    "Is there evidence of pneumonia in this image?",
    "Is there evidence of an aortic aneurysm in this image?",
    "Are there any cysts?",
    "Are there nodules in the right lung?",
    "Is this an X-ray image?",
    "Is this an MRI image?",
    "Is this a CT scan image?",
    "Does this image show the brain?",
    "Is the nodule located in the right upper lung zone?",
    "Are the nodules located in both lower lung zones?",
    "Are the infiltrates located in both lungs?",
    "Is there a right basal pleural effusion?",
    "Is the mass located in the mediastinum?",
    "Is there a large mass?",
    "Is there a ureteral stone?",
    "Are lung markings present in the entire thoracic cavity?",
    "Is there any abnormality in this image?",
    "Is there mass effect?",
]
BAD = [
    ("Is there evidence of mass in this image?", "bare-count-noun"),
    ("Is there evidence of pleural effusion in this image?", "bare-count-noun"),
    ("Are there cyst?", "number"),
    ("Is there nodules in the lung?", "number"),
    ("Is there a pneumonia?", "mass-noun-article"),
    ("Is there an atelectasis in this image?", "mass-noun-article"),
    ("Is this a MRI image?", "a-an"),
    ("Is there a effusion?", "a-an"),
    ("Is this an CT image?", "a-an"),
    ("Is the nodule located in the bilateral lower lung zones?", "bilateral-single"),
    ("Is the mass bilateral?", "bilateral-single"),
    ("Is the atelectasis located in the right lower lung zones?", "bilateral-single"),
    ("Is the effusion in both lower lung zone?", "bilateral-single"),
    ("Is there evidence of an effusion in this image", "question-mark"),
    ("Is there an effusion?? ", "question-mark"),
    ("is the heart enlarged?", "capital"),
    ("Is the  heart enlarged?", "whitespace"),
    ("Is the heart enlarged ?", "whitespace"),
    ("Is the the heart enlarged?", "doubled-word"),
    ("Is there evidence of None in this image?", "placeholder"),
]


@pytest.mark.parametrize("question", GOOD)
def test_good_questions_have_no_findings(question: str) -> None:
    assert lint_question(question) == []


@pytest.mark.parametrize("question,rule", BAD)
def test_bad_questions_are_found_by_their_rule(question: str, rule: str) -> None:
    found = lint_question(question)
    assert rule in {f.rule for f in found}, found
    assert all(f.question == question and f.message for f in found)


def test_articles_by_sound() -> None:
    assert [indefinite(w) for w in ("mass", "effusion", "MRI", "X-ray", "ureteral stone", "hernia", "osteophyte")] == [
        "a mass", "an effusion", "an MRI", "an X-ray", "a ureteral stone", "a hernia", "an osteophyte"]
    assert wants_an("hour") and not wants_an("one")


def test_lint_counts_each_distinct_text_once() -> None:
    found = lint_questions(["Is there evidence of mass in this image?"] * 5 + GOOD)
    assert len(found) == 1
