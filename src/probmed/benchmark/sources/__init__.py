"""The raw data sources: one loader per source (registry), each -> image records with its exclusions."""
