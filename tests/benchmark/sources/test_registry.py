"""The source registry: one table, one loader signature, the CLI's choices derived from it."""

from __future__ import annotations

import inspect

import pytest

from probmed.benchmark.sources.base import SourceContext
from probmed.benchmark.sources.registry import SOURCES
from probmed.benchmark.sources.vqarad import load_vqarad
from probmed.cli import build_parser
from probmed.core.errors import ConfigError
from probmed.core.params_schema import CurateSource


def test_every_loader_takes_one_context():
    for kind in SOURCES.kinds:
        loader = SOURCES.load(kind)
        assert list(inspect.signature(loader).parameters) == ["context"], kind


def test_curate_offers_exactly_the_registered_sources():
    curate = build_parser()._subparsers._group_actions[0].choices["curate"]
    source = next(a for a in curate._actions if a.dest == "source")
    assert tuple(source.choices) == (*SOURCES.kinds, "all")


def test_a_registered_loader_reads_real_data_like_the_direct_call(shared_data, repo_root):
    context = SourceContext("vqarad", shared_data / "vqa-rad", shared_data)
    via_registry = SOURCES.load("vqarad")(context)
    direct = load_vqarad(shared_data / "vqa-rad", shared_data)
    assert via_registry.records == direct.records and len(direct.records) > 300


def test_a_missing_section_names_its_key(tmp_path):
    context = SourceContext("chestxray14", tmp_path, tmp_path, CurateSource(data="x"))
    with pytest.raises(ConfigError, match=r"curate\.chestxray14 is missing or not a CurateImages section"):
        SOURCES.load("chestxray14")(context)


def test_an_unknown_source_names_the_key():
    with pytest.raises(ConfigError, match=r"curate\.all = 'xrays' is not a known data source"):
        SOURCES.check("xrays", "curate.all")
