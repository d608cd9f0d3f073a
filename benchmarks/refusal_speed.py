"""How fast probmed refuses hostile input: key redaction over long answers, YAML bombs in params.

The tests check that these inputs are refused (and within a memory bound); the time it takes is measured
here, so no test depends on how fast the machine is. Prints:

- redaction of an answer against a 168-character project key, at two answer lengths: microseconds per
  1,000 characters at each (flat when linear) and their ratio (about 1.0 when linear; a backtracking
  pattern would grow with the length);
- the refusal of a "billion laughs" params.yaml (9^9 leaves if expanded) and of a one-line alias
  override, as `probmed models` runs them (exit 2), in ms (goal: well under a second each).

    python benchmarks/refusal_speed.py [--quick]

--quick: shorter answers and fewer repetitions, the same figures.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
import tempfile
import time
from pathlib import Path

from probmed.cli import main
from probmed.core.secrets import Redactor

REPO = Path(__file__).resolve().parents[1]
SENTENCE = "The answer is yes, because the image shows a consolidation. "


def best_of(repeat: int, work) -> float:
    """The fastest of `repeat` runs, in seconds (the least disturbed by other load)."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return min(times)


def redaction(lengths: tuple[int, int], repeat: int) -> None:
    redact = Redactor("sk-proj-" + "A1b2C3d4e5" * 16)
    per_k = []
    for n in lengths:
        text = SENTENCE * (n // len(SENTENCE))
        seconds = best_of(repeat, lambda text=text: redact(text))
        per_k.append(seconds * 1e6 / (len(text) / 1000))
        print(f"redaction, {len(text):,} characters: {seconds * 1000:.2f} ms, {per_k[-1]:.1f} us per 1,000 characters")
    print(f"ratio per character, long / short: {per_k[1] / per_k[0]:.2f} (1.0 = linear)")


def refusal(name: str, argv: list[str], repeat: int) -> None:
    def run() -> None:
        with contextlib.redirect_stderr(io.StringIO()):
            assert main(argv) == 2
    print(f"{name} refused (exit 2) in {best_of(repeat, run) * 1000:.1f} ms")


def measure(quick: bool) -> None:
    redaction((3_200, 32_000) if quick else (32_000, 320_000), 3 if quick else 10)
    lines = ["lol0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    lines += [f"lol{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]" for i in range(1, 9)]
    with tempfile.TemporaryDirectory() as tmp:
        bomb = Path(tmp) / "params.yaml"
        bomb.write_text((REPO / "params.yaml").read_text(encoding="utf-8") + "\n".join(lines) + "\n", encoding="utf-8")
        refusal("billion laughs params.yaml", ["models", "--params", str(bomb)], 3)
    items = ["&l0 [1,1,1,1,1,1,1,1,1]"] + [f"&l{i} [{','.join([f'*l{i - 1}'] * 9)}]" for i in range(1, 6)]
    refusal("alias override", ["models", "--params", str(REPO / "params.yaml"), f"report.lol=[{', '.join(items)}]"], 3)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    measure(parser.parse_args().quick)
    sys.exit(0)
