"""Shared foundations every stage reads: records, vocabularies, config, the original release's JSON, I/O helpers."""
