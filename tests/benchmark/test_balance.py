"""Balancing adversarial values: exact where the truth rules allow it, fair where they do not."""

from __future__ import annotations

import random
from collections import Counter

from probmed.benchmark.balance import (
    ASSUMED_ABSENT,
    CUT_SLACK,
    KNOWN_ABSENT,
    Slot,
    assign_balanced,
    balanced_design,
    balanced_subset,
    fixed_policy_share,
    spread_partners,
)


def test_every_value_is_hallucinated_as_often_as_it_is_ground_truth() -> None:
    rng = random.Random(0)
    values = ["a"] * 30 + ["b"] * 20 + ["c"] * 10
    slots = [Slot(i, tuple(x for x in "abc" if x != v)) for i, v in enumerate(values)]
    got = assign_balanced(slots, Counter(values), rng)
    assert Counter(c.value for c in got.values()) == Counter(values)
    assert all(got[i].value != v for i, v in enumerate(values))  # never the slot's own value


def test_known_absent_preferred_and_surplus_spread_in_proportion() -> None:
    rng = random.Random(1)
    slots = [Slot(i, ("a", "b"), frozenset({"b"})) for i in range(10)]
    got = assign_balanced(slots, {"a": 5, "b": 5}, rng)
    assert Counter(c.value for c in got.values()) == {"a": 5, "b": 5}
    assert {c.evidence for c in got.values() if c.value == "b"} == {KNOWN_ABSENT}
    assert {c.evidence for c in got.values() if c.value == "a"} == {ASSUMED_ABSENT}
    # 300 slots for targets 100 + 50: the 150 surplus follow the targets (about 2:1), never the unseen value
    many = [Slot(i, ("a", "b", "never")) for i in range(300)]
    used = Counter(c.value for c in assign_balanced(many, {"a": 100, "b": 50}, rng).values())
    assert used["never"] == 0 and abs(used["a"] - 2 * used["b"]) <= 6


def test_slots_without_candidates_stay_empty() -> None:
    got = assign_balanced([Slot("x", ()), Slot("y", ("a",))], {"a": 1}, random.Random(0))
    assert got["x"] is None and got["y"].value == "a"


def _design(items: list[tuple[str, str, tuple[str, ...]]]) -> Counter:
    value = {k: v for k, v, _ in items}
    return Counter((value[k], a) for k, a in balanced_design(items, random.Random(0)).items())


def test_balanced_design_holds_every_fixed_policy_near_the_least_share() -> None:
    # X-ray on 80 images, CT on 15, MRI on 5: balance per text alone would keep 20 X-ray images, on which
    # "X-ray? yes, CT? no, MRI? no" wins 5/12 of the pairs; no balanced design on 3 values goes below 1/3
    items = [(f"x{i}", "x-ray", ("ct", "mri")) for i in range(80)]
    items += [(f"c{i}", "ct", ("x-ray", "mri")) for i in range(15)] + [(f"m{i}", "mri", ("x-ray", "ct")) for i in range(5)]
    design = _design(items)
    assert fixed_policy_share(design) <= 1 / 3 + CUT_SLACK + 1e-9
    for v in ("x-ray", "ct", "mri"):  # every value's text still balances: as often adversary as truth
        assert sum(n for (t, _), n in design.items() if t == v) == sum(n for (_, a), n in design.items() if a == v)
    assert sum(design.values()) >= 15  # at least the uniform design on the 5 MRI images' share
    assert balanced_subset(items, random.Random(0)) == set(balanced_design(items, random.Random(0)))


def test_balanced_design_where_truth_forbids_better_keeps_the_fair_share() -> None:
    # a chest image may only be asked about the brain: every pair pits the brain against a body organ, so
    # "brain? yes" wins half of them whatever the design (the audit reports it); chest and abdomen share fairly
    organs = [(f"h{i}", "chest", ("brain",)) for i in range(90)] + [(f"a{i}", "abdomen", ("brain",)) for i in range(10)]
    organs += [(f"b{i}", "brain", ("chest", "abdomen")) for i in range(20)]
    design = _design(organs)
    assert fixed_policy_share(design) == 0.5
    kept: Counter = Counter()
    for (t, _), n in design.items():
        kept[t] += n
    assert kept == {"brain": 20, "chest": 18, "abdomen": 2}  # the same share (20%) of chest and abdominal images


def test_fixed_policy_share_is_the_best_directed_cut() -> None:
    uniform = {(a, b): 1 for a in "abcd" for b in "abcd" if a != b}
    assert fixed_policy_share(uniform) == 4 / 12  # yes to two values: 2 x 2 of the 12 ordered pairs
    assert fixed_policy_share({("a", "b"): 3, ("b", "a"): 3}) == 0.5


def test_slots_of_one_group_never_share_a_value() -> None:
    rng = random.Random(0)
    slots = [Slot((img, k), ("a", "b", "c"), group=img) for img in range(20) for k in range(2)]
    got = assign_balanced(slots, {"a": 20, "b": 10, "c": 10}, rng)
    for img in range(20):
        assert got[(img, 0)].value != got[(img, 1)].value
    assert Counter(c.value for c in got.values()) == {"a": 20, "b": 10, "c": 10}


def test_the_draw_takes_the_item_whose_image_has_no_other_question() -> None:
    # 2 X-ray images, 1 CT, 1 MRI: the design asks one X-ray image (x-ray, ct, mri each once yes and once no);
    # the two X-ray images are interchangeable for it, and the one whose image has no other question is taken
    items = [("x-busy", "x-ray", ("ct", "mri")), ("x-bare", "x-ray", ("ct", "mri")),
             ("c", "ct", ("x-ray", "mri")), ("m", "mri", ("x-ray", "ct"))]
    other_questions = {"x-busy": (10,), "x-bare": (0,), "c": (0,), "m": (0,)}
    value = {k: v for k, v, _ in items}
    drawn = set()
    for seed in range(20):  # whatever the seed, the image without other questions is the X-ray image asked
        plain = balanced_design(items, random.Random(seed))
        ranked = balanced_design(items, random.Random(seed), priority=other_questions)
        drawn |= {k for k in plain if value[k] == "x-ray"}
        assert {k for k in ranked if value[k] == "x-ray"} == {"x-bare"}
        assert Counter((value[k], a) for k, a in plain.items()) == Counter((value[k], a) for k, a in ranked.items())
    assert drawn == {"x-busy", "x-bare"}  # without priorities the seeded draw takes either


def test_priorities_change_which_items_never_how_many() -> None:
    items = [(f"x{i}", "x-ray", ("ct", "mri")) for i in range(40)]
    items += [(f"c{i}", "ct", ("x-ray", "mri")) for i in range(9)] + [(f"m{i}", "mri", ("x-ray", "ct")) for i in range(4)]
    value = {k: v for k, v, _ in items}
    rng_priority = random.Random(7)
    priority = {k: (rng_priority.randrange(3), i % 2) for i, (k, _, _) in enumerate(items)}
    plain = balanced_design(items, random.Random(0))
    ranked = balanced_design(items, random.Random(0), priority=priority)
    assert Counter((value[k], a) for k, a in plain.items()) == Counter((value[k], a) for k, a in ranked.items())
    # within each kind, no item left out has a lower priority than one taken
    for kind in ("x-ray", "ct", "mri"):
        taken = [priority[k] for k in ranked if value[k] == kind]
        left = [priority[k] for k, v, _ in items if v == kind and k not in ranked]
        assert not left or not taken or max(taken) <= min(left)
    assert balanced_design(items, random.Random(0), priority=priority) == ranked  # seeded: the same draw again


def test_spreading_the_partners_keeps_every_count_and_rule_and_lowers_the_best_fixed_policy() -> None:
    """A sparse plan (each value's adversaries bunched on one partner: a -> b -> c -> d -> a) is won by "yes to a
    and c" on half its pairs; exchanges spread the partners without changing any value's count, any slot's
    candidates or evidence, or letting an image name a value twice."""
    rng = random.Random(0)
    ring = {"a": "b", "b": "c", "c": "d", "d": "a"}
    slots, truths, chosen = [], {}, {}
    for img in range(200):
        truth = "abcd"[img % 4]
        slot = Slot((img, 0), tuple(v for v in "abcd" if v != truth), frozenset("abcd") - {truth}, group=img)
        slots.append(slot)
        truths[slot.key] = truth
        chosen[slot.key] = assign_balanced([slot], {ring[truth]: 1}, rng)[slot.key]
    before = Counter((truths[k], c.value) for k, c in chosen.items())
    assert fixed_policy_share(before) == 0.5
    spread = spread_partners(slots, truths, chosen, random.Random(1))
    after = Counter((truths[k], c.value) for k, c in spread.items())
    assert Counter(c.value for c in spread.values()) == Counter(c.value for c in chosen.values())
    assert all(c.value in s.candidates and c.value != truths[s.key] and c.evidence == KNOWN_ABSENT
               for s in slots for c in [spread[s.key]])
    assert fixed_policy_share(after) <= 4 / 12 + 0.02  # the uniform design's share over four values
