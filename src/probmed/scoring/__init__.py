"""Scoring: from questions + predictions to every number the paper reports.

- metrics:    the project's scorer (strict pairs, averaged, gt-only, POPE-style rates,
              bootstrap intervals, exact random-choice baseline); documents metrics.json
- official:   the official-compatible scorer (original calculate_score.py, quirks included)
- baselines:  random / always-yes / always-no prediction producers
- procedural: procedural diagnosis and error shares (paper Table 4)
- robustness: accuracy on seeded image subsets (paper Appendix C)
- bootstrap:  resampling images for the 95% intervals
- tables:     the paper's tables as CSV and Markdown
- run:        one scoring run end to end (what `probmed score` does)
- synthetic:  generated ProbMed-sized sets for benchmarks and property tests
"""
