"""Transfer study pieces that need no model: comparison labels, the held-out selection, table outputs."""

from __future__ import annotations

import json

import pytest

from probmed.finetune import data
from probmed.finetune.transfer import compact_metrics, comparison, group_table, held_out_questions, to_markdown
from probmed.infra.io import write_parquet

DOMAIN = {"source": "ChestX-ray14", "modality": "x-ray", "organ": "chest"}


@pytest.mark.parametrize(
    "group, expected",
    [
        (("ChestX-ray14", "x-ray", "chest"), "in-domain (held-out patients)"),
        (("VQA-RAD", "x-ray", "chest"), "same modality and organ, other source"),
        (("MedICaT", "ct", "chest"), "same organ, other modality"),  # the paper's claim: chest CT / MRI
        (("MedICaT", "mri", "chest"), "same organ, other modality"),
        (("VQA-RAD", "x-ray", "spine"), "same modality, other organ"),
        (("VQA-RAD", "ct", "abdomen"), "other modality and organ"),
        (("VQA-RAD", "unknown", "chest"), "same organ, modality unknown"),
        (("VQA-RAD", "unknown", "brain"), "other organ, modality unknown"),
    ],
)
def test_comparison_labels(group, expected):
    assert comparison(dict(zip(("source", "modality", "organ"), group)), DOMAIN) == expected


def test_held_out_questions_are_the_saved_eval_images_capped_per_group(tmp_path, image_records, questions):
    images = data.image_table(image_records)
    splits = data.assign_splits(images, 0.5, seed=0)
    table = images.assign(split=splits.loc[images["image_id"]].to_numpy())
    write_parquet(table, tmp_path / "splits.parquet")
    write_parquet(questions, tmp_path / "questions.parquet")

    held = held_out_questions(tmp_path / "questions.parquet", tmp_path / "splits.parquet")
    eval_ids = set(table.loc[table["split"] == "eval", "image_id"])
    assert set(held["image_id"]) == eval_ids
    assert len(held) == questions["image_id"].isin(eval_ids).sum()

    capped = held_out_questions(tmp_path / "questions.parquet", tmp_path / "splits.parquet", max_images_per_group=1)
    per_group = capped.groupby(["source", "modality", "organ"])["image_id"].nunique()
    assert (per_group == 1).all() and len(per_group) == held.groupby(["source", "modality", "organ"]).ngroups
    again = held_out_questions(tmp_path / "questions.parquet", tmp_path / "splits.parquet", max_images_per_group=1)
    assert set(again["image_id"]) == set(capped["image_id"])  # seeded, stable


def test_group_table_scores_each_model_per_group(image_records, questions):
    from probmed.scoring.baselines import always_no, always_yes

    images = data.image_table(image_records)
    frame = questions.merge(images[["image_id", "modality", "organ"]], on="image_id")
    preds = {"finetune-base": always_yes(questions), "finetune-adapted": always_no(questions)}
    table = group_table(frame, preds, {"source": "chestxray14", "modality": "x-ray", "organ": "chest"}, 0, 0)
    assert len(table) == frame.groupby(["source", "modality", "organ"]).ngroups * 2  # modality + organ
    # always-yes and always-no both get no pair right; averaged accuracy is exactly 50%
    assert (table["base_accuracy_adv_pairs"] == 0).all() and (table["adapted_accuracy_adv_pairs"] == 0).all()
    assert (table["base_averaged_accuracy"] == 50).all() and (table["delta_averaged_accuracy"] == 0).all()
    assert set(table.loc[table["source"] == "chestxray14", "comparison"]) == {"in-domain (held-out patients)"}

    md = to_markdown(table)
    assert md.count("\n") == len(table) + 2 and "in-domain" in md
    metrics = compact_metrics(table.assign(base_accuracy_adv_pairs=float("nan")))
    text = json.dumps(metrics, allow_nan=False)  # strict JSON: NaN became null
    assert json.loads(text)["chestxray14 / X-ray - Chest"]["modality"]["base"] is None


def test_transfer_headline_splits_in_domain_from_elsewhere(image_records, questions):
    from probmed.finetune.transfer import transfer_headline
    from probmed.scoring.baselines import always_yes

    images = data.image_table(image_records)
    frame = questions.merge(images[["image_id", "modality", "organ"]], on="image_id")
    truth = frame.assign(label=frame["answer"])[["qid", "label"]]  # an oracle: every answer right
    domain = {"source": "chestxray14", "modality": "x-ray", "organ": "chest"}
    headline = transfer_headline(frame, {"finetune-base": always_yes(frame), "finetune-adapted": truth}, domain)
    assert set(headline) == {"finetune-base", "finetune-adapted"}
    assert headline["finetune-adapted"] == {"in_domain": 100.0, "other_domains": 100.0, "all": 100.0}
    assert headline["finetune-base"]["in_domain"] == 0.0  # always-yes gets no pair right
    only_domain = frame[frame["source"] == "chestxray14"]
    assert transfer_headline(only_domain, {"finetune-base": truth}, domain)["finetune-base"]["other_domains"] is None


def test_one_renderer_draws_the_study_and_the_report() -> None:
    """finetune.transfer_figure: per panel, horizontal model bars per group and the paired difference beside them."""
    import matplotlib.pyplot as plt

    from probmed.finetune.transfer_figure import Difference, TransferPanel, TransferSeries, draw_transfer

    series = [TransferSeries(name, "#1f77b4", [40.0, float("nan")], [30.0, None], [50.0, None])
              for name in ("base", "adapted")]
    panel = TransferPanel("modality", ["a\nn=10", "b"], series, [Difference(1.0, -2.0, 4.0), None])
    study = draw_transfer([panel, panel], "accuracy", "adapted − base", suptitle="transfer")
    report = draw_transfer([panel], "accuracy", "adapted − base")
    try:
        assert len(study.axes) == 4 and len(report.axes) == 2  # bars and differences per panel
        bars, diff = report.axes
        assert len(bars.patches) == 2  # one bar per model; the NaN value is an "n/a" mark, never a bar
        assert [t.get_text() for t in bars.texts] == ["n/a", "n/a"]
        assert [t.get_text() for t in bars.get_yticklabels()] == ["a\nn=10", "b"]  # horizontal, on the y axis
        points = diff.lines[0].get_xydata()  # the difference as a point with its interval, at its group's row
        assert points.tolist() == [[1.0, 0.0]]
        assert len(report.legends) == 1 and not bars.get_legend()  # below the panels, never on the bars
    finally:
        plt.close(study)
        plt.close(report)


def test_the_study_figure_draws_the_15_groups_with_most_images_in_two_colours(tmp_path, monkeypatch) -> None:
    """40 held-out groups in one category: the figure keeps the 15 with the most images (transfer.csv keeps all)
    and says how many it left out; base and adapted get two colours even without a palette."""
    import matplotlib.pyplot as plt
    import numpy as np
    import pandas as pd

    from probmed.core.figure_style import MAX_AXIS_CATEGORIES
    from probmed.finetune import transfer, transfer_figure
    from probmed.finetune.transfer import TABLE_COLUMNS, plot_transfer

    rows = [{c: 0.0 for c in TABLE_COLUMNS} | {"source": "roco", "modality": "ct", "organ": f"o{i}",
            "image_type": f"CT Scan - O{i}", "comparison": "neither", "category": "modality", "n_images": i + 1}
            for i in range(40)]
    drawn = []
    original = transfer_figure.draw_transfer

    def keep(*args, **kwargs):
        drawn.append(original(*args, **kwargs))
        return drawn[-1]

    monkeypatch.setattr(transfer_figure, "draw_transfer", keep)
    monkeypatch.setattr(plt, "close", lambda *_: None)
    plot_transfer(pd.DataFrame(rows), tmp_path / "transfer.png", ["modality"], "transfer")
    fig = drawn[0]
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert len(labels) == MAX_AXIS_CATEGORIES and labels[0].endswith("n=40") and labels[-1].endswith("n=26")
    assert "25 (category, group) rows with the fewest images not drawn" in fig._suptitle.get_text()
    colours = {tuple(np.round(p.get_facecolor()[:3], 3)) for p in fig.axes[0].patches}
    assert len(colours) == 2 and transfer.MODELS == ("finetune-base", "finetune-adapted")
    assert (tmp_path / "transfer.png").stat().st_size > 10_000


def test_both_models_answer_on_the_configured_threads(repo_root) -> None:
    """torch's default (a thread per core) stalled every forward pass on a shared 2-core CPU: 4x the stage's time."""
    from probmed.core.config import load_params, to_plain
    from probmed.core.params_schema import parse_params
    from probmed.finetune.train import finetune_params
    from probmed.finetune.transfer import backend_config

    fcfg = finetune_params(parse_params(to_plain(load_params(repo_root / "params.yaml"))))
    assert fcfg.transfer.threads == 1
    assert backend_config(fcfg, "m", None, None)["threads"] == 1
    assert backend_config(fcfg, "m", None, "adapter")["threads"] == 1
