"""Benchmark construction: sources -> image records -> probing questions (and their audit)."""
