"""Official-compatible scorer: the original release's ``calculate_score.py``, rule for rule.

Purpose: numbers that can be set beside the published ProbMed leaderboard, quirks
included. The rules (stated here, and nowhere else in the repository):

* Parse: after ``strip()``, a ``gt_ans`` of exactly ``"yes"`` is right iff the
  response contains ``Yes`` (case-sensitive) or lower-cases to ``yes``/``yes.``;
  any other ``gt_ans`` is right iff the response contains ``No`` ("Normal",
  "Not sure" count) or lower-cases to ``no``/``no.``.
* Records are grouped by ``image_type`` and walked in file order; a new image
  starts whenever ``id`` changes within the type. ``qa_type`` containing
  ``modality`` / ``body_part``, equal to ``abnormality``, containing ``entity``
  selects the category, anything else is position.
* Modality / organ: one list of scores per image; a list whose length is not 2
  is dropped, except on the last image of a type (kept whatever its length).
* Abnormality: one flat list of scores per type; accuracy is their mean.
* Condition / position: bare ``entity_hallu`` makes the image's entry a single
  score; ``*_gt_<k>`` opens pair k; a following non-gt record with the same
  trailing k closes it (only a closed pair counts; a gt record left open is
  dropped, as the original appends a pair when it closes); a non-gt record whose
  k differs from the open pair is skipped. An image is right iff every pair is all 1 (or its single score is
  1); ``acc_wo_adv`` iff every first score is 1; images without such questions
  are skipped in the accuracy but counted in ``num``.
* ``num``: kept images (modality/organ), questions (abnormality), all images of
  the type (condition/position). Categories across types: ``num``-weighted mean;
  overall: ``num``-weighted mean of the five (``acc_wo_adv``: of the four paired).

Where the original crashes, a message goes to ``warnings`` and scoring goes on:
an image type with no kept questions of a category gets ``acc: null`` there and
adds nothing to that category's mean; a category null everywhere is null in
``by_category`` and left out of ``overall``; an adversarial record without an
open pair on its image, or a second adversarial record for a closed pair, is
skipped. Decisions where the rules are silent (documented, each warned): a kept
but *empty* last-image modality/organ list (the original would index ``[0]``
of an empty list) is dropped; ``by_category.num`` sums the ``num`` of the image
types that contributed an accuracy.

Output shape::

    {"by_image_type": {TYPE: {CAT: {"acc", "acc_wo_adv", "num"}}},
     "by_category": {CAT: {"acc", "acc_wo_adv", "num"}},
     "overall": {"acc", "num", "acc_wo_adv", "num_wo_adv"},
     "warnings": [str]}

with percentages, ``acc_wo_adv`` null for abnormality.

Implementation: one pass over the records keeping per-type state (the
original filters the whole file once per image type).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

from probmed.core.response_file import load_json_list, unread_fields_valid, validate_response_records

CATS: tuple[str, ...] = ("modality", "organ", "abnormality", "condition", "position")
PAIRED: tuple[str, ...] = ("modality", "organ", "condition", "position")


def official_correct(gt_ans: str, response: str) -> int:
    """1 if the original's substring rule counts ``response`` right for ``gt_ans``, else 0."""
    r = response.strip()
    if gt_ans == "yes":
        return 1 if ("Yes" in r or r.lower() in ("yes", "yes.")) else 0
    return 1 if ("No" in r or r.lower() in ("no", "no.")) else 0


def _category(qa_type: str) -> str:
    if "modality" in qa_type:
        return "modality"
    if "body_part" in qa_type:
        return "organ"
    if qa_type == "abnormality":
        return "abnormality"
    if "entity" in qa_type:
        return "condition"
    return "position"


class _Image:
    """Scores of one image within one image type."""

    __slots__ = ("id", "first_record", "modality", "organ", "entries", "open_k", "open_pair")

    def __init__(self, image_id: Any, first_record: int) -> None:
        self.id = image_id
        self.first_record = first_record
        self.modality: list[int] = []
        self.organ: list[int] = []
        # condition/position: the closed pairs in order; a bare entity_hallu replaces it with
        # [score], to which later closed pairs are appended (the original's list)
        self.entries: dict[str, list[Any]] = {"condition": [], "position": []}
        self.open_k: dict[str, str | None] = {"condition": None, "position": None}
        self.open_pair: dict[str, list[int] | None] = {"condition": None, "position": None}


class _TypeState:
    __slots__ = ("name", "n_images", "current", "mod_lists", "org_lists", "abn", "cond", "pos")

    def __init__(self, name: str) -> None:
        self.name = name
        self.n_images = 0
        self.current: _Image | None = None
        self.mod_lists: list[list[int]] = []
        self.org_lists: list[list[int]] = []
        self.abn: list[int] = []
        self.cond: list[list[Any]] = []
        self.pos: list[list[Any]] = []

    def flush(self, last: bool, warnings: list[str]) -> None:
        img = self.current
        if img is None:
            return
        for cat, lists, scores in (("modality", self.mod_lists, img.modality), ("organ", self.org_lists, img.organ)):
            if len(scores) == 2:
                lists.append(scores)
            elif last:
                if scores:
                    lists.append(scores)  # the original checks the length only when it moves on
                else:
                    warnings.append(
                        f"image type {self.name!r}: last image {img.id!r} has no {cat} questions; "
                        "its empty list is dropped, as the original drops it"
                    )
        self.cond.append(img.entries["condition"])
        self.pos.append(img.entries["position"])


def _qa_info(qa_type: str) -> tuple[str, str, bool]:
    """(category, pair key k: the text after the last underscore, ground-truth record?) of one qa_type."""
    return _category(qa_type), qa_type.rsplit("_", 1)[-1], "_gt" in qa_type


def _pair_record(
    img: _Image, qa_type: str, info: tuple[str, str, bool], score: int, idx: int, state: _TypeState,
    warnings: list[str],
) -> None:
    cat, k, is_gt = info
    entry = img.entries[cat]
    if cat == "condition" and qa_type == "entity_hallu":
        if entry and isinstance(entry[0], list):
            warnings.append(
                f"record {idx} (image {img.id!r}, {qa_type}): bare entity_hallu after condition pairs; "
                "the image's entry becomes this single score"
            )
        img.entries[cat] = [score]  # an open pair stays open, as the original's pair id
        return
    if is_gt:
        img.open_pair[cat] = [score]
        img.open_k[cat] = k
        return
    open_k = img.open_k[cat]
    if open_k is None:
        first = state.n_images == 1
        warnings.append(
            f"record {idx} (image {img.id!r}, {qa_type}): adversarial record without an open pair"
            + (" on the first image of its type (the original would fail)" if first else "")
            + "; skipped"
        )
        return
    if k != open_k:
        return  # the original skips it silently
    pair = img.open_pair[cat]
    assert pair is not None
    if len(pair) >= 2:
        warnings.append(
            f"record {idx} (image {img.id!r}, {qa_type}): second adversarial record for closed pair {k}; skipped"
        )
        return
    pair.append(score)
    entry.append(pair)


def _pct(num: float, den: float) -> float | None:
    return None if den == 0 else 100.0 * num / den


def _pair_image_scores(entries: list[list[Any]]) -> tuple[int, int, int]:
    """(images with questions, images all right, images with all first scores right)."""
    n = right = first = 0
    for e in entries:
        if not e:
            continue
        n += 1
        if not isinstance(e[0], list):  # a single score, then any pairs closed after it
            right += all(s == 1 for s in e)  # a pair is never == 1, as in the original
            first += e[0] == 1
            continue
        right += all(0 not in pair for pair in e)  # scores are 0 or 1: no 0 means all 1
        first += all(pair[0] == 1 for pair in e)
    return n, right, first


def _type_result(st: _TypeState, warnings: list[str]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for cat, lists in (("modality", st.mod_lists), ("organ", st.org_lists)):
        n = len(lists)
        right = sum(0 not in lst for lst in lists)  # scores are 0 or 1
        first = sum(lst[0] == 1 for lst in lists)
        out[cat] = {"acc": _pct(right, n), "acc_wo_adv": _pct(first, n), "num": n}
        if n == 0:
            warnings.append(f"image type {st.name!r}: no kept {cat} list (the original divides by zero); acc null")
    n_abn = len(st.abn)
    out["abnormality"] = {"acc": _pct(sum(st.abn), n_abn), "acc_wo_adv": None, "num": n_abn}
    if n_abn == 0:
        warnings.append(f"image type {st.name!r}: no abnormality questions (the original divides by zero); acc null")
    for cat, entries in (("condition", st.cond), ("position", st.pos)):
        n, right, first = _pair_image_scores(entries)
        out[cat] = {"acc": _pct(right, n), "acc_wo_adv": _pct(first, n), "num": st.n_images}
        if n == 0:
            warnings.append(
                f"image type {st.name!r}: no scored {cat} image (no {cat} questions or no closed pair; "
                "the original divides by zero); acc null"
            )
    return {cat: out[cat] for cat in CATS}


def _weighted(values: Iterable[tuple[float | None, int]]) -> tuple[float | None, int]:
    total = 0.0
    weight = 0
    for value, num in values:
        if value is None:
            continue
        total += value * num
        weight += num
    return (total / weight if weight else None), weight


def score_official(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Score original-format response records exactly as the original release does."""
    warnings: list[str] = []
    states: dict[str, _TypeState] = {}
    qa_info: dict[str, tuple[str, str, bool]] = {}  # computed once per distinct qa_type
    st: _TypeState | None = None
    for idx, rec in enumerate(records):
        itype = rec["image_type"]
        if st is None or itype != st.name:  # the records of one image type usually come together
            st = states.get(itype)
            if st is None:
                st = states[itype] = _TypeState(itype)
        img = st.current
        if img is None or rec["id"] != img.id:
            st.flush(last=False, warnings=warnings)
            img = st.current = _Image(rec["id"], idx)
            st.n_images += 1
        qa_type = rec["qa_type"]
        score = official_correct(rec["gt_ans"], rec["response"])
        info = qa_info.get(qa_type)
        if info is None:
            info = qa_info[qa_type] = _qa_info(qa_type)
        cat = info[0]
        if cat == "modality":
            img.modality.append(score)
        elif cat == "organ":
            img.organ.append(score)
        elif cat == "abnormality":
            st.abn.append(score)
        else:
            _pair_record(img, qa_type, info, score, idx, st, warnings)
    by_type: dict[str, dict[str, dict[str, Any]]] = {}
    for name, st in states.items():
        st.flush(last=True, warnings=warnings)
        by_type[name] = _type_result(st, warnings)

    by_cat: dict[str, dict[str, Any]] = {}
    for cat in CATS:
        acc, num = _weighted((t[cat]["acc"], t[cat]["num"]) for t in by_type.values())
        if cat == "abnormality":
            wo = None
        else:
            wo, _ = _weighted((t[cat]["acc_wo_adv"], t[cat]["num"]) for t in by_type.values() if t[cat]["acc"] is not None)
        by_cat[cat] = {"acc": acc, "acc_wo_adv": wo, "num": num}
        if acc is None:
            warnings.append(f"category {cat!r}: no image type has an accuracy; left out of overall")
    acc, num = _weighted((by_cat[c]["acc"], by_cat[c]["num"]) for c in CATS)
    wo, num_wo = _weighted((by_cat[c]["acc_wo_adv"], by_cat[c]["num"]) for c in PAIRED)
    overall = {"acc": acc, "num": num, "acc_wo_adv": wo, "num_wo_adv": num_wo}
    return {"by_image_type": by_type, "by_category": by_cat, "overall": overall, "warnings": warnings}


def score_official_file(path: str | Path) -> dict[str, Any]:
    """Read a response file and score it (what `probmed score-official` does), checking it no less than
    :func:`~probmed.core.response_file.read_response_file` but in one walk: the scoring walk reads every
    record's id, image type, qa_type, gt_ans and response and fails on a record it cannot use; only then is the
    file checked record by record, for the error that names the record and field. What the walk cannot notice
    (a missing 'question', an id that is not a string or number) is checked before it."""
    records = load_json_list(path, "response file", text_only=False)  # it writes no record's text: as the original
    if not unread_fields_valid(records):
        validate_response_records(records, str(path))
    try:
        return score_official(records)
    except (KeyError, TypeError, AttributeError):
        validate_response_records(records, str(path))  # raises a RecordError naming the record and field
        raise  # a valid file the walk cannot score: a bug, with its traceback


def score_official_naive(records: list[dict[str, Any]]) -> dict[str, dict[str, float | None]]:
    """A straightforward transcription in the original's shape: one scan of the whole file
    per image type, a plain per-record loop. Written independently of :func:`score_official`
    as a cross-check and as the speed benchmark's reference; returns
    ``{category: {"acc", "acc_wo_adv"}}`` across image types (no warnings)."""
    types: list[str] = []
    for rec in records:
        if rec["image_type"] not in types:
            types.append(rec["image_type"])
    per_type = []
    for itype in types:
        mod, org, abn, cond, pos = [], [], [], [], []
        cur: Any = None
        n_img = 0
        m: list[int] = []
        o: list[int] = []
        c: Any = []
        p: Any = []
        ck = pk = None
        ct: list[int] = []
        pt: list[int] = []
        for rec in records:
            if rec["image_type"] != itype:
                continue
            if cur is None or rec["id"] != cur:
                if n_img:
                    if len(m) == 2:
                        mod.append(m)
                    if len(o) == 2:
                        org.append(o)
                    cond.append(c)
                    pos.append(p)
                cur = rec["id"]
                n_img += 1
                m, o, c, p, ck, pk = [], [], [], [], None, None
            s = official_correct(rec["gt_ans"], rec["response"])
            q = rec["qa_type"]
            if "modality" in q:
                m.append(s)
            elif "body_part" in q:
                o.append(s)
            elif q == "abnormality":
                abn.append(s)
            elif "entity" in q:
                if q == "entity_hallu":
                    c = [s]
                else:
                    k = q.split("_")[-1]
                    if "_gt" in q:
                        ct, ck = [s], k
                    elif k == ck and len(ct) < 2:
                        ct.append(s)
                        c.append(ct)
            else:
                k = q.split("_")[-1]
                if "_gt" in q:
                    pt, pk = [s], k
                elif k == pk and len(pt) < 2:
                    pt.append(s)
                    p.append(pt)
        if n_img:
            if m:
                mod.append(m)
            if o:
                org.append(o)
            cond.append(c)
            pos.append(p)
        row: dict[str, tuple[float | None, float | None, int]] = {}
        for name, lists in (("modality", mod), ("organ", org)):
            n = len(lists)
            right = len([x for x in lists if min(x) == 1])
            first = len([x for x in lists if x[0] == 1])
            row[name] = (_pct(right, n), _pct(first, n), n)
        row["abnormality"] = (_pct(sum(abn), len(abn)), None, len(abn))
        for name, entries in (("condition", cond), ("position", pos)):
            n = right = first = 0
            for e in entries:
                if e and not isinstance(e[0], list):
                    n += 1
                    right += min(x == 1 for x in e)
                    first += e[0] == 1
                elif e:
                    n += 1
                    right += min(min(v) for v in e) == 1
                    first += min(v[0] for v in e) == 1
            row[name] = (_pct(right, n), _pct(first, n), n_img)
        per_type.append(row)
    out: dict[str, dict[str, float | None]] = {}
    for cat in CATS:
        acc, _ = _weighted((r[cat][0], r[cat][2]) for r in per_type)
        wo, _ = _weighted((r[cat][1], r[cat][2]) for r in per_type if r[cat][0] is not None)
        out[cat] = {"acc": acc, "acc_wo_adv": wo}
    return out


def score_official_vqarad(records: list[dict[str, Any]]) -> dict[str, Any]:
    """The original VQA-RAD ablation scorer (paper Table 2, left): records are paired by
    position (``i % 2``: ground truth first), parsed with the same substring rule.

    Returns ``{"averaged_accuracy", "accuracy_adv_pairs", "num_questions", "num_pairs",
    "warnings"}`` in percent; averaged accuracy is over the questions of the pairs. A
    trailing unpaired record (odd count) is reported and left out of both accuracies (the
    original drops it too); ``num_questions`` still counts it.
    """
    warnings: list[str] = []
    scores = [official_correct(r["gt_ans"], r["response"]) for r in records]
    n_pairs = len(scores) // 2
    if len(scores) % 2:
        warnings.append(f"record {len(scores) - 1}: odd number of records; the last one has no twin")
    for k in range(n_pairs):
        gt, adv = records[2 * k], records[2 * k + 1]
        if "_gt" not in str(gt["qa_type"]) or "_gt" in str(adv["qa_type"]):
            warnings.append(
                f"records {2 * k}/{2 * k + 1}: expected a ground-truth record then its adversary, got "
                f"{gt['qa_type']!r} then {adv['qa_type']!r} (paired by position anyway, as the original)"
            )
    right_pairs = sum(scores[2 * k] == 1 and scores[2 * k + 1] == 1 for k in range(n_pairs))
    return {
        "averaged_accuracy": _pct(sum(scores[: 2 * n_pairs]), 2 * n_pairs),
        "accuracy_adv_pairs": _pct(right_pairs, n_pairs),
        "num_questions": len(scores),
        "num_pairs": n_pairs,
        "warnings": warnings,
    }
