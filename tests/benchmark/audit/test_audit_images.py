"""The audit's pixel check reads images as predict does: confined to the image root and decoded with checks.

The issue's probe inputs: a decompression bomb, a truncated JPEG, a text file named .png and a symlink out
of the image root each made `probmed audit` exit 4 (or read the outside file); now exit 2 naming the image,
and no audit is written.
"""

from __future__ import annotations

import json
import struct
import zlib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from probmed.benchmark.audit import _pixel_items
from probmed.cli import main
from probmed.core.errors import RecordError
from probmed.core.records import QUESTION_COLUMNS

N_PER_CLASS = 10  # pixel_leak decodes a type's images from 10 per class on


def bomb_png(path: Path, side: int = 40_000) -> None:
    """A valid PNG header declaring side x side pixels (1.6 G: far past PIL's bomb limit) in a few bytes."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    ihdr = struct.pack(">IIBBBBB", side, side, 8, 0, 0, 0, 0)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\0" * 64))
                     + chunk(b"IEND", b""))


def image_set(root: Path) -> pd.DataFrame:
    """20 small grey images under root/img (half abnormal) and one abnormality question per image."""
    rng = np.random.default_rng(0)
    (root / "img").mkdir(parents=True)
    rows = []
    for k in range(2 * N_PER_CLASS):
        image_id, abnormal = f"im{k:02d}", k % 2 == 1
        pixels = rng.integers(0, 120 + 100 * abnormal, (24, 24), dtype=np.uint8)
        suffix = ".jpg" if k == 0 else ".png"
        Image.fromarray(pixels).save(root / "img" / f"{image_id}{suffix}")
        rows.append({
            "qid": f"{image_id}:abn", "image_id": image_id, "image_path": f"img/{image_id}{suffix}",
            "source": "ChestX-ray14", "category": "abnormality", "polarity": "single", "pair_id": f"{image_id}:abn",
            "question": "Is there any abnormality in this image?", "answer": "yes" if abnormal else "no",
            "entity": "abnormality", "image_type": "X-ray - Chest", "qa_type": "abnormality", "strategy": "gt",
            "evidence": "", "licence": "",
        })
    return pd.DataFrame(rows, columns=list(QUESTION_COLUMNS))


@pytest.fixture
def audit_inputs(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "root"
    questions = image_set(root)
    qfile = tmp_path / "q.parquet"
    questions.to_parquet(qfile)
    return root, qfile


def run_audit_cli(repo_root: Path, qfile: Path, root: Path, out: Path) -> int:
    return main(["audit", str(qfile), "--image-root", str(root), "--out-dir", str(out),
                 "--params", str(repo_root / "params.yaml")])


def test_good_images_are_audited(audit_inputs, repo_root, tmp_path, capsys):
    root, qfile = audit_inputs
    assert run_audit_cli(repo_root, qfile, root, tmp_path / "out") == 0
    leak = json.loads((tmp_path / "out" / "audit.json").read_text())["pixel_leak"]["X-ray - Chest"]
    assert leak["normal"] == leak["abnormal"] == N_PER_CLASS and leak["auc"] is not None


def _truncated_jpeg(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


BAD = {
    "bomb": lambda p: bomb_png(p),
    "truncated": _truncated_jpeg,
    "not an image": lambda p: p.write_text("this is not an image\n"),
}


@pytest.mark.parametrize("what", sorted(BAD))
def test_a_bad_image_exits_2_naming_it_and_writes_no_audit(audit_inputs, repo_root, tmp_path, capsys, what):
    root, qfile = audit_inputs
    image_id, name = ("im00", "im00.jpg") if what == "truncated" else ("im03", "im03.png")
    BAD[what](root / "img" / name)
    out = tmp_path / "out"
    assert run_audit_cli(repo_root, qfile, root, out) == 2
    err = capsys.readouterr().err
    assert f"image {image_id}: " in err and "is not a decodable image" in err, err
    assert not (out / "audit.json").exists()


def test_a_symlink_out_of_the_image_root_is_refused_not_read(audit_inputs, repo_root, tmp_path, capsys):
    root, qfile = audit_inputs
    outside = tmp_path / "outside.png"
    Image.fromarray(np.zeros((24, 24), dtype=np.uint8)).save(outside)  # a valid image, but outside the root
    (root / "img" / "im05.png").unlink()
    (root / "img" / "im05.png").symlink_to(outside)
    out = tmp_path / "out"
    assert run_audit_cli(repo_root, qfile, root, out) == 2
    assert "image im05: " in (err := capsys.readouterr().err) and "outside the image root" in err
    assert not (out / "audit.json").exists()
    with pytest.raises(RecordError, match="image im05: .*outside the image root"):
        _pixel_items(pd.read_parquet(qfile), None, root)


def test_a_missing_image_is_still_left_out(audit_inputs):
    root, qfile = audit_inputs
    (root / "img" / "im07.png").unlink()
    items = _pixel_items(pd.read_parquet(qfile), None, root)
    assert len(items) == 2 * N_PER_CLASS - 1 and "im07" not in {i for i, *_ in items}
