"""Model backends: one interface, its typed configs, and the backends a `models:` entry can name."""
