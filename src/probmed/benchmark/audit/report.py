"""The audit as Markdown (audit.md) and its headline numbers (for MLflow and the report)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd

from probmed.core.categories import CATEGORIES
from probmed.core.markdown import markdown_table

NOTE = (
    "Strict accuracy with adversarial pairs (%), scored by the project scorer. *Oracle*: the majority answer of the "
    "question's normalised text on the other images (5 folds by image); a text without a clear majority (binomial "
    "test, alpha {alpha}) or never seen is guessed. *Blind*: the project's question-only model (sentence embedding + "
    "logistic regression, cross-fitted by image) answering yes with the probability it gives. Both are scored by their "
    "exact expected accuracy over their guesses, on the scorer's units. Overall uses the original weighting."
)


def _pct(v: Any, digits: int = 1) -> str:
    return "—" if v is None else f"{v:.{digits}f}"


def _table(rows: list[dict[str, Any]]) -> str:
    return markdown_table(pd.DataFrame(rows)) if rows else "(none)\n"


def baseline_rows(audit: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per category and overall: exact random, oracle, blind, and the texts' yes share."""
    oracle, blind, spread = audit["oracle"], audit.get("blind"), audit["texts"]["by_category"]
    rows = []
    for cat in [c for c in CATEGORIES if c in oracle["by_category"]] + ["overall"]:
        o = oracle["overall"] if cat == "overall" else oracle["by_category"][cat]
        b = None if not blind else (blind["overall"] if cat == "overall" else blind["by_category"].get(cat))
        s = spread.get(cat, {})
        rows.append({
            "category": cat,
            "questions": s.get("questions", audit["meta"]["questions"] if cat == "overall" else None),
            "yes share": _pct(100 * s["yes_share"]) if s.get("yes_share") is not None else "—",
            "texts": s.get("texts", "—"),
            "exact random": _pct(o["random"]),
            "oracle": _pct(o["accuracy"]),
            "oracle − random": _pct(None if o["accuracy"] is None or o["random"] is None else o["accuracy"] - o["random"]),
            "blind": _pct(None if b is None else b["accuracy"]),
        })
    return rows


def _reference(audit: dict[str, Any]) -> str:
    """The deterministic variants, for reference: on a perfectly balanced set their numbers are fold noise."""
    raw = audit["oracle_raw"]
    parts = ["every training majority taken however slight (oracle without the test): "
             + ", ".join(f"{c} {_pct(m['accuracy'])}" for c, m in raw["by_category"].items()) + f", overall {_pct(raw['overall']['accuracy'])}"]
    if audit.get("blind"):
        arg = audit["blind"]["argmax"]
        parts.append("the blind model thresholded at 0.5: " + ", ".join(f"{c} {_pct(v)}" for c, v in arg["by_category"].items())
                     + f", overall {_pct(arg['overall'])}")
    text = ("For reference (not the gate): " + "; ".join(parts) + ". On a set whose texts are balanced these deterministic "
            "variants follow the held-out fold's own imbalance (cross-fitting noise), which pairs can reward or punish.")
    fixed = {c: m for c, m in ((audit.get("fixed_policy") or {}).get("by_category") or {}).items() if m["accuracy"] is not None}
    if fixed:
        text += ("\n\nUpper bound on a text-only model in the categories with few texts: the best fixed yes/no answer per "
                 "text, every choice tried on this set with its answers in hand (best / exact random): "
                 + ", ".join(f"{c} {_pct(m['accuracy'])} / {_pct(m['random'])}" for c, m in fixed.items())
                 + ". Averaged over every fixed choice it is exact random; a best choice above it means the pairs have a "
                 "structure (e.g. which organs may be asked of which images) that a text-only model could find only by "
                 "luck or by training on pair accuracy.")
    return text


CEILING_NOTE = (
    "Strict accuracy (%) of models that never see the image, per category and unit, each learnt on 4/5 of the "
    "images and scored on the rest (5 folds by image, each image's pattern of questions and answers dealt to the "
    "folds in turn; for a subset, also tables learnt on the full set's other images). *Blind ceiling*: the best of "
    "them (*reached by* names it): "
    "fixed answer tables key -> yes/no keyed on the text, on image type + text or on source + text, searched for "
    "the unit's accuracy (every table where there are at most 12 keys, else coordinate ascent on whole units from "
    "several starts), trusting keys asked at least 1, 5 or 20 times in training; a logistic regression on the "
    "text's words; the project's blind baseline where it ran. Tables keyed on the image type or source are not "
    "counted for modality and organ (they name the answer). *Floor*: on one pair over n values, what any design "
    "leaves to the best table, n/(4(n-1)) (33.3 for 3 or 4 values), per group of values the pairs join (values "
    "never asked of each other are answered apart; a table keyed on the source keeps sources apart); modality "
    "and organ pairs are judged against it, everything else against exact random. *In-sample*: the best text "
    "table chosen with the answers in hand."
)


def ceiling_rows(ceiling: Any) -> list[dict[str, Any]]:
    """One row per (category, unit) of a BlindCeiling: random, floor, ceiling, who reached it, margin."""
    from probmed.benchmark.audit.blind_ceiling import learner_label

    rows = []
    for c in ceiling.cells:
        rows.append({"category": c.category, "unit": c.unit + (" (paper)" if c.paper_unit else ""), "units": c.units,
                     "texts": c.texts, "exact random": _pct(c.random), "floor": _pct(c.floor),
                     "blind ceiling": _pct(c.ceiling), "reached by": learner_label(c.reached_by),
                     "ceiling − bar": _pct(c.margin) + (" (floor)" if c.bar == "floor" else ""),
                     "in-sample": _pct(c.in_sample),
                     "note": "by construction, not gated" if c.exempt else ""})
    return rows


def _type_rows(by_type: dict[str, Any], cell: Callable[[dict[str, Any]], str]) -> list[dict[str, Any]]:
    """One row per image type, one cell per category it has (blank where it has none)."""
    return [{"image type": itype, **{cat: "" if cats.get(cat) is None else cell(cats[cat]) for cat in CATEGORIES}}
            for itype, cats in by_type.items()]


def _ceiling_type_rows(ceiling: Any) -> list[dict[str, Any]]:
    """Per image type, on the paper's unit: the text table / the image-type table / exact random."""
    by_type: dict[str, dict[str, Any]] = {}
    for c in ceiling.cells:
        if not c.paper_unit:
            continue
        for itype, m in c.by_image_type.items():
            by_type.setdefault(itype, {})[c.category] = m
    return _type_rows(by_type, lambda m: f"{_pct(m.get('table:text'))} / {_pct(m.get('table:type_text'))} / "
                                         f"{_pct(m['random'])} (n {m['units']})")


def _ceiling_source_rows(ceiling: Any) -> list[dict[str, Any]]:
    """Per pair or per-image cell with more than one source: each source's units, random, floor and ceiling."""
    from probmed.benchmark.audit.blind_ceiling import learner_label

    return [{"category": c.category, "unit": c.unit, "source": src, "units": m["units"], "exact random": _pct(m["random"]),
             "floor": _pct(m["floor"]), "blind ceiling": _pct(m["ceiling"]), "reached by": learner_label(m["reached_by"])}
            for c in ceiling.cells if c.unit in ("pair", "image") and len(c.by_source) > 1
            for src, m in c.by_source.items()]


def _ceiling_section(audit: dict[str, Any]) -> list[str]:
    """Every category and unit's blind ceiling beside random and the floor, then per image type."""
    from probmed.benchmark.audit.blind_ceiling import BY_CONSTRUCTION, UNIT_LABELS, BlindCeiling

    ceiling = BlindCeiling.from_json(audit.get("blind_ceiling"))
    if ceiling is None:
        return []
    units = "; ".join(f"*{u}*: {label}" for u, label in UNIT_LABELS.items())
    exempt = " ".join(f"{cat} on {unit}: {why}." for (cat, unit), why in BY_CONSTRUCTION.items()
                      if ceiling.cell(cat, unit) is not None)
    return ["## Blind ceiling", "", _table(ceiling_rows(ceiling)), CEILING_NOTE, "", f"Units: {units}.",
            *(["", f"Not gated: {exempt}"] if exempt else []), "",
            "Per image type, on the paper's unit: the text table / the image type + text table / exact random "
            "(strict %, n units):", "", _table(_ceiling_type_rows(ceiling)), "",
            "Per source, where a category's pairs come from several: the floor is the least that any design of the "
            "source's own truths leaves to a fixed table (its pairs' values fall into groups never asked of each "
            "other, e.g. each tumour's two sides: floor 50); a ceiling at its floor is what the truths allow, one "
            "above it what the design still gives away.", "", _table(_ceiling_source_rows(ceiling)), ""]


def _leak_section(audit: dict[str, Any]) -> list[str]:
    """Answers implied by the other questions of an image, for harnesses that show them together."""
    leaks = audit.get("context_leaks")
    if not leaks:
        return []
    rows = []
    for name, e in leaks["leaks"].items():
        gain = e["strict_gain"]
        rows.append({"leak": name, "rule": e["what"], "questions implied": e["implied"],
                     "share of questions": f"{100 * e['share_of_questions']:.1f}%", "implied answer right": e["right"],
                     "strict gain (points)": ", ".join(f"{c} {_pct(v)}" for c, v in gain["by_category"].items() if v)
                     + f"; overall {_pct(gain['overall'])}"})
    every = leaks["all"]
    return ["## Context leaks (several questions of an image in one prompt)", "", _table(rows),
            f"All rules together imply {every['implied']} answers ({100 * every['share_of_questions']:.1f}% of the "
            f"questions): strict gain over exact random {_pct(every['strict_gain']['overall'])} points overall "
            "(original weighting). The gain is what a policy answering by the rule and guessing elsewhere scores above "
            "random. probmed's prompts and every export (test.json, the release's harness tasks) carry one question "
            "each, so none of this reaches a model run through them.", ""]


def _texts_rows(audit: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for cat, s in audit["texts"]["by_category"].items():
        top = s["most_skewed"][0] if s.get("most_skewed") else None
        rows.append({
            "category": cat, "texts": s["texts"], "yes ratio min / median / max":
            f"{s['yes_ratio_min']:.2f} / {s['yes_ratio_median']:.2f} / {s['yes_ratio_max']:.2f}",
            "texts with a clear majority": s["decided_texts"],
            "their share of questions": f"{100 * s['decided_question_share']:.1f}%",
            "most one-sided text": "—" if top is None else f"{top['text']} ({top['questions']}, yes {top['yes_ratio']:.2f})",
        })
    return rows


def _by_type_rows(audit: dict[str, Any]) -> list[dict[str, Any]]:
    return _type_rows(audit["oracle"]["by_image_type"], lambda m: f"{_pct(m['accuracy'])} / {_pct(m['random'])}")


def _truth_section(audit: dict[str, Any]) -> list[str]:
    c = audit["contradictions"]
    out = ["## Truth of the \"no\" answers", ""]
    if not c["checked"]:
        out += ["Not checked: no image records were given (`--records`).", ""]
    else:
        out += [f"{c['count']} of {c['checked_no_answers']} \"no\" answers contradicted by the image's own metadata or QA"
                f" ({', '.join(f'{k} {v}' for k, v in c['by_category'].items()) or 'none'});"
                f" images without a record: {c['unmatched_images']}.", ""]
        out += [_table([{k: e[k] for k in ("image_id", "category", "question", "why")} for e in c["examples"]])] if c["examples"] else []
    ev = [{"category": k, **{kk: (_pct(100 * vv) + "%" if kk == "known_absent_share" and vv is not None else vv)
                             for kk, vv in v.items()}} for k, v in audit["evidence"].items()]
    out += ["Evidence of every \"no\" (known absent: a label table or QA answer says so; assumed absent: not mentioned):", "", _table(ev)]
    return out


def _pixel_rows(audit: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for itype, e in (audit.get("pixel_leak") or {}).items():
        rows.append({"image type": itype, "normal": e["normal"], "abnormal": e["abnormal"], "CV AUC": _pct(e["auc"], 2),
                     "storage only": _pct(e.get("storage_auc"), 2),
                     "most separating statistic": "—" if e.get("top_feature") is None else f"{e['top_feature']} ({e['top_feature_auc']:.2f})",
                     "note": e.get("note", "")})
    return rows


def _file_section(audit: dict[str, Any]) -> list[str]:
    """Per category: what a table keyed on the text and one file property wins, beside the text alone."""
    shortcuts = audit.get("file_shortcuts")
    if not shortcuts:
        return ["## Shortcuts beyond the text", "", "Not checked: no image root (`--image-root`).", ""]
    rows = [{"category": cat, "unit": e["unit"], "units": e["units"], "exact random": _pct(e["random"]),
             "text": _pct(e["text"]), "text + source": _pct(e.get("source")), "text + file size": _pct(e["size"]),
             "text + format, mode, dimensions": _pct(e["storage"]), "text + mean grey": _pct(e["grey"])}
            for cat, e in shortcuts["by_category"].items()]
    return ["## Shortcuts beyond the text", "", _table(rows),
            "Strict accuracy (%) of fixed answer tables keyed on the text and one property of the image file (its "
            "source; its size quintile within its source; its format, mode and dimensions; its mean grey level's "
            "quintile within source and image type), searched and cross-fitted as the blind ceiling's are, on the "
            f"scorer's unit ({shortcuts['images']} images read). A file property above the text and the source is a "
            "shortcut a data loader or harness could take (a single-modality source names the modality by itself); "
            "the mean grey level shows what the image shows.", ""]


def _mix_rows(audit: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for r in audit["image_mix"]:
        known = r["in_paper"]
        rows.append({"image type": r["image_type"], "images": r["images"], "share": f"{100 * r['share']:.1f}%",
                     "paper images": "—" if not known else ("<100" if r["paper_images"] is None else r["paper_images"]),
                     "paper share": "—" if not known else ("<1.6%" if r["paper_share"] is None else f"{100 * r['paper_share']:.1f}%")})
    return rows


def audit_markdown(audit: dict[str, Any], gate: dict[str, Any] | None = None) -> str:
    """The audit as the Markdown report audit.md (with the gate's verdict when given)."""
    meta = audit["meta"]
    lines = [f"# Question-set audit{': ' + meta['source'] if meta.get('source') else ''}", "",
             f"{meta['questions']} questions on {meta['images']} images.", ""]
    if gate is not None:
        verdict = "passed" if gate["passed"] else ("FAILED" if gate["enforced"] else "failed (not enforced: warning only)")
        lines += [f"**Gate: {verdict}.**", ""] + [f"- {f}" for f in gate["failures"]] + ([""] if gate["failures"] else [])
        lines += [f"- unchecked: {u}" for u in gate.get("unchecked", [])] + ([""] if gate.get("unchecked") else [])
    lines += _ceiling_section(audit)
    lines += ["## Text-only baselines (for reference: the old yardstick, not the blind ceiling)", "", _table(baseline_rows(audit)),
              NOTE.format(alpha=meta["alpha"]) + (" Blind baseline not run (`--blind`)." if not meta["blind"] else ""), "",
              _reference(audit), ""]
    lines += ["## Question texts", "", _table(_texts_rows(audit)), "",
              "Per image type, oracle / exact random (strict %):", "", _table(_by_type_rows(audit)), ""]
    lines += _truth_section(audit) + [""]
    lines += _leak_section(audit)
    d, lint = audit["duplicates"], audit["lint"]
    lines += ["## Duplicates and grammar", "",
              f"- questions asked twice of one image: {d['count']} ({d['conflicting']} with both answers)",
              f"- grammar lint: {lint['findings']} finding(s) in {lint['texts']} distinct texts ({lint['questions_affected']} questions)"
              + (f": {', '.join(f'{k} {v}' for k, v in lint['by_rule'].items())}" if lint["by_rule"] else ""), ""]
    lines += [_table([{"question": e["question"], "rule": e["rule"], "why": e["message"]} for e in lint["examples"]])] if lint["examples"] else []
    lines += ["## Pixel statistics: normal vs abnormal within an image type", "",
              _table(_pixel_rows(audit)) if audit.get("pixel_leak") is not None else "Not checked: no image root (`--image-root`).\n",
              "Cross-validated AUC of a logistic regression on file and pixel statistics (0.5: nothing separates them). "
              "*Storage only* uses size, format, bytes per pixel and channels: high there is a format or source leak; "
              "grey levels may also differ because abnormal images show more (dense, white lungs).", ""]
    lines += _file_section(audit)
    lines += ["## Image-type mix beside the paper's Table 1", "", _table(_mix_rows(audit))]
    return "\n".join(lines).rstrip() + "\n"


def _ceiling_headline(audit: dict[str, Any]) -> dict[str, float]:
    """Per category on its pairs, per image and single units (contrast pairs, units fixed by construction, exact
    random, the floor and the margins are in audit.json: `dvc exp show` keeps a column per number): the blind
    ceiling."""
    from probmed.benchmark.audit.blind_ceiling import BlindCeiling

    ceiling = BlindCeiling.from_json(audit.get("blind_ceiling"))
    out: dict[str, float] = {}
    for c in ceiling.cells if ceiling is not None else ():
        if c.unit == "contrast" or c.exempt:
            continue
        out[f"audit_ceiling_{c.unit}_{c.category}"] = round(c.ceiling, 3)
    return out


def file_size_margins(audit: dict[str, Any]) -> dict[str, float]:
    """Per category: what the file size wins beyond the text and the source (its quintiles are within the source,
    so its table knows the source too), in points of the scorer's unit."""
    return {f"audit_file_size_margin_{name}": round(e["size"] - max(e["text"], e.get("source", e["text"])), 3)
            for name, e in ((audit.get("file_shortcuts") or {}).get("by_category") or {}).items()}


def headline_metrics(audit: dict[str, Any]) -> dict[str, float]:
    """A handful of numbers for MLflow and dvc metrics: the blind ceiling per category and unit,
    the oracle's and blind baseline's overall margins, file-size shortcuts, leaks, yes share, findings."""
    out: dict[str, float] = _ceiling_headline(audit)
    oracle = audit["oracle"]["overall"]  # the old yardstick, overall only (per category: audit.json)
    if oracle["accuracy"] is not None and oracle["random"] is not None:
        out["audit_oracle_margin_overall"] = round(oracle["accuracy"] - oracle["random"], 3)
    if audit.get("blind"):
        b = audit["blind"]["overall"]
        out["audit_blind_margin_overall"] = round(b["accuracy"] - b["random"], 3)
    abn = audit["texts"]["by_category"].get("abnormality")
    if abn:
        out["audit_abnormality_yes_share"] = round(100 * abn["yes_share"], 3)
    for name, e in ((audit.get("context_leaks") or {}).get("leaks") or {}).items():
        out[f"audit_leak_share_{name}"] = round(100 * e["share_of_questions"], 3)
    if audit.get("context_leaks") and audit["context_leaks"]["all"]["strict_gain"]["overall"] is not None:
        out["audit_leak_gain_overall"] = round(audit["context_leaks"]["all"]["strict_gain"]["overall"], 3)
    out.update(file_size_margins(audit))
    out["audit_contradictions"] = float(audit["contradictions"]["count"] or 0)
    out["audit_lint_findings"] = float(audit["lint"]["findings"])
    out["audit_known_absent_share"] = round(100 * (audit["evidence"].get("all", {}).get("known_absent_share") or 0.0), 3)
    return out
