"""CITATION.cff of a release folder: how to cite this exact version (Citation File Format 1.2.0).

The project's own CITATION.cff (repository root) cites the software; this one
cites one released dataset version, with its content hash, and refers to the
ProbMed paper whose protocol it follows.
"""

from __future__ import annotations

import yaml

from probmed.release.manifest import Release

PROBMED_PAPER_REFERENCE = {
    "type": "article",
    "title": "Worse than Random? An Embarrassingly Simple Probing Evaluation of Large Multimodal Models in Medical VQA",
    "authors": [{"family-names": "Yan", "given-names": "Qianqi"}, {"family-names": "He", "given-names": "Xuehai"},
                {"family-names": "Yue", "given-names": "Xiang"}, {"family-names": "Wang", "given-names": "Xin Eric"}],
    "year": 2024,
    "identifiers": [{"type": "other", "value": "arXiv:2405.20421"}],
}


def citation_cff(release: Release) -> str:
    """The release's CITATION.cff text."""
    doc = {
        "cff-version": "1.2.0",
        "message": "If you use this dataset version, cite it as below, with the ProbMed paper and every source dataset "
                   "named in its README.md.",
        "type": "dataset",
        "title": f"{release.name}: a ProbMed-style probing set for medical VQA",
        "version": release.version,
        "authors": [{"name": "probmed contributors"}],
        "abstract": f"{len(release.questions)} yes/no probing questions on {release.images} radiology images, ground-truth "
                    "questions paired with adversarial twins.",
        "keywords": ["medical VQA", "probing", "adversarial pairs", "hallucination"],
        "identifiers": [{"type": "other", "value": f"sha256:{release.digest}",
                         "description": "content hash: sha256 of SHA256SUMS (every data file of the release)"}],
        "references": [PROBMED_PAPER_REFERENCE],
    }
    if release.url:  # where it is published (params release.url); the card shows a placeholder until it is set
        doc["url"] = release.url
    return yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=1000)
