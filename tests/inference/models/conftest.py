"""Fixtures for the model tests: one tiny LLaVA built per session, real images."""

from __future__ import annotations

from pathlib import Path

import pytest
from predict_helpers import make_questions

from probmed.inference.models.tiny import build_tiny_llava


@pytest.fixture(scope="session")
def tiny_dir(tmp_path_factory) -> Path:
    return build_tiny_llava(tmp_path_factory.mktemp("tiny") / "tiny-llava", seed=0)


@pytest.fixture(scope="session")
def vqarad_images(shared_data) -> list[Path]:
    folder = shared_data / "vqa-rad" / "VQA_RAD Image Folder"
    return sorted(folder.glob("synpic*.jpg"))[:4]


@pytest.fixture()
def questions(shared_data):
    return make_questions(shared_data, 3)
