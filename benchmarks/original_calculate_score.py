"""The original release's calculate_score.py logic as a process of its own: the baseline for `probmed score-official`.

Reads a response file with `json`, scores it with the loop-shaped transcription
of the original scorer (one scan of the whole file per image type, a plain
per-record loop: `probmed.scoring.official.score_official_naive`, which imports
nothing but the standard library) and prints the per-category accuracies, as
the original script does. benchmarks/cli_speed.py runs it beside
`probmed score-official` on the same file, whole process against whole process.

    python benchmarks/original_calculate_score.py RESPONSES.json
"""

from __future__ import annotations

import json
import sys

from probmed.scoring.official import score_official_naive


def main(path: str) -> int:
    with open(path, encoding="utf-8") as fh:
        records = json.load(fh)
    for category, values in score_official_naive(records).items():
        print(category, json.dumps(values))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
