"""The report as a person sees it: headless chromium takes screenshots and measures where things are.

On the first screen of a 1366 x 768 window: the summary of every model x category (with exact random and the
blind ceiling read from a real `probmed audit`), the chart after the paper's Figure 1 and the findings; below
it the contents. Every figure on the page is drawn at 100% (its natural width), so its text is as large as the
page's. The long sections are collapsed.
"""

from __future__ import annotations

import numpy as np
import pytest
from browser import VIEWPORT, box, images, report_page, screenshots
from comparison_runs import QUESTION_SET, write_scores
from PIL import Image

from probmed.cli import main
from probmed.core.figure_style import model_colours
from probmed.core.params_schema import Report
from probmed.reporting.report import build_report
from probmed.scoring.compare import Bootstrap

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def report_dir(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("browser")
    questions = write_scores(tmp / "scores", n_images=80, resamples=50, image_types=20)
    questions.to_parquet(tmp / "questions.parquet")
    assert main(["audit", str(tmp / "questions.parquet"), "--out-dir", str(tmp / "audit"), "tracking.enabled=false",
                 "audit.folds=3"]) == 0
    build_report(tmp / "scores", tmp / "out", questions={QUESTION_SET: tmp / "questions.parquet"},
                 audits={QUESTION_SET: tmp / "audit"}, bootstrap=Bootstrap(50, 0),
                 report=Report(model_comparisons=[["looker", "blind"]], transfer_models=["blind", "looker"]),
                 palette=model_colours(["looker", "blind"]))
    return tmp / "out"


def _within_first_screen(found: dict[str, float]) -> bool:
    return found["y"] >= 0 and found["bottom"] <= VIEWPORT["height"] and found["right"] <= VIEWPORT["width"]


def test_the_summary_chart_and_findings_are_on_the_first_screen(report_dir):
    with report_page(report_dir / "index.html") as page:
        shown = {s: box(page, s) for s in ("#summary-table", "#headline img", "#findings", "#toc")}
        rows = page.eval_on_selector_all("#summary-table tbody tr th", "ths => ths.map(t => t.textContent)")
        ceiling = page.eval_on_selector_all("#summary-table tr.ref:last-child td", "tds => tds.map(t => t.textContent)")
        findings = page.eval_on_selector_all("#findings li b", "bs => bs.map(b => b.textContent)")
    for selector in ("#summary-table", "#headline img", "#findings"):
        assert _within_first_screen(shown[selector]), (selector, shown[selector])
    assert shown["#toc"]["y"] > shown["#headline img"]["bottom"]  # the contents come after the story
    assert rows == ["looker", "blind", "exact random", "blind ceiling (audit)"]  # models under test first
    assert all(cell.replace(".", "").isdigit() for cell in ceiling), ceiling  # read from the audit, every column
    # looker's described run repeats its vanilla answers: the warning is flagged on the first screen too
    assert findings == ["Adversarial drop.", "Chain of thought / described.", "Visual reliance.", "Transfer.",
                        "Warnings."]


def test_every_figure_loads_and_is_drawn_at_100_percent(report_dir):
    with report_page(report_dir / "index.html") as page:
        page.evaluate("() => document.querySelectorAll('details').forEach(d => d.open = true)")
        drawn = images(page)
        collapsed = page.eval_on_selector_all("details", "ds => ds.map(d => d.id)")
    assert len(drawn) >= 6
    for image in drawn:
        assert image["complete"] and image["natural"] > 0, image
        assert image["shown"] == pytest.approx(image["natural"], abs=1), image  # never shrunk by the page
    assert {"table4", "appendix-a", "audit", "files"} <= set(collapsed)


def test_screenshots_show_the_first_screen_and_every_figure(report_dir, tmp_path):
    written = screenshots(report_dir, tmp_path)
    names = {p.name for p in written}
    assert "first-screen.png" in names and f"figure-transfer_{QUESTION_SET}.png" in names
    with Image.open(tmp_path / "first-screen.png") as first:
        assert first.size == (VIEWPORT["width"], VIEWPORT["height"])
        pixels = np.asarray(first.convert("RGB"))
    assert pixels.std() > 20  # a drawn page, not a blank one
