"""Questions per second through vLLM's CPU build and through `transformers serve`, same model, same run.

Both servers serve the tiny LLaVA of the vLLM test (tests/inference/models/vllm_server.py: head size 32,
a head that answers yes or no) on 127.0.0.1, one after the other, and `probmed`'s OpenAI backend asks each
the same questions (real VQA-RAD images, 16-way concurrency, one new token, no store hits). Each server is
warmed up on one image first; the figure is questions over wall time of one full pass. The vLLM venv is
the test's (installed on first use). On a GPU node the same comparison is what docs/evaluate/engines.md describes.

    python benchmarks/engines_speed.py [--data ../shared/data] [--images 24] [--quick]

--quick: 4 images (20 questions) per server.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests" / "inference" / "models"), str(ROOT / "tests")]  # the vLLM test's venv, model, server

from predict_helpers import make_questions  # noqa: E402
from vllm_server import VllmServer, free_port, make_yes_no_model, vllm_python  # noqa: E402

from probmed.core.settings import get_setting  # noqa: E402
from probmed.inference.models.registry import build_backend  # noqa: E402
from probmed.inference.predict import PredictJob, run_predictions  # noqa: E402
from probmed.inference.prompting import PromptSet  # noqa: E402


class TransformersServe:
    """`transformers serve` of the model on 127.0.0.1 (the project's own environment)."""

    def __init__(self, model: Path, log: Path):
        self.model, self.log_path, self.port = model, log, free_port()
        self.proc: subprocess.Popen | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> TransformersServe:
        exe = Path(sys.executable).with_name("transformers")
        with open(self.log_path, "w") as log:
            self.proc = subprocess.Popen([str(exe), "serve", str(self.model), "--device", "cpu", "--host", "127.0.0.1",
                                          "--port", str(self.port)], stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 300
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=2)
                return self
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(self.log_path.read_text()[-3000:]) from None
                time.sleep(0.5)

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(timeout=30)


def questions_per_second(base_url: str, model: Path, questions, image_root: Path, folder: Path) -> float:
    """One warm-up image, then every question once (a fresh store: nothing cached); questions / wall seconds."""
    entry = {"backend": "openai", "model_id": str(model), "base_url": base_url, "api_key_env": None,
             "concurrency": 16, "max_tokens": 1, "timeout_s": 300, "max_retries": 1}
    prompts = PromptSet.from_params({})
    for name, part in (("warm-up", questions.head(5)), ("timed", questions)):
        backend = build_backend({"served": entry}, "served")
        job = PredictJob.in_folders(get_setting("vanilla"), prompts, image_root, folder / name)
        t0 = time.perf_counter()
        result = run_predictions(part, backend, job, progress=False)
        elapsed = time.perf_counter() - t0
        backend.close()
        assert result.n_failed == 0, result.predictions["error"].unique()
    return len(questions) / elapsed


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    p.add_argument("--images", type=int, default=24)
    p.add_argument("--quick", action="store_true")
    args = p.parse_args()
    image_root = Path(args.data).resolve()
    questions = make_questions(image_root, 4 if args.quick else args.images)
    with tempfile.TemporaryDirectory(prefix="engines-") as tmp:
        folder = Path(tmp)
        model = make_yes_no_model(folder / "tiny-llava", questions, image_root)
        rates: dict[str, float] = {}
        servers = {"vLLM (CPU build)": lambda: VllmServer(vllm_python(), model, folder / "vllm.log"),
                   "transformers serve": lambda: TransformersServe(model, folder / "serve.log")}
        for name, make in servers.items():
            t0 = time.perf_counter()
            server = make().start()
            started = time.perf_counter() - t0
            try:
                rates[name] = questions_per_second(server.base_url, model, questions, image_root, folder / name)
            finally:
                server.stop()
            print(f"{name:20s} {rates[name]:8.2f} q/s over {len(questions)} questions (server up in {started:.0f} s)")
    print(f"ratio vLLM / transformers serve: {rates['vLLM (CPU build)'] / rates['transformers serve']:.2f}")


if __name__ == "__main__":
    main()
