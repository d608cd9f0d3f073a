"""One atomic-write helper: complete files or none, never a temporary file left behind."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from probmed.core.errors import MissingFileError  # noqa: E402
from probmed.infra.io import (  # noqa: E402
    atomic_path,
    folder_for,
    remove_stale_temps,
    require_file,
    write_json_atomic,
    write_parquet,
    write_text_atomic,
)

REPO = Path(__file__).resolve().parents[2]


def test_a_failed_write_keeps_the_old_file_and_leaves_nothing_behind(tmp_path):
    target = tmp_path / "out" / "table.csv"
    write_text_atomic("old\n", target)
    with pytest.raises(RuntimeError, match="disk full"):
        with atomic_path(target) as tmp:
            tmp.write_text("half a fi")
            raise RuntimeError("disk full")
    assert target.read_text() == "old\n"
    assert sorted(p.name for p in target.parent.iterdir()) == ["table.csv"]


def test_the_temporary_name_is_hidden_and_ignored_by_git_and_dvc(tmp_path):
    """A kill between write and rename leaves `.<name>.<random>.tmp`: the pattern the next run
    removes (remove_stale_temps) and .gitignore / .dvcignore keep out of commits and DVC outputs."""
    with atomic_path(tmp_path / "left" / "plot.png") as tmp:
        assert tmp.parent == tmp_path / "left" and tmp.name.startswith(".plot.png.") and tmp.name.endswith(".tmp")
        tmp.write_bytes(b"half")
        left = tmp.with_name(".fig.png.0123abcd.tmp")  # what a writer killed before its rename leaves
        left.write_bytes(b"half")
    assert ".*.tmp" in (REPO / ".dvcignore").read_text().split()
    (tmp_path / "left" / "keep.tmp").write_text("not ours: not hidden")
    assert remove_stale_temps(tmp_path) == [left]
    assert sorted(p.name for p in (tmp_path / "left").iterdir()) == ["keep.tmp", "plot.png"]
    assert remove_stale_temps(tmp_path / "absent") == []


def test_every_writer_writes_its_format_under_the_real_name_only(tmp_path):
    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])
    with atomic_path(tmp_path / "plot.png") as tmp:
        fig.savefig(tmp, format="png")
    plt.close(fig)
    assert (tmp_path / "plot.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    write_parquet(pd.DataFrame({"a": [1, 2]}), tmp_path / "t.parquet")
    write_json_atomic({"a": 1}, tmp_path / "m.json")
    assert pd.read_parquet(tmp_path / "t.parquet")["a"].tolist() == [1, 2]
    assert (tmp_path / "m.json").read_text() == '{\n  "a": 1\n}\n'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.json", "plot.png", "t.parquet"]


def test_files_get_the_usual_permissions(tmp_path):
    umask = os.umask(0o022)
    os.umask(umask)
    write_text_atomic("x", tmp_path / "a.txt")
    assert stat.S_IMODE((tmp_path / "a.txt").stat().st_mode) == 0o666 & ~umask


def test_a_missing_input_names_itself(tmp_path):
    with pytest.raises(MissingFileError, match=r"question table .*nope\.parquet not found"):
        require_file(tmp_path / "nope.parquet", "question table")


def test_folder_for_removes_only_the_empty_folders_it_made_when_the_block_fails(tmp_path):
    (tmp_path / "kept").mkdir()
    with pytest.raises(RuntimeError):
        with folder_for(tmp_path / "kept" / "a" / "b") as folder:
            assert folder.is_dir()
            raise RuntimeError("refused")
    assert [p.name for p in tmp_path.iterdir()] == ["kept"] and not list((tmp_path / "kept").iterdir())
    with pytest.raises(RuntimeError):
        with folder_for(tmp_path / "kept" / "a" / "b"):
            (tmp_path / "kept" / "a" / "note").write_text("another writer's")
            raise RuntimeError("refused")
    assert sorted(p.name for p in (tmp_path / "kept" / "a").iterdir()) == ["note"]  # b removed, a not empty: kept
    with folder_for(tmp_path / "new" / "c") as folder:
        (folder / "done").write_text("x")
    assert (tmp_path / "new" / "c" / "done").is_file()  # a block that ends well keeps what it made
