"""The blind ceiling: a search for the best fixed answer table per unit, checked against brute force and against
sets whose best table can be worked out by hand; the gate on it."""

from __future__ import annotations

import json
from itertools import product

import numpy as np
import pandas as pd
import pytest

from probmed.benchmark.audit import gate, run_audit
from probmed.benchmark.audit.blind_ceiling import (
    UNITS,
    BlindCeiling,
    CeilingCell,
    best_table,
    blind_ceiling,
    ceiling_failures,
    learner_label,
    pair_floor,
    units_right,
)
from probmed.benchmark.audit.oracle import image_fold
from probmed.benchmark.audit.report import audit_markdown, headline_metrics
from probmed.core.params_schema import Audit

XRAY, CT, MRI = "Is this an X-ray image?", "Is this a CT image?", "Is this an MRI image?"


def _pair_rows(image_id: str, image_type: str, yes_text: str, no_text: str, category: str = "modality",
               k: int | None = None, source: str = "test") -> list[dict]:
    pair = category if k is None else f"entity_{k}"
    base = {"image_id": image_id, "image_type": image_type, "category": category, "qa_type": pair,
            "pair_id": f"{image_id}:{pair}", "image_path": f"{image_id}.png", "source": source, "strategy": "balanced",
            "licence": "CC0"}
    return [{**base, "qid": f"{image_id}-{pair}-gt", "question": yes_text, "answer": "yes", "polarity": "gt",
             "evidence": "gt", "entity": yes_text.split()[3]},
            {**base, "qid": f"{image_id}-{pair}-adv", "question": no_text, "answer": "no", "polarity": "adversarial",
             "evidence": "known_absent", "entity": no_text.split()[3]}]


def _modality_set(copies: dict[tuple[str, str, str], int]) -> pd.DataFrame:
    rows = []
    for (itype, yes_text, no_text), n in copies.items():
        for i in range(n):
            rows += _pair_rows(f"{itype}-{yes_text[8:11]}-{no_text[8:11]}-{i}", itype, yes_text, no_text)
    return pd.DataFrame(rows)


# Four pair patterns; every text is answered yes exactly as often as no when each pattern has the same count.
A, B, C, D = ("x-ray", XRAY, CT), ("x-ray", XRAY, MRI), ("ct", CT, XRAY), ("mri", MRI, XRAY)


def test_a_balanced_set_with_a_fixed_winner_has_an_in_sample_ceiling_of_half_its_pairs():
    """"X-ray? yes, others no" wins patterns A and B (half the pairs); no table wins more; random wins a quarter."""
    cell = blind_ceiling(_modality_set({A: 1, B: 1, C: 1, D: 1})).cell("modality", "pair")
    assert cell is not None
    assert (cell.units, cell.texts, cell.random, cell.in_sample) == (4, 3, 25.0, 50.0)
    assert cell.floor == pytest.approx(100 / 3) and cell.bar == "floor" and cell.paper_unit


def test_the_ceiling_is_what_a_table_learnt_on_other_images_scores_and_the_image_type_is_not_blind():
    """30 copies of A make "X-ray? yes, CT? no, MRI? no" the only best table in every training fold: right on A and
    B (40 of 60 pairs), wrong on C and D, so held out it scores 66.7% against a floor of 33.3%. A table keyed on
    the image type answers every pair (it names the modality): reported, not counted."""
    ceiling = blind_ceiling(_modality_set({A: 30, B: 10, C: 10, D: 10}))
    cell = ceiling.cell("modality", "pair")
    assert cell is not None
    assert cell.learners["table:text"] == pytest.approx(200 / 3) and cell.ceiling == pytest.approx(200 / 3)
    assert cell.learners["table:type_text"] == 100.0 and "table:type_text" in cell.not_blind
    assert cell.margin == pytest.approx(200 / 3 - 100 / 3)
    assert cell.by_image_type["x-ray"]["table:text"] == 100.0 and cell.by_image_type["ct"]["table:text"] == 0.0
    failures, _ = ceiling_failures(ceiling, max_margin=5.0)
    assert len(failures) == 1 and failures[0].startswith("modality (within-image pairs, each on its own): a fixed "
                                                         "answer table keyed on text")
    assert "66.7% strict" in failures[0] and "above the floor (33.3%" in failures[0]
    assert ceiling_failures(ceiling, max_margin=5.0, units=("contrast",)) == ([], [])


def _balanced_abnormality_set(per_fold: int = 2, folds: int = 5) -> pd.DataFrame:
    """Single abnormality questions, the text yes and no equally often in every fold: no fixed answer wins."""
    rows, wanted = [], {(k, a): per_fold for k in range(folds) for a in ("yes", "no")}
    i = 0
    while any(wanted.values()):
        image_id = f"img{i:04d}"
        i += 1
        fold = image_fold(image_id, folds)
        answer = "yes" if wanted[(fold, "yes")] else "no"
        if not wanted[(fold, answer)]:
            continue
        wanted[(fold, answer)] -= 1
        rows.append({"image_id": image_id, "image_type": "ct/abdomen", "category": "abnormality", "qa_type": "abnormality",
                     "pair_id": f"{image_id}:abnormality", "image_path": f"{image_id}.png", "qid": image_id,
                     "question": "Is there any abnormality in this image?", "answer": answer, "polarity": "single",
                     "source": "test"})
    return pd.DataFrame(rows)


def test_a_set_without_a_fixed_winner_sits_at_random_and_passes():
    ceiling = blind_ceiling(_balanced_abnormality_set())
    cell = ceiling.cell("abnormality", "single")
    assert cell is not None and (cell.units, cell.random, cell.in_sample) == (20, 50.0, 50.0)
    assert cell.learners["table:text"] == 50.0 and cell.ceiling == 50.0
    assert ceiling_failures(ceiling, max_margin=5.0) == ([], [])


@pytest.mark.parametrize("images", [40, 116, 300])
def test_an_exactly_balanced_two_sided_design_is_not_underestimated(images):
    """Half the images "left? yes, right? no", half the reverse: "left? yes, anything else no", fixed in advance,
    wins half the pairs. Folds drawn at random mirror each other's balance, so a table fitted on four answered the
    fifth the wrong way round (32.5% on 40 pairs, 37.1% on 116, 46.3% on 300); stratified folds reach the 50."""
    left, right = "Is the glioma located in the left hemisphere?", "Is the glioma located in the right hemisphere?"
    rows = []
    for i in range(images):
        truth, adversary = (left, right) if i % 2 == 0 else (right, left)
        rows += _pair_rows(f"img{i:04d}", "MRI - Brain", truth, adversary, "position", 0)
    cell = blind_ceiling(pd.DataFrame(rows)).cell("position", "pair")
    assert cell is not None and cell.in_sample == 50.0 and cell.floor == 50.0
    assert cell.ceiling >= 49.0


def test_the_folds_deal_each_pattern_of_questions_and_answers_evenly():
    """Every fold gets a fifth of each image pattern (to within one), and the images' folds do not depend on the
    order of the rows."""
    from probmed.benchmark.audit.blind_ceiling import stratified_folds

    image = np.array([f"img{i:03d}" for i in range(100)], dtype=object)
    text = np.array([i % 3 for i in range(100)])
    yes = np.array([i % 2 == 0 for i in range(100)])
    fold = stratified_folds(image, text, yes, 5)
    for pattern in {(t, y) for t, y in zip(text.tolist(), yes.tolist())}:
        mine = (text == pattern[0]) & (yes == pattern[1])
        counts = np.bincount(fold[mine], minlength=5)
        assert counts.max() - counts.min() <= 1, (pattern, counts)
    order = np.random.default_rng(0).permutation(100)
    assert (stratified_folds(image[order], text[order], yes[order], 5) == fold[order]).all()


def test_the_pair_floor_is_what_any_design_of_n_values_leaves_to_a_fixed_table():
    assert [round(pair_floor(n), 2) for n in (2, 3, 4, 5)] == [50.0, 33.33, 33.33, 30.0]
    assert pair_floor(1) is None


def _condition_row(image_id: str, image_type: str, text: str, answer: str, contrast_id: str | None) -> dict:
    return {"qid": f"{image_id}-{answer}", "image_id": image_id, "image_type": image_type, "category": "condition",
            "qa_type": "entity_gt_0" if answer == "yes" else "entity_hallu_0", "pair_id": f"{image_id}:entity_0",
            "polarity": "gt" if answer == "yes" else "adversarial", "question": text, "answer": answer,
            "entity": text.split()[3].rstrip("?"), "image_path": f"{image_id}.png", "source": "test",
            "strategy": "balanced", "evidence": "known_absent" if answer == "no" else "gt", "licence": "CC0",
            "contrast_id": contrast_id}


MASS, EDEMA = "Is there a mass in this image?", "Is there edema in this image?"


def contrast_set(mixed: int, same: int) -> pd.DataFrame:
    """Contrast pairs of one condition text: `mixed` across two image types (CT abdomen yes, MRI brain no), `same`
    within MRI brain. A table per text is wrong on one side of every pair; one per (image type, text) wins every
    mixed pair and none of the others."""
    rows = []
    for i in range(mixed):
        rows += [_condition_row(f"ct{i:02d}", "CT Scan - Abdomen", MASS, "yes", f"m{i}"),
                 _condition_row(f"mb{i:02d}", "MRI - Brain", MASS, "no", f"m{i}")]
    for i in range(same):
        rows += [_condition_row(f"sy{i:02d}", "MRI - Brain", EDEMA, "yes", f"s{i}"),
                 _condition_row(f"sn{i:02d}", "MRI - Brain", EDEMA, "no", f"s{i}")]
    return pd.DataFrame(rows)


def test_on_contrast_pairs_a_table_per_text_scores_zero_and_one_per_image_type_wins_the_mixed_pairs():
    cell = blind_ceiling(contrast_set(mixed=10, same=10)).cell("condition", "contrast")
    assert cell is not None and (cell.units, cell.texts, cell.random) == (20, 2, 25.0)
    assert cell.learners["table:text"] == 0.0 and cell.in_sample == 0.0
    assert cell.learners["table:type_text"] == 50.0 and cell.reached_by == "table:type_text"
    assert cell.by_image_type["CT Scan - Abdomen"]["table:type_text"] == 100.0
    assert blind_ceiling(contrast_set(2, 2).drop(columns="contrast_id")).cell("condition", "contrast") is None


def test_the_gate_stops_a_set_whose_contrast_pairs_a_type_keyed_table_wins():
    audit = run_audit(contrast_set(mixed=10, same=10), settings=Audit())
    result = gate(audit, 5.0, ceiling_units=("contrast",))
    assert not result.passed and len(result.failures) == 1, result.failures  # each text is 50% yes: no oracle failure
    assert result.failures[0].startswith("condition (contrast pairs (one text, two images)): a fixed answer table "
                                         "keyed on image type + text")
    assert result.failures[0] in gate(audit, 5.0, ceiling_units=UNITS).failures  # and among every unit's
    cell = BlindCeiling.from_json(audit["blind_ceiling"]).cell("condition", "contrast")  # type: ignore[union-attr]
    assert (cell.ceiling, cell.random, cell.margin) == (50.0, 25.0, 25.0)
    headline = headline_metrics(audit)  # the headline: every unit but contrast pairs (audit.json has them)
    assert "audit_ceiling_contrast_condition" not in headline
    assert headline["audit_ceiling_pair_condition"] == pytest.approx(BlindCeiling.from_json(  # type: ignore[union-attr]
        audit["blind_ceiling"]).cell("condition", "pair").ceiling, abs=1e-3)
    text = audit_markdown(audit, result.to_json())
    assert "## Blind ceiling" in text and "a fixed answer table keyed on image type + text" in text
    json.dumps(audit)  # JSON-ready
    assert BlindCeiling.from_json(json.loads(json.dumps(audit["blind_ceiling"]))) == BlindCeiling.from_json(audit["blind_ceiling"])


def test_the_gate_passes_contrast_pairs_without_a_fixed_winner():
    result = gate(run_audit(contrast_set(mixed=0, same=20), settings=Audit()), 5.0)
    assert result.passed, result.failures


def test_an_audit_without_a_blind_ceiling_per_unit_fails_the_gate():
    audit = run_audit(_modality_set({A: 1, B: 1, C: 1, D: 1}), settings=Audit())
    audit["blind_ceiling"] = {"gate_unit": "pair", "pair": {"by_category": {}}}  # the shape before units
    assert any("predates it" in f for f in gate(audit, 5.0).failures)


def test_a_normal_images_hallucinated_finding_is_reported_never_gated():
    rows = [{**_condition_row(f"n{i:02d}", "X-ray - Chest", MASS if i % 2 else EDEMA, "no", None), "polarity": "single",
             "pair_id": f"n{i:02d}:entity_hallu", "qa_type": "entity_hallu"} for i in range(20)]
    ceiling = blind_ceiling(pd.DataFrame(rows))
    cell = ceiling.cell("condition", "single")
    assert cell is not None and cell.ceiling == 100.0 and cell.random == 50.0 and cell.exempt
    assert ceiling_failures(ceiling, 5.0) == ([], [])


# --- the search against brute force --------------------------------------------------------------------------


def _brute_force(key: np.ndarray, unit: np.ndarray, yes: np.ndarray, n_keys: int) -> int:
    """Units right with the best table, every table tried one at a time (independent of best_table)."""
    best = 0
    for bits in product((False, True), repeat=n_keys):
        table = np.array(bits)
        right = sum(all(table[key[i]] == yes[i] for i in np.flatnonzero(unit == u)) for u in np.unique(unit))
        best = max(best, right)
    return best


def _synthetic(seed: int, n_keys: int, n_units: int, pairs_per_unit: int) -> tuple[np.ndarray, ...]:
    """Units of 1..pairs_per_unit pairs (truth, adversary) over skewed values: a structure a table can exploit."""
    rng = np.random.default_rng(seed)
    weights = rng.dirichlet(np.ones(n_keys) * 0.7)
    key, unit, yes = [], [], []
    for u in range(n_units):
        for _ in range(int(rng.integers(1, pairs_per_unit + 1))):
            truth, adversary = rng.choice(n_keys, 2, replace=False, p=weights)
            key += [truth, adversary]
            unit += [u, u]
            yes += [True, False]
    return np.array(key), np.array(unit), np.array(yes)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("pairs_per_unit", [1, 3])
def test_the_search_finds_the_optimum_brute_force_finds(seed, pairs_per_unit):
    """On small synthetic sets (9 keys, 60 units) the coordinate-ascent search, forced on (no exhaustive path),
    and the exhaustive path both reach the optimum of a brute-force search written independently of them."""
    key, unit, yes = _synthetic(seed, 9, 60, pairs_per_unit)
    optimum = _brute_force(key, unit, yes, 9)
    assert units_right(key, unit, yes, best_table(key, unit, yes, 9, exhaustive_max=12)) == optimum
    assert units_right(key, unit, yes, best_table(key, unit, yes, 9, seed=seed, exhaustive_max=0)) == optimum


@pytest.mark.slow
def test_the_search_is_never_beaten_by_an_independent_auditor_by_more_than_a_point():
    """Larger sets (30 keys, 600 units): the search against 200 random restarts of a greedy best-flip ascent."""
    for seed in range(3):
        key, unit, yes = _synthetic(100 + seed, 30, 600, 2)
        ours = units_right(key, unit, yes, best_table(key, unit, yes, 30, seed=seed))
        rng = np.random.default_rng(seed)
        theirs = 0
        for _ in range(200):
            table = rng.random(30) < 0.5
            while True:
                gains = []
                for k in range(30):
                    table[k] = ~table[k]
                    gains.append(units_right(key, unit, yes, table))
                    table[k] = ~table[k]
                k = int(np.argmax(gains))
                if gains[k] <= units_right(key, unit, yes, table):
                    break
                table[k] = ~table[k]
            theirs = max(theirs, units_right(key, unit, yes, table))
        assert 100 * (theirs - ours) / len(np.unique(unit)) <= 1.0, (seed, ours, theirs)


def _blind_beatable_condition_set(images: int = 400) -> pd.DataFrame:
    """Condition pairs built to be blind-beatable although every text is yes exactly as often as no: each common
    finding (effusion, mass) is asked against a rare one on its images, each rare finding against a common one.
    The table "effusion, mass: yes; the rest: no" wins every pair whose truth is common: half of them."""
    common, rare = ["effusion", "mass"], ["nodule", "edema", "fibrosis", "hernia"]
    text = "Is there evidence of {} in this image?".format
    rows = []
    for i in range(images):
        j = i // 2
        truth, adversary = (common[j % 2], rare[j % 4]) if i % 2 == 0 else (rare[j % 4], common[j % 2])
        rows += _pair_rows(f"img{i:04d}", "X-ray - Chest", text(truth), text(adversary), "condition", 0)
    return pd.DataFrame(rows)


@pytest.mark.slow
def test_the_gate_fails_a_set_built_to_be_blind_beatable_on_pairs_and_per_image():
    questions = _blind_beatable_condition_set()
    audit = run_audit(questions, settings=Audit())
    ceiling = BlindCeiling.from_json(audit["blind_ceiling"])
    assert ceiling is not None
    pair, image = ceiling.cell("condition", "pair"), ceiling.cell("condition", "image")
    assert pair is not None and image is not None
    assert pair.ceiling >= 48.0 and image.ceiling >= 48.0 and pair.random == 25.0  # 50 in sample, less fold noise
    failures = gate(audit, 5.0, ceiling_units=UNITS).failures
    assert any(f.startswith("condition (within-image pairs") for f in failures)
    assert any(f.startswith("condition (per image") for f in failures)


def test_a_ceiling_on_too_few_units_to_tell_from_chance_is_unchecked_not_failed():
    """Seven contrast units, three right (42.9% against 25%): a binomial test at alpha 0.05 cannot tell that
    from luck, so the gate lists it as unchecked; 30 of 70 is a failure."""
    def ceiling_of(units: int, right: int) -> BlindCeiling:
        return BlindCeiling(folds=5, cells=(CeilingCell(
            "abnormality", "contrast", units=units, questions=2 * units, texts=1, random=25.0, floor=None,
            ceiling=100 * right / units, reached_by="table:source_text", learners={}, in_sample=0.0),))

    failures, unchecked = ceiling_failures(ceiling_of(7, 3), 5.0, alpha=0.05)
    assert failures == [] and "7 units: too few to tell from chance" in unchecked[0]
    failures, unchecked = ceiling_failures(ceiling_of(70, 30), 5.0, alpha=0.05)
    assert len(failures) == 1 and unchecked == []
    assert len(ceiling_failures(ceiling_of(7, 3), 5.0)[0]) == 1  # alpha 1: every cell checked


def test_a_subset_is_judged_with_tables_learnt_on_the_rest_of_its_set_too():
    """Forty images of a blind-beatable set: the full set's other 360 images teach "effusion, mass: yes" (half
    the pairs), a table a reader of the released set can learn too; it counts, named as learnt elsewhere."""
    full = _blind_beatable_condition_set()
    chosen = {f"img{i:04d}" for i in range(400) if i % 20 in (0, 1)}
    subset = full[full["image_id"].isin(chosen)].reset_index(drop=True)
    rest = full[~full["image_id"].isin(chosen)].reset_index(drop=True)
    cell = blind_ceiling(subset, reference=rest).cell("condition", "pair")
    assert cell is not None and cell.units == 40
    assert cell.learners["table:text:reference"] == 50.0 and cell.ceiling >= 50.0
    assert "table:text:reference" not in blind_ceiling(subset).cell("condition", "pair").learners
    assert learner_label("table:text:5:reference").endswith("learnt on the full set's other images")


def test_the_floor_of_separate_groups_of_values_is_each_groups_floor_and_each_source_is_shown():
    """Glioma sides and meningioma sides are never asked of each other: two groups of two values, so a fixed
    table wins at least half the pairs whatever the design (floor 50, not the 33.3 of four values). Per source,
    the cell says how many units, the floor and the ceiling each has."""
    rows = []
    for i in range(80):
        tumour, source = ("glioma", "A") if i < 40 else ("meningioma", "B")
        left, right = (f"Is the {tumour} located in the {side} hemisphere?" for side in ("left", "right"))
        truth, adversary = (left, right) if i % 2 == 0 else (right, left)
        rows += _pair_rows(f"img{i:04d}", "MRI - Brain", truth, adversary, "position", 0, source=source)
    cell = blind_ceiling(pd.DataFrame(rows)).cell("position", "pair")
    assert cell is not None and cell.texts == 4 and pair_floor(4) == pytest.approx(100 / 3)
    assert cell.floor == 50.0 and cell.ceiling >= 49.0
    assert set(cell.by_source) == {"A", "B"}
    assert all(m["units"] == 40 and m["floor"] == 50.0 and m["random"] == 25.0 for m in cell.by_source.values())


def test_a_table_keyed_on_the_source_has_the_floor_of_each_source_on_its_own():
    """One text pair asked in two sources: joined by the text, the values are one group of 3 (floor 33.3); a
    table keyed on source + text answers each source's two values on its own (floor 50): that floor counts."""
    a, b, c = (f"Is there evidence of {v} in this image?" for v in ("effusion", "nodule", "mass"))
    rows = []
    for i in range(40):
        truth, adversary = (a, b) if i % 2 == 0 else (b, a)
        rows += _pair_rows(f"a{i:03d}", "X-ray - Chest", truth, adversary, "condition", 0, source="A")
    for i in range(40):
        truth, adversary = (a, c) if i % 2 == 0 else (c, a)
        rows += _pair_rows(f"b{i:03d}", "X-ray - Chest", truth, adversary, "condition", 0, source="B")
    cell = blind_ceiling(pd.DataFrame(rows)).cell("condition", "pair")
    assert cell is not None and cell.floor == 50.0


def test_a_text_the_rest_of_the_set_never_asked_is_answered_a_fixed_way_as_well_as_guessed():
    """The subset's adversaries name a finding the rest of the set never asked ("pneumothorax"): the table learnt
    on the rest ("effusion, mass: yes; nodule, edema, fibrosis, hernia: no") has no answer for it. A guess wins
    half of the 20 common-truth pairs (25% of 40), "unseen -> no" all of them (50%), "unseen -> yes" none."""
    full = _blind_beatable_condition_set()
    chosen = {f"img{i:04d}" for i in range(400) if i % 20 in (0, 1)}
    subset = full[full["image_id"].isin(chosen)].reset_index(drop=True)
    rest = full[~full["image_id"].isin(chosen)].reset_index(drop=True)
    adversary = subset["polarity"].eq("adversarial") & ~subset["question"].str.contains("effusion|mass")
    subset.loc[adversary, "question"] = "Is there evidence of pneumothorax in this image?"
    cell = blind_ceiling(subset, reference=rest).cell("condition", "pair")
    assert cell is not None and cell.units == 40
    assert cell.learners["table:text:reference"] == 25.0
    assert cell.learners["table:text:reference:unseen-no"] == 50.0 and cell.ceiling >= 50.0
    assert cell.learners["table:text:reference:unseen-yes"] == 0.0
    assert learner_label("table:text:5:reference:unseen-no").endswith("answering no to a text it was not taught")


def test_per_image_tables_are_also_fitted_to_win_the_images_pairs_one_by_one():
    """The per-image unit's tables are fitted on images and, as ``:pairs`` learners, on the images' pairs; with one
    pair per image the two objectives are one and score alike. The pair unit has no ``:pairs`` learners."""
    ceiling = blind_ceiling(_blind_beatable_condition_set())
    image, pair = ceiling.cell("condition", "image"), ceiling.cell("condition", "pair")
    assert image is not None and pair is not None
    paired = [n for n in image.learners if n.endswith(":pairs")]
    assert len(paired) == len([n for n in pair.learners if n.startswith("table:")]) > 0
    assert all(image.learners[n] == image.learners[n[:-len(":pairs")]] for n in paired)
    assert not any(n.endswith(":pairs") for n in pair.learners)
    assert learner_label("table:text:pairs").endswith("fitted to win each pair")
