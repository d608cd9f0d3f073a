"""No file outside the image root is ever read or uploaded; every image is decoded before a backend sees it,
and what an API receives is the re-encoded decoded image."""

from __future__ import annotations

import base64
import io
import json
import shutil
from pathlib import Path

import pytest
from PIL import Image

from probmed.cli import main
from probmed.core.errors import RecordError
from probmed.core.records import read_questions, write_questions
from probmed.core.release_format import read_question_file
from probmed.inference.images import open_image, resolve_image
from probmed.inference.models.openai_api import image_data_url


@pytest.fixture()
def image_root(tmp_path, shared_data) -> Path:
    """A real VQA-RAD image inside the root, a secret text file outside it."""
    root = tmp_path / "root"
    (root / "img").mkdir(parents=True)
    src = sorted((shared_data / "vqa-rad" / "VQA_RAD Image Folder").glob("synpic*.jpg"))[0]
    shutil.copy(src, root / "img" / "a.jpg")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.png").write_text("password=hunter2\n")
    return root


def questions_at(shared_data: Path, path: str):
    """Two questions (a modality pair) about one image at `path`."""
    import pandas as pd

    from probmed.core.records import QUESTION_COLUMNS

    rows = [{"qid": f"q{i}", "image_id": "vqarad-x", "image_path": path, "source": "VQA-RAD", "category": "modality",
             "polarity": pol, "pair_id": "vqarad-x:modality", "question": text, "answer": ans, "entity": ent,
             "image_type": "CT Scan - Chest", "qa_type": f"modality_{'gt' if pol == 'gt' else 'hallu'}",
             "strategy": "gt" if pol == "gt" else "random", "evidence": ""}
            for i, (pol, text, ans, ent) in enumerate([("gt", "Is this a CT scan?", "yes", "ct"),
                                                        ("adversarial", "Is this an MRI?", "no", "mri")])]
    return pd.DataFrame(rows, columns=list(QUESTION_COLUMNS))


@pytest.mark.parametrize("path", ["../outside/secret.png", "/etc/passwd", "img/../../outside/secret.png", "~/x.png"])
def test_a_question_table_pointing_outside_the_root_is_refused_on_read(tmp_path, shared_data, path):
    q = questions_at(shared_data, path)
    with pytest.raises(RecordError, match=r"record 0 \(image vqarad-.*\): field 'image_path'"):
        write_questions(q, tmp_path / "q.parquet")  # never written ...
    q.to_parquet(tmp_path / "q.parquet")  # ... and when someone else wrote it, never read
    with pytest.raises(RecordError, match="record 0 .*image root"):
        read_questions(tmp_path / "q.parquet")


@pytest.mark.parametrize("path", ["/etc/passwd", "../outside/secret.png"])
def test_import_release_refuses_paths_outside_the_root(tmp_path, path, capsys):
    records = [{"id": "x1", "i": 0, "image": path, "image_type": "X-ray - Chest", "qa_type": "modality_gt",
                "question": "Is this an X-ray image?", "answer": "yes", "src_dataset": "ChestX-ray14"}]
    test_json = tmp_path / "test.json"
    test_json.write_text(json.dumps(records))
    out = tmp_path / "q.parquet"
    assert main(["import-release", str(test_json), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "record 0 (image x1): field 'image'" in err and path in err and not out.exists()
    with pytest.raises(RecordError):
        read_question_file(test_json)


def test_import_release_refuses_a_prefix_that_leaves_the_root(tmp_path, capsys):
    records = [{"id": "x1", "i": 0, "image": "a.png", "image_type": "X-ray - Chest", "qa_type": "modality_gt",
                "question": "Is this an X-ray image?", "answer": "yes", "src_dataset": "ChestX-ray14"}]
    (tmp_path / "test.json").write_text(json.dumps(records))
    assert main(["import-release", str(tmp_path / "test.json"), "--out", str(tmp_path / "q.parquet"),
                 "--image-prefix", "../elsewhere"]) == 2
    assert "../elsewhere/a.png" in capsys.readouterr().err


def test_a_symlink_out_of_the_root_is_refused(image_root, tmp_path):
    (image_root / "img" / "b.png").symlink_to(tmp_path / "outside" / "secret.png")
    assert resolve_image(image_root, "img/a.jpg", "a") == (image_root / "img" / "a.jpg").resolve()
    with pytest.raises(RecordError, match="image b: .*symlink.*outside the image root"):
        resolve_image(image_root, "img/b.png", "b")
    (image_root / "inner.jpg").symlink_to(image_root / "img" / "a.jpg")  # a link that stays inside is fine
    assert resolve_image(image_root, "inner.jpg", "c").is_file()


def test_predict_never_uploads_a_file_outside_the_root(image_root, tmp_path, shared_data, repo_root, capsys):
    from probmed.inference.models.mock_server import MockChatServer

    (image_root / "img" / "b.png").symlink_to(tmp_path / "outside" / "secret.png")
    q = questions_at(shared_data, "img/b.png")
    write_questions(q, tmp_path / "q.parquet")
    with MockChatServer() as srv:
        rc = main(["predict", "--params", str(repo_root / "params.yaml"), "--questions", str(tmp_path / "q.parquet"),
                   "--image-root", str(image_root), "--no-progress", f"predict.store_dir={tmp_path / 'store'}",
                   "model=tiny-served", "models.tiny-served.enabled=true", f"models.tiny-served.base_url={srv.base_url}",
                   "--out", str(tmp_path / "p.parquet")])
        assert rc == 2 and srv.requests == []
    assert "outside the image root" in capsys.readouterr().err


def test_a_text_file_named_png_is_not_an_image(image_root):
    (image_root / "img" / "fake.png").write_text("password=hunter2\n")
    with pytest.raises(RecordError, match="image fake: .*fake.png is not a decodable image"):
        open_image(image_root / "img" / "fake.png", "fake")


@pytest.mark.parametrize("max_side", [None, 64])
def test_the_api_receives_re_encoded_pixels_not_the_file(image_root, max_side):
    path = image_root / "img" / "a.jpg"
    url = image_data_url(path, max_side)
    head, data = url.split(",", 1)
    sent = base64.b64decode(data)
    assert head == "data:image/png;base64" and sent != path.read_bytes() and sent.startswith(b"\x89PNG")
    with Image.open(io.BytesIO(sent)) as got, Image.open(path) as original:
        if max_side is None:
            assert got.size == original.size
            assert got.convert("RGB").tobytes() == original.convert("RGB").tobytes()  # lossless: the same pixels
        else:
            assert max(got.size) == max_side
