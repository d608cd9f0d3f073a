"""Shared test fixtures: the real data beside the repository, environment hygiene."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("DVC_NO_ANALYTICS", "1")
os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO_ROOT.parent / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The read-only real data (../shared/data). Tests read it in place, never copy it into the repo."""
    if not SHARED_DATA.is_dir():
        pytest.fail(f"real data not found at {SHARED_DATA} (expected ../shared/data beside the repository)")
    return SHARED_DATA


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT



# The tests of the one tiny main job (tests/test_pipeline.py builds it once per session, test_readme_runs.py
# runs the README's commands in order in a copy of it): they change that repository in turn (a remote, a
# commit, params edited and restored), so under pytest-xdist they must all run on one worker, in file order.
MAIN_JOB_MODULES = ("tests/test_pipeline.py::", "tests/test_readme_runs.py::")


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist: ignored where it is not installed
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """`--dist loadgroup` with the main job's two modules as one group, every other test on its own.

    Why not `@pytest.mark.xdist_group`: pytest-xdist 3.8 groups by renaming `item._nodeid`, which pytest 9
    no longer reads (node ids live in `item._id`; pytest-xdist issue #1386), so the marks group nothing and
    the README's commands would be spread over both workers. Grouping by module here needs only the node ids
    the controller sees.
    pytest-xdist hands out the largest group first, so one worker starts the main job (the suite's longest
    chain) at once while the other runs everything else.
    """
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadGroupScheduling

    class MainJobOnOneWorker(LoadGroupScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return "tiny_main_job" if nodeid.startswith(MAIN_JOB_MODULES) else super()._split_scope(nodeid)

    return MainJobOnOneWorker(config, log)
