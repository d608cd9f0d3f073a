"""The original release's calculate_score.py logic as a process of its own: the baseline for `probmed score-official`.

Reads a response file with `json`, scores it with the loop-shaped transcription
of the original scorer (one scan of the whole file per image type, a plain
per-record loop: `probmed.scoring.official.score_official_naive`, which imports
nothing but the standard library) and prints the per-category accuracies, as
the original script does. benchmarks/cli_speed.py runs it beside
`probmed score-official` on the same file, whole process against whole process.

    python benchmarks/original_calculate_score.py RESPONSES.json
    python benchmarks/original_calculate_score.py --quick   # on a small generated response file, timed

It is the baseline of a benchmark rather than a benchmark; --quick (which, unlike the plain run, imports
pandas to generate its file) checks that it still runs and prints its accuracies and time.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

from probmed.scoring.official import score_official_naive


def main(path: str) -> int:
    with open(path, encoding="utf-8") as fh:
        records = json.load(fh)
    for category, values in score_official_naive(records).items():
        print(category, json.dumps(values))
    return 0


def quick() -> int:
    """Score a small generated response file (900 questions on 100 images) and print the time."""
    from probmed.scoring.synthetic import (
        synthetic_labels,
        synthetic_questions,
        synthetic_responses,
    )

    questions = synthetic_questions(100, 900, seed=0)
    texts = synthetic_responses(synthetic_labels(questions, seed=1), seed=2)
    records = [{"id": r.image_id, "image_type": r.image_type, "qa_type": r.qa_type, "question": r.question,
                "gt_ans": r.answer, "response": t} for r, t in zip(questions.itertuples(index=False), texts)]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "responses.json"
        path.write_text(json.dumps(records))
        start = time.perf_counter()
        main(str(path))
        print(f"scored {len(records)} records in {time.perf_counter() - start:.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(quick() if sys.argv[1:] == ["--quick"] else main(sys.argv[1]))
