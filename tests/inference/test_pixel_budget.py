"""A pixel budget per image: the probe's 12000 x 12000 RGB PNG (about 420 KB, under PIL's own bomb limit) was
decoded and sent, predict peaking at 1.3 GB; now it is refused from its header, for every backend."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import pandas as pd
import pytest
from omegaconf import OmegaConf
from PIL import Image

from probmed.core.config import load_params
from probmed.core.errors import RecordError
from probmed.core.records import QUESTION_COLUMNS, write_questions
from probmed.inference.images import MAX_IMAGE_PIXELS, DecodedImages, open_image
from probmed.inference.models.mock_server import MockChatServer

SIDE = 12_000


def big_png(path: Path, side: int = SIDE) -> Path:
    """A valid side x side black RGB PNG, written row by row (never held in memory: about 420 KB on disk)."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    packer = zlib.compressobj(9)
    row = b"\0" * (1 + 3 * side)  # filter byte + RGB
    idat = b"".join(packer.compress(row) for _ in range(side)) + packer.flush()
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", side, side, 8, 2, 0, 0, 0))
                     + chunk(b"IDAT", idat) + chunk(b"IEND", b""))
    return path


@pytest.fixture(scope="module")
def huge(tmp_path_factory) -> Path:
    return big_png(tmp_path_factory.mktemp("big") / "huge.png")


def test_the_probe_image_is_valid_and_within_pils_own_limit(huge):
    with Image.open(huge) as im:
        assert im.size == (SIDE, SIDE) and im.mode == "RGB" and im.format == "PNG"
    assert SIDE * SIDE < 2 * Image.MAX_IMAGE_PIXELS  # PIL would only warn, and decode it
    assert huge.stat().st_size < 1_000_000


def test_an_image_over_the_budget_is_refused_before_decoding(huge):
    import tracemalloc

    tracemalloc.start()
    try:
        with pytest.raises(RecordError, match=r"image big1: .*huge\.png is 12000 x 12000 pixels, over the budget"):
            open_image(huge, "big1")
        with pytest.raises(RecordError, match="over the budget"):
            DecodedImages().check([("big1", huge)])  # what predict runs before any backend (API or local) sees it
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 10 * 2**20  # decoding it would take 432 MB: refused from the header
    assert MAX_IMAGE_PIXELS < SIDE * SIDE


def test_images_within_the_budget_decode_as_before(tmp_path):
    small = tmp_path / "small.png"
    Image.new("RGB", (64, 32), (10, 20, 30)).save(small)
    im = open_image(small, "s")
    assert im.size == (64, 32) and im.getpixel((0, 0)) == (10, 20, 30)


@pytest.mark.slow
def test_predict_refuses_the_image_asks_nothing_and_stays_small(huge, tmp_path, repo_root):
    root = tmp_path / "root"
    root.mkdir()
    os.link(huge, root / "huge.png")
    rows = [{"qid": f"q{i}", "image_id": "big1", "image_path": "huge.png", "source": "VQA-RAD", "category": "modality",
             "polarity": pol, "pair_id": "big1:modality", "question": text, "answer": ans, "entity": ent,
             "image_type": "CT Scan - Chest", "qa_type": f"modality_{'gt' if pol == 'gt' else 'hallu'}",
             "strategy": "gt", "evidence": "", "licence": ""}
            for i, (pol, text, ans, ent) in enumerate([("gt", "Is this a CT scan?", "yes", "ct"),
                                                        ("adversarial", "Is this an MRI?", "no", "mri")])]
    qfile = tmp_path / "q.parquet"
    write_questions(pd.DataFrame(rows, columns=list(QUESTION_COLUMNS)), qfile)
    with MockChatServer() as srv:
        cfg = load_params(repo_root / "params.yaml")
        cfg.models.api = {"backend": "openai", "model_id": "gpt-4o-mock", "base_url": srv.base_url,
                          "api_key_env": "PROBMED_TEST_KEY", "max_tokens": 8}
        params = tmp_path / "params.yaml"
        OmegaConf.save(cfg, params)
        # VmHWM is this process's own peak (ru_maxrss would keep the peak of the forked pytest before exec)
        code = ("import sys; from probmed.cli import main; rc = main(sys.argv[1:]); "
                "hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM:')][0].split()[1]; "
                "print(json.dumps({'rss_mib': int(hwm) / 1024}), "
                "file=sys.stderr); sys.exit(rc)").replace("json.dumps", "__import__('json').dumps")
        res = subprocess.run(
            [sys.executable, "-c", code, "predict", "--params", str(params), "--questions", str(qfile),
             "--image-root", str(root), f"predict.store_dir={tmp_path / 'answers'}", "model=api",
             "--out", str(tmp_path / "p.parquet"), "--no-progress"],
            env={**os.environ, "PROBMED_TEST_KEY": "sk-pixels"}, capture_output=True, text=True, timeout=300)
        assert res.returncode == 2, res.stderr
        assert "image big1: " in res.stderr and "over the budget" in res.stderr
        assert not srv.requests and not (tmp_path / "p.parquet").exists()
    rss = json.loads(res.stderr.strip().splitlines()[-1])["rss_mib"]
    assert rss < 500, f"predict peaked at {rss:.0f} MiB"
