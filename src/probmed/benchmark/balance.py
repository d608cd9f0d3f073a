"""Adversarial values drawn so that no question text predicts its answer.

A question text ("Is this an X-ray image?", "Is there evidence of a mass in this
image?") is asked as a ground-truth question (answer yes) on the images where
its value is true, and as an adversarial question (answer no) on images where
it is not. A text-only model learns nothing from the text when each text is
answered "yes" about as often as "no" across the set. Two tools get there:

* :func:`balanced_design` (categories with one pair per image: modality, organ):
  the largest set of images whose pairs balance and on which no fixed yes/no
  per value wins much more than the least any balanced design allows (its
  maximum directed cut, :func:`fixed_policy_share`). With a dominant value
  (X-ray on most images) or a field-of-view rule that leaves one adversary
  (a chest image may only be asked about the brain), not every image can be
  asked; small integer programs (a circulation: every value's yes-count equals
  its no-count, and a bound per fixed policy) pick how many images of each kind
  are asked with which adversary, and a seeded draw picks which (given priorities,
  e.g. how many other questions each image has, the lowest first: the counts
  stay the same, so no image need lose its only question to one that has more).
* :func:`assign_balanced` (every category): each adversarial slot takes a value
  among the candidates the truth rules allow so that every value is asked as a
  hallucination exactly as often as it is ground truth (where the truth rules
  leave enough slots that can take it), known-absent candidates first. Surplus
  slots go to the values most often ground truth, so their texts lean "no" the
  least.
* :func:`spread_partners`: the pairs' adversaries exchanged so that each value's
  pairs spread over its partners (no fixed yes/no per value wins a bunch).
"""

from __future__ import annotations

import random
from collections import Counter
from typing import Any, Hashable, Mapping, NamedTuple, Sequence

import numpy as np

SEGMENTS = 100
SHORTFALL, OVERFILL, EMPTY = 1000.0, 20.0, 10.0  # costs: a missing "no" > a "no" beyond doubling > an empty slot
KNOWN_ABSENT = "known_absent"
ASSUMED_ABSENT = "assumed_absent"


class Slot(NamedTuple):
    """One adversarial question to fill: the values the truth rules allow for it (a named tuple: one per
    adversarial question, hundreds of thousands per large set, and a tuple builds fastest)."""

    key: Hashable
    candidates: tuple[str, ...]
    known_absent: frozenset[str] = frozenset()
    group: Hashable = None  # slots of one group (an image's pairs) never name the same value twice


class Choice(NamedTuple):
    """The value an adversarial slot names, and why it is believed absent."""

    value: str
    evidence: str  # KNOWN_ABSENT | ASSUMED_ABSENT


def _distinct_rows(live: Sequence[Slot], pairs: Sequence[tuple[int, str]], n: int) -> Any:
    """One row per (group, value) with two or more slots of the group able to take the value: at most one does."""
    from scipy.sparse import coo_matrix

    members: dict[tuple[Hashable, str], list[int]] = {}
    for j, (si, c) in enumerate(pairs):
        if live[si].group is not None:
            members.setdefault((live[si].group, c), []).append(j)
    rows = [js for js in members.values() if len(js) > 1]
    if not rows:
        return None
    row_of = [i for i, js in enumerate(rows) for _ in js]
    column_of = [j for js in rows for j in js]
    return coo_matrix((np.ones(len(column_of)), (row_of, column_of)), shape=(len(rows), n)).tocsr()


def assign_balanced(slots: Sequence[Slot], targets: Mapping[str, int], rng: random.Random) -> dict[Hashable, Choice | None]:
    """Each slot's value (None: no candidate, or none that keeps the texts balanced), so that every value is used
    as often as its target.

    A transportation problem solved exactly as an integer program: every slot takes
    one of its candidates, the slots of one group (an image) different ones; a value used fewer
    times than its target costs most, one used more often costs less the more
    often it is ground truth (surplus slots spread over the common values);
    known-absent candidates are preferred, and seeded noise in the costs picks a
    random assignment among the equally good ones.
    """
    from scipy.optimize import Bounds, LinearConstraint, milp
    from scipy.sparse import coo_matrix

    live = [s for s in slots if s.candidates]
    out: dict[Hashable, Choice | None] = {s.key: None for s in slots if not s.candidates}
    if not live:
        return out
    values = sorted({c for s in live for c in s.candidates})
    vidx = {v: i for i, v in enumerate(values)}
    pairs = [(si, c) for si, s in enumerate(live) for c in s.candidates]
    n_x, n_v = len(pairs), len(values)
    reach = Counter(c for _, c in pairs)
    # surplus uses of a value in pieces of ~1% of its target; a piece costs 1 + the surplus share it brings the
    # value to, a convex cost the program fills cheapest first, so surplus spreads in proportion to the targets
    # (beyond doubling a value, or on a value never ground truth, a slot is rather left empty)
    extra = []  # (value index, width, cost)
    for v in values:
        t = targets.get(v, 0)
        width = -(-(t + 1) // SEGMENTS)
        pieces = min(-(-reach[v] // width), -(-t // width)) if t else 0
        extra += [(vidx[v], width, 1.0 + k * width / t) for k in range(1, pieces + 1)]
        extra += [(vidx[v], reach[v], OVERFILL)]
    cost = [(0.0 if c in live[si].known_absent else 0.5) + 0.01 * rng.random() for si, c in pairs]
    # variables: x (slot, value) | surplus pieces | shortfall per value | a slot left empty (its pair is not
    # asked: better than doubling a text's "no" answers, worse than anything else)
    cost += [c for _, _, c in extra] + [SHORTFALL] * n_v + [EMPTY] * len(live)
    rows = [r for si, c in pairs for r in (si, len(live) + vidx[c])]
    cols = [j for j in range(n_x) for _ in (0, 1)]
    data = [1.0] * (2 * n_x)
    rows += [len(live) + i for i, _, _ in extra] + [len(live) + i for i in range(n_v)] + list(range(len(live)))
    n = n_x + len(extra) + n_v + len(live)
    cols += list(range(n_x, n))
    data += [-1.0] * len(extra) + [1.0] * n_v + [1.0] * len(live)
    a = coo_matrix((data, (rows, cols)), shape=(len(live) + n_v, n)).tocsr()
    rhs = np.array([1.0] * len(live) + [float(targets.get(v, 0)) for v in values])
    upper = np.array([1.0] * n_x + [float(w) for _, w, _ in extra] + [np.inf] * n_v + [1.0] * len(live))
    constraints = [LinearConstraint(a, rhs, rhs)]
    distinct = _distinct_rows(live, pairs, n)
    if distinct is not None:
        constraints.append(LinearConstraint(distinct, 0, 1))
    res = milp(c=np.array(cost), constraints=constraints, integrality=np.ones(n), bounds=Bounds(0, upper))
    if not res.success:  # pragma: no cover - always feasible (surplus, shortfall and empty slots absorb everything)
        raise RuntimeError(f"balanced assignment: {res.message}")
    for j in np.flatnonzero(np.rint(res.x[:n_x]) > 0):
        si, c = pairs[j]
        out[live[si].key] = Choice(c, KNOWN_ABSENT if c in live[si].known_absent else ASSUMED_ABSENT)
    return out


SPREAD_SWEEPS = 60  # proposals per pair in spread_partners' local search


def spread_partners(slots: Sequence[Slot], truths: Mapping[Hashable, str], chosen: Mapping[Hashable, Choice | None],
                    rng: random.Random, sweeps: int = SPREAD_SWEEPS) -> dict[Hashable, Choice | None]:
    """``chosen`` with the values of the pair slots (``truths``: slot key -> its pair's ground-truth value)
    exchanged between slots so that each value's pairs spread over its partners as evenly as the truth rules
    allow; ``slots``: every slot of the assignment (a single slot's value still counts in its image).

    Why: :func:`assign_balanced` makes every value as often "no" as "yes", but an optimal transportation plan is
    sparse: each value's adversaries bunch on a few partners, and a fixed yes/no per value wins the pairs along
    the bunches (the design's directed cut: 39.5% of ChestX-ray14's condition pairs where 26.5% is the least a
    design allows). Exchanging two slots' values keeps every value's count, so every text stays balanced; an
    exchange is taken when each value is among the other slot's candidates with the same evidence (known or
    assumed absent), no image then names a value twice, and it brings the (truth, adversary) counts closer to
    the product of the values' counts (chi-square distance): on a product design a fixed policy wins about a
    quarter of the pairs, the least possible.
    """
    out = dict(chosen)
    live = [s for s in slots if s.key in truths and out.get(s.key) is not None]
    if len(live) < 2:
        return out
    truth = [truths[s.key] for s in live]
    value = [out[s.key].value for s in live]  # type: ignore[union-attr]
    rows, cols, cells = Counter(truth), Counter(value), Counter(zip(truth, value))
    in_group = Counter((s.group, c.value) for s in slots if s.group is not None
                       for c in [out.get(s.key)] if c is not None)

    def cost(t: str, c: str, step: int) -> float:
        """The change of cells[t, c]**2 / (rows[t] * cols[c]) when cells[t, c] moves by step (+1 or -1)."""
        return (1 + 2 * step * cells[t, c]) / (rows[t] * cols[c])

    n = len(live)
    for _ in range(sweeps * n):
        i, j = rng.randrange(n), rng.randrange(n)
        s1, s2, t1, t2, c1, c2 = live[i], live[j], truth[i], truth[j], value[i], value[j]
        if t1 == t2 or c1 == c2 or c2 not in s1.candidates or c1 not in s2.candidates:
            continue
        if (c2 in s1.known_absent) != (c1 in s1.known_absent) or (c1 in s2.known_absent) != (c2 in s2.known_absent):
            continue
        if s1.group != s2.group and ((s1.group is not None and in_group[s1.group, c2])
                                     or (s2.group is not None and in_group[s2.group, c1])):
            continue
        if cost(t1, c1, -1) + cost(t2, c2, -1) + cost(t1, c2, 1) + cost(t2, c1, 1) >= -1e-12:
            continue
        cells.subtract({(t1, c1): 1, (t2, c2): 1})
        cells.update({(t1, c2): 1, (t2, c1): 1})
        if s1.group != s2.group:
            in_group.subtract({(s1.group, c1): 1, (s2.group, c2): 1})
            in_group.update({(s1.group, c2): 1, (s2.group, c1): 1})
        value[i], value[j] = c2, c1
    for slot, c in zip(live, value):
        out[slot.key] = Choice(c, KNOWN_ABSENT if c in slot.known_absent else ASSUMED_ABSENT)
    return out


CUT_SLACK = 0.02  # how far above the least achievable share a fixed policy may win, to keep more images
MAX_CUT_VALUES = 12  # beyond this many values, only policies answering yes to 1 or 2 values (or all but them)


def policies(values: Sequence[str]) -> list[frozenset[str]]:
    """The yes-sets of the fixed policies a design is checked against: every proper non-empty subset of the
    values, or (beyond MAX_CUT_VALUES values) those of one or two values and their complements."""
    from itertools import combinations

    n = len(values)
    sizes = range(1, n) if n <= MAX_CUT_VALUES else (1, 2, n - 2, n - 1)
    return [frozenset(c) for k in sorted(set(sizes)) if 0 < k < n for c in combinations(values, k)]


def fixed_policy_share(design: Mapping[tuple[str, str], float]) -> float:
    """The best share of pairs a fixed yes/no per value wins on a design {(truth, adversary): count}: a pair is
    won when the policy says yes to its truth and no to its adversary (the design's maximum directed cut)."""
    total = float(sum(design.values()))
    values = sorted({v for pair in design for v in pair})
    if not total or len(values) < 2:
        return 0.0
    return max(sum(w for (t, a), w in design.items() if t in s and a not in s) for s in policies(values)) / total


def _cut_rows(var: Sequence[tuple[tuple[str, tuple[str, ...]], str]], values: Sequence[str]) -> np.ndarray:
    """One row per fixed policy: which design variables (kind, adversary) it wins."""
    subsets = policies(values)
    rows = np.zeros((len(subsets), len(var)))
    for i, yes in enumerate(subsets):
        for j, (g, a) in enumerate(var):
            rows[i, j] = float(g[0] in yes and a not in yes)
    return rows


def _least_cut(var: Sequence[tuple[tuple[str, tuple[str, ...]], str]], flow: np.ndarray, cut: np.ndarray) -> float:
    """The smallest share a fixed policy can be held to by any balanced design on these kinds (an LP over
    normalised designs: weights summing to 1, every value's yes-count equal to its no-count)."""
    from scipy.optimize import LinearConstraint, milp

    n = len(var)
    res = milp(c=np.r_[np.zeros(n), 1.0],
               constraints=[LinearConstraint(np.r_[np.ones(n), 0.0][None, :], 1, 1),
                            LinearConstraint(np.hstack([flow, np.zeros((len(flow), 1))]), 0, 0),
                            LinearConstraint(np.hstack([cut, -np.ones((len(cut), 1))]), -np.inf, 0)],
               integrality=np.zeros(n + 1), bounds=(0, np.inf))
    return float(res.x[-1]) if res.success else 1.0


def balanced_design(items: Sequence[tuple[Hashable, str, tuple[str, ...]]], rng: random.Random,
                    slack: float = CUT_SLACK, priority: Mapping[Hashable, tuple[int, ...]] | None = None,
                    ) -> dict[Hashable, str]:
    """{key: adversary} for the largest subset of one-pair-per-image items whose texts balance exactly and on
    which no fixed yes/no per value wins more than `slack` above the least share any balanced design allows.

    Why: balance per text is not enough. With X-ray on most images, "X-ray? yes, CT? no, MRI? no" wins every
    X-ray image's pair; uniform over the ordered value pairs it wins floor(n/2)ceil(n/2)/(n(n-1)) of them (1/3
    for 3 or 4 values), the least possible. ``items``: (key, ground-truth value, allowed adversary values);
    items with the same value and allowed set are interchangeable: integer programs decide how many of each kind
    are asked with which adversary (largest, then fairest: every kind keeps the same share), the seeded ``rng``
    which items. ``priority`` (key -> sort key, lowest first; every item has one) orders the items of a kind
    before the draw, ties in the seeded order: it changes which interchangeable items are taken, never how many
    of each kind are asked with which adversary, so every fairness property of the design is kept.
    """
    from scipy.optimize import LinearConstraint, milp

    groups: dict[tuple[str, tuple[str, ...]], list[Hashable]] = {}
    for key, value, allowed in items:
        if allowed:
            groups.setdefault((value, tuple(sorted(allowed))), []).append(key)
    if not groups:
        return {}
    kinds = sorted(groups)
    values = sorted({v for v, _ in kinds} | {a for _, allowed in kinds for a in allowed})
    var = [(g, a) for g in kinds for a in g[1]]  # x[g, a]: items of kind g asked with adversary a
    n = len(var)
    cap = np.zeros((len(kinds), n))
    flow = np.zeros((len(values), n))
    for j, (g, a) in enumerate(var):
        cap[kinds.index(g), j] = 1
        flow[values.index(g[0]), j] += 1  # a yes for the item's own value
        flow[values.index(a), j] -= 1  # a no for its adversary
    cut = _cut_rows(var, values)
    tau = _least_cut(var, flow, cut) + slack
    held = cut - tau  # every policy wins at most tau of the asked pairs: cut.x - tau * sum(x) <= 0
    sizes = np.array([len(groups[g]) for g in kinds], dtype=float)
    balanced = [LinearConstraint(cap, 0, sizes), LinearConstraint(flow, 0, 0), LinearConstraint(held, -np.inf, 0)]
    first = milp(c=-np.ones(n), constraints=balanced, integrality=np.ones(n), bounds=(0, np.inf))
    if not first.success:  # pragma: no cover - the all-zero solution is always feasible
        raise RuntimeError(f"balanced design: {first.message}")
    # among the largest designs, the fairest: every kind keeps at least the same share t of its items
    # (variables x..., t; maximise t with the total fixed), so no kind is left out while another is kept whole
    total = float(np.rint(-first.fun))
    zero = np.zeros((1, 1))
    res = milp(
        c=np.r_[np.zeros(n), -1.0],
        constraints=[LinearConstraint(np.hstack([cap, np.zeros((len(kinds), 1))]), 0, sizes),
                     LinearConstraint(np.hstack([flow, np.zeros((len(values), 1))]), 0, 0),
                     LinearConstraint(np.hstack([held, np.zeros((len(held), 1))]), -np.inf, 0),
                     LinearConstraint(np.r_[np.ones(n), zero[0]][None, :], total, total),
                     LinearConstraint(np.hstack([cap, -sizes[:, None]]), 0, np.inf)],
        integrality=np.r_[np.ones(n), 0],
        bounds=(0, np.r_[np.full(n, np.inf), 1.0]),
    )
    if not res.success:  # pragma: no cover - the first solution with t = 0 is feasible
        raise RuntimeError(f"balanced design: {res.message}")
    return _draw_items(groups, var, np.rint(res.x[:n]).astype(int), rng, priority)


def _draw_items(groups: Mapping[tuple[str, tuple[str, ...]], list[Hashable]],
                var: Sequence[tuple[tuple[str, tuple[str, ...]], str]], counts: np.ndarray,
                rng: random.Random, priority: Mapping[Hashable, tuple[int, ...]] | None = None) -> dict[Hashable, str]:
    """The items of each kind the design asks, each with its adversary: the first by ``priority`` (ties, and
    every item without priorities, in the seeded order), and the adversaries dealt among the taken items in a
    second seeded order, so that which adversary an item is asked with does not follow its priority."""
    out: dict[Hashable, str] = {}
    for g in sorted(groups):
        members = list(groups[g])
        rng.shuffle(members)
        if priority is not None:
            members.sort(key=priority.__getitem__)  # stable: equal priorities keep the seeded order
        adversaries = [a for (gg, a), k in zip(var, counts) if gg == g for _ in range(k)]
        taken = members[:len(adversaries)]
        rng.shuffle(taken)
        out.update(zip(taken, adversaries))
    return out


def balanced_subset(items: Sequence[tuple[Hashable, str, tuple[str, ...]]], rng: random.Random) -> set[Hashable]:
    """Keys of the items :func:`balanced_design` asks."""
    return set(balanced_design(items, rng))
