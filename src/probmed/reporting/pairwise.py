"""`probmed compare A B`: two scored runs, named the way a user knows them, compared per category.

A run is found by what the user has at hand: a score folder (the `--out-dir` of
`probmed score` / `--score-dir` of `probmed predict`), a name `[<set>/]<model>[/<setting>]`
under the pipeline's score roots, or an MLflow run id (its `scores/per_image.parquet`
artifact). Both are reduced to their per-image sums (``per_image.parquet``) and the
difference A - B comes from probmed.scoring.compare's paired bootstrap, the same one
the report's difference tables use; nothing here resamples on its own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import pandas as pd

from probmed.core.errors import MissingFileError, UserError
from probmed.core.settings import BASE_SETTING
from probmed.reporting.comparisons import PER_IMAGE_FILE
from probmed.scoring.compare import Bootstrap, paired_differences

_RUN_ID = re.compile(r"^[0-9a-f]{32}$")


@dataclass(frozen=True)
class RunRef:
    """One side of a comparison: how the user named it, and its per-image sums."""

    label: str
    source: str  # the folder (or MLflow run) it was read from
    per_image: pd.DataFrame


def _read_folder(label: str, folder: Path) -> RunRef:
    path = folder / PER_IMAGE_FILE
    if not path.is_file():
        raise MissingFileError(f"{label}: {folder} has no {PER_IMAGE_FILE} (score it again with `probmed score`)")
    return RunRef(label, folder.as_posix(), pd.read_parquet(path))


def _by_name(spec: str, roots: Sequence[Path]) -> Path | None:
    """`<set>/<model>/<setting>`, `<model>/<setting>` or `<model>` (vanilla) under the score roots; the first
    question set that has it when the name leaves the set out."""
    parts = spec.strip("/").split("/")
    if not 1 <= len(parts) <= 3 or not all(parts):
        return None
    if len(parts) == 1:
        parts = [parts[0], BASE_SETTING]
    for root in roots:
        if len(parts) == 3:
            candidates = [root.joinpath(*parts)]
        else:
            candidates = sorted(d / parts[0] / parts[1] for d in root.iterdir() if d.is_dir()) if root.is_dir() else []
        hit = next((c for c in candidates if (c / "metrics.json").is_file()), None)
        if hit is not None:
            return hit
    return None


def _from_mlflow(run_id: str, tracking_uri: str) -> RunRef:
    """The run's `scores/per_image.parquet` artifact (every evaluation run logs its score folder)."""
    import tempfile

    from mlflow.exceptions import MlflowException
    from mlflow.tracking import MlflowClient

    from probmed.infra.tracking_store import check_tracking_db

    check_tracking_db(tracking_uri)
    client = MlflowClient(tracking_uri)
    try:
        run = client.get_run(run_id)
        with tempfile.TemporaryDirectory() as tmp:
            local = client.download_artifacts(run_id, f"scores/{PER_IMAGE_FILE}", tmp)
            frame = pd.read_parquet(local)
    except MlflowException as exc:
        raise UserError(f"MLflow run {run_id}: {str(exc).splitlines()[0]}") from None
    name = run.info.run_name or run_id
    return RunRef(name, f"mlflow run {run_id}", frame)


def resolve_run(spec: str, roots: Sequence[Path], tracking_uri: str) -> RunRef:
    """A run from a score folder, a `[<set>/]<model>[/<setting>]` name, or an MLflow run id, in that order."""
    folder = Path(spec)
    if folder.is_dir() and (folder / "metrics.json").is_file():
        return _read_folder(spec, folder)
    named = _by_name(spec, roots)
    if named is not None:
        return _read_folder(spec, named)
    if _RUN_ID.match(spec):
        return _from_mlflow(spec, tracking_uri)
    where = ", ".join(r.as_posix() for r in roots)
    raise UserError(f"{spec!r}: not a score folder, a <set>/<model>/<setting> under {where}, nor an MLflow run id")


def compare(a: RunRef, b: RunRef, boot: Bootstrap, image_type: str | None = None) -> pd.DataFrame:
    """A - B per category and overall, strict and averaged accuracy, with paired bootstrap intervals."""
    return paired_differences(a.per_image, b.per_image, boot, image_type=image_type)


def markdown(a: RunRef, b: RunRef, diff: pd.DataFrame, boot: Bootstrap, image_type: str | None = None) -> str:
    """The comparison as a page: what was compared, then one row per category."""
    from probmed.core.markdown import difference_cell, markdown_table

    rows = []
    for category, part in diff.groupby("category", sort=False):
        row: dict[str, Any] = {"category": f"{category} (pooled units)" if category == "overall" else category}
        for metric, name in (("strict", "with adversarial pairs"), ("averaged", "averaged")):
            m = part[part["metric"] == metric]
            if m.empty:
                row |= {f"A {name} %": "—", f"B {name} %": "—", f"A - B {name} [CI]": "—"}
                continue
            r = m.iloc[0]
            row |= {f"A {name} %": f"{r['a']:.1f}", f"B {name} %": f"{r['b']:.1f}",
                    f"A - B {name} [CI]": difference_cell(r["diff"], r["ci_low"], r["ci_high"])}
        row["images"] = int(part["n_images"].max())
        rows.append(row)
    level = f"{100 * boot.level:g}%"
    head = [f"# {a.label} vs {b.label}", "",
            f"- A: `{a.label}` ({a.source})", f"- B: `{b.label}` ({b.source})",
            *([f"- image type: {image_type}"] if image_type else []), "",
            f"Differences in points, A - B, with a paired bootstrap {level} interval over images ({boot.resamples} "
            "resamples): an interval that includes 0 means the data cannot tell the two runs apart.", ""]
    return "\n".join(head) + "\n" + markdown_table(pd.DataFrame(rows))


def to_json(a: RunRef, b: RunRef, diff: pd.DataFrame, image_type: str | None = None) -> dict[str, Any]:
    """The comparison for scripts: both sides and every difference row."""
    rows = diff.astype(object).where(diff.notna(), None).to_dict(orient="records")
    return {"a": {"label": a.label, "source": a.source}, "b": {"label": b.label, "source": b.source},
            "image_type": image_type, "differences": rows}
