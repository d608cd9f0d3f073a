"""The raw data sources `probmed curate <source>` reads: one line each.

Every entry names a loader with the one signature
``load(context: SourceContext) -> SourceResult`` (sources.base), imported only
when that source is curated. `probmed curate` offers these names, and
`probmed plan` checks every `datasets.sources` key against them. A new source
is a module with its loader plus one line here (and its params:
`curate.<name>`, `datasets.sources.<name>`).
"""

from __future__ import annotations

from probmed.infra.registry import Registry

SOURCES = Registry(
    "data source",
    {
        "chestxray14": "probmed.benchmark.sources.chestxray14:load",
        "vqarad": "probmed.benchmark.sources.vqarad:load",
        "medicat": "probmed.benchmark.sources.captions:load_medicat_source",
        "roco": "probmed.benchmark.sources.captions:load_roco_source",
        "dicom": "probmed.benchmark.sources.dicom:load",
        "roco_images": "probmed.benchmark.sources.roco_images:load",
        "roco_extended": "probmed.benchmark.sources.roco_extended:load",
        "covid_ct": "probmed.benchmark.sources.covid_ct:load",
        "figshare": "probmed.benchmark.sources.brain_mri:load_figshare",
        "brats": "probmed.benchmark.sources.brain_mri:load_brats",
    },
)
