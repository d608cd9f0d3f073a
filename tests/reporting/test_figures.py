"""The figure table: every report figure named once, loaded when drawn, drawn per question set in table order."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from metrics_factory import make_metrics

from probmed.core.params_schema import Report
from probmed.infra.registry import Registry
from probmed.reporting import figures
from probmed.reporting.figures import FIGURES, draw_all
from probmed.reporting.runs import FigureInput, Run
from probmed.scoring.score_report import ScoreReport


def _runs() -> list[Run]:
    return [Run(qset, model, setting, ScoreReport.from_dict(make_metrics(seed)))
            for seed, (qset, model, setting) in enumerate([("probmed", "tiny", "vanilla"), ("probmed", "tiny", "cot"),
                                                            ("vqarad adv", "tiny", "vanilla")])]


def extra_figure(data: FigureInput, path: Path) -> Path | None:
    """A figure a contributor adds: one function and one entry in the table (used below)."""
    if data.question_set != "probmed":
        return None
    path.write_text(f"{len(data.runs)} runs, {len(data.questions)} questions")
    return path


def test_every_entry_loads_to_a_figure_function() -> None:
    assert FIGURES.kinds == ("headline", "fig1_strict_vs_averaged", "per_image_type", "response_distribution", "visual_reliance",
                             "differences", "transfer")
    for name in FIGURES.kinds:
        assert callable(FIGURES.load(name))


def test_draws_per_question_set_in_table_order_and_skips_what_has_no_input(tmp_path) -> None:
    written = [f.path for f in draw_all(_runs(), {}, tmp_path, Report())]
    assert [p.name for p in written] == [
        "headline_probmed.png", "fig1_strict_vs_averaged_probmed.png", "per_image_type_probmed.png",
        "response_distribution_probmed.png",
        # no per-image sums (no comparisons): no reliance or difference figure; no transfer models: no transfer
        "headline_vqarad_adv.png", "fig1_strict_vs_averaged_vqarad_adv.png", "per_image_type_vqarad_adv.png",
        "response_distribution_vqarad_adv.png",
    ]
    assert all(p.is_file() and p.stat().st_size > 5_000 for p in written)


def test_a_new_figure_is_one_function_and_one_table_line(tmp_path, monkeypatch) -> None:
    table = Registry(FIGURES.what, {"extra": f"{__name__}:extra_figure"})
    monkeypatch.setattr(figures, "FIGURES", table)
    questions = pd.DataFrame({"category": ["modality"] * 3, "answer": ["yes", "no", "yes"]})
    written = [f.path for f in draw_all(_runs(), {"probmed": questions}, tmp_path, Report())]
    assert [p.name for p in written] == ["extra_probmed.png"]
    assert written[0].read_text() == "2 runs, 3 questions"
