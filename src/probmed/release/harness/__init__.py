"""Tasks for the harnesses people already run, generated into each release's ``harness/`` folder.

``probmed_task.json`` (the vanilla prompt, the set, its configs and categories) is
the only generated fact; the task code is copied verbatim from this package:
``lmms_eval_utils.py`` (with a generated task YAML), ``inspect_task.py``, and the
scorer both use, ``strict_pairs.py`` with ``probmed.core.answer_parser``
(standard library only, so the harnesses parse and score as ``probmed score``).
The VLMEvalKit-style TSV is written by probmed.release.harness.files.
"""
