"""The Parquet files of a release, in the layout `datasets` reads: images embedded as ``datasets.Image``.

The schema (and its ``huggingface`` metadata, which tells `datasets` that the
``image`` struct is an Image feature) comes from ``datasets.Features`` itself,
so the files are what `datasets` would write. Each image's bytes repeat on every
question row of that image, so the image column is dictionary-encoded per row
group (row groups end on an image boundary after about :data:`ROW_GROUP_IMAGE_BYTES`
of distinct images): on disk each image is stored about once per file.
Written with fixed settings, the same rows give the same bytes (the content hash
of a release depends on nothing else).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from probmed.release.table import IMAGE_COLUMN, TEXT_COLUMNS

ROW_GROUP_IMAGE_BYTES = 8 * 2**20
DICTIONARY_PAGE_LIMIT = 4 * ROW_GROUP_IMAGE_BYTES  # above a row group's distinct images: the dictionary never falls back


def features() -> Any:
    """The rows' ``datasets.Features``: every text column a string, the image an Image."""
    import datasets

    return datasets.Features({**{c: datasets.Value("string") for c in TEXT_COLUMNS}, IMAGE_COLUMN: datasets.Image()})


@dataclass(frozen=True)
class ShardInfo:
    """What the card and Croissant say about one written file."""

    path: str
    rows: int
    arrow_bytes: int  # size of its rows in memory (the Hub's num_bytes)


def _row_groups(rows: pd.DataFrame, image_bytes: dict[str, bytes]) -> list[pd.DataFrame]:
    """Contiguous slices of the rows that end on an image boundary after ROW_GROUP_IMAGE_BYTES of new images."""
    groups, start, size, last = [], 0, 0, None
    ids = rows["image_id"].tolist()
    for i, image_id in enumerate(ids):
        if image_id != last:
            if size >= ROW_GROUP_IMAGE_BYTES:
                groups.append(rows.iloc[start:i])
                start, size = i, 0
            size += len(image_bytes[image_id])
            last = image_id
    groups.append(rows.iloc[start:])
    return [g for g in groups if len(g)]


def write_shard(rows: pd.DataFrame, image_bytes: dict[str, bytes], image_names: dict[str, str], folder: Path,
                rel: str) -> ShardInfo:
    """One Parquet file ``folder/rel`` of ``rows`` (TEXT_COLUMNS) with each row's image embedded."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = features().arrow_schema
    path = folder / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    total = 0
    with pq.ParquetWriter(path, schema, compression="snappy", use_dictionary=True,
                          dictionary_pagesize_limit=DICTIONARY_PAGE_LIMIT, write_statistics=False) as writer:
        for group in _row_groups(rows, image_bytes):
            columns: dict[str, Any] = {c: group[c].tolist() for c in TEXT_COLUMNS}
            columns[IMAGE_COLUMN] = [{"bytes": image_bytes[i], "path": image_names[i]} for i in group["image_id"]]
            table = pa.Table.from_pydict(columns, schema=schema)
            total += table.nbytes
            writer.write_table(table, row_group_size=len(group))
    return ShardInfo(path=rel, rows=len(rows), arrow_bytes=int(total))
