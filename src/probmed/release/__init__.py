"""Releases: a question set as a versioned, citable dataset folder that harnesses outside this repository load.

`probmed release` (probmed.release.build) writes ``build/release/<set>/<version>/``: the
Hugging Face `datasets` layout (Parquet with embedded images, configs ``all``,
``commercial``, ``paper``; probmed.release.table), a dataset card (card), Croissant
(croissant), CITATION.cff (cff), the original ProbMed ``test.json`` and the images,
under a version that is a semantic version plus the content hash (publish).
"""
