"""Clinical wording (issue 22): each rule of the wording tables, its lint rule, on texts of the real default set.

Every "today" text below is one the full default set (`probmed generate --question-set probmed`) asked before
these rules; the "now" text is what the generator asks in its place, and reads clean."""

from __future__ import annotations

import pandas as pd
import pytest

from probmed.benchmark.curation.tables import (
    cause_eras,
    condition_sites,
    condition_terms,
    pleural_levels,
    region_prepositions,
    source_years,
)
from probmed.benchmark.lint import lint_frame, lint_question
from probmed.benchmark.questions import condition_question, position_question

# (today's text, the rule that finds it, the generator's call, the text it asks now)
CASES = [
    ("Is the pneumothorax located in the right lower lung zone?", "pleural-in-lung",
     ("pneumothorax", "right lower lung zone", "chest"), "Is there a right basal pneumothorax?"),
    ("Is the effusion located in the left lung?", "pleural-in-lung",
     ("effusion", "left lung", "chest"), "Is there a left pleural effusion?"),
    ("Are the effusions located in both lower lung zones?", "pleural-in-lung",
     ("effusion", "both lower lung zones", "chest"), "Are there bilateral basal pleural effusions?"),
    ("Is the pneumothorax located in the left upper lung zone?", "pleural-in-lung",
     ("pneumothorax", "left upper lung zone", "chest"), "Is there a left apical pneumothorax?"),
    ("Is the meningioma located in the left hemisphere?", "extra-axial-hemisphere",
     ("meningioma", "left hemisphere", "brain"), "Is the meningioma located on the left side?"),
    ("Is the infiltration located in the left middle lung zone?", "infiltrate",
     ("infiltration", "left middle lung zone", "chest"), "Is the infiltrate located in the left middle lung zone?"),
    ("Is the mass located in the cervicothoracic junction?", "preposition",
     ("mass", "cervicothoracic junction", "spine"), "Is the mass located at the cervicothoracic junction?"),
    ("Is the disc herniation located in the lumbosacral junction?", "preposition",
     ("disc herniation", "lumbosacral junction", "spine"), "Is the disc herniation located at the lumbosacral junction?"),
]


@pytest.mark.parametrize("today,rule,call,now", CASES)
def test_each_wording_rule_rewrites_todays_text_and_its_lint_rule_finds_the_old_one(today, rule, call, now) -> None:
    assert rule in {f.rule for f in lint_question(today)}
    assert position_question(*call) == now
    assert lint_question(now) == []


def test_condition_terms() -> None:
    assert lint_question("Is there evidence of infiltration in this image?")[0].rule == "infiltrate"
    assert condition_question("infiltration") == "Is there evidence of an infiltrate in this image?"
    assert "covid-spelling" in {f.rule for f in lint_question("Is there evidence of covid-19 pneumonia in this image?")}
    assert condition_question("covid-19 pneumonia") == "Is there evidence of COVID-19 pneumonia in this image?"
    assert lint_question(condition_question("covid-19 pneumonia")) == []
    assert lint_question(condition_question("infiltration")) == []


def test_pleural_wording_by_side_and_level() -> None:
    assert position_question("effusion", "right", "chest") == "Is there a right pleural effusion?"
    assert position_question("pleural thickening", "bilateral", "chest") == "Is there bilateral pleural thickening?"
    assert position_question("effusion", "right middle lung zone", "chest") == "Is there a right mid-zone pleural effusion?"
    assert position_question("effusion", "left costophrenic angle", "chest") == "Is there a pleural effusion at the left costophrenic angle?"
    # a knee effusion is not pleural: the site table is per organ
    assert position_question("effusion", "suprapatellar recess", "knee") == "Is the effusion located in the suprapatellar recess?"
    assert "pleural-in-lung" not in {f.rule for f in lint_question("Is the pericardial effusion located in the left lung?")}


def test_cause_before_disease_is_a_rule_of_the_question_table() -> None:
    frame = pd.DataFrame({"question": ["Is there evidence of COVID-19 pneumonia in this image?"] * 3,
                          "source": ["ChestX-ray14", "COVID-19 IDC", "MedICaT"]})
    found = [f for f in lint_frame(frame) if f.rule == "cause-before-disease"]
    assert len(found) == 1 and "ChestX-ray14" in found[0].message


def test_tables_are_reviewable_and_complete() -> None:
    assert condition_terms()["infiltration"].term == "infiltrate"
    assert {s.site for s in condition_sites().values()} == {"pleural", "extra-axial"}
    assert set(pleural_levels()) == {"upper", "middle", "lower"}
    assert all(p == "at" for r, p in region_prepositions().items() if r.endswith("junction"))
    assert cause_eras()["covid-19 pneumonia"] == 2019 > source_years()["ChestX-ray14"]
