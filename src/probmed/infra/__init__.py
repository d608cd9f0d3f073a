"""Infrastructure every stage uses and no domain rule lives in.

Atomic writes and the cleanup of a killed writer (`io`), file locks
(`filelock`), stopping when the parent process dies (`process`, `stopping`),
timestamps (`clock`), progress bars and log lines (`progress`), the lazy
registry type (`registry`), the MLflow store and run lifecycle
(`tracking_store`), the pinned data fetch (`pinned_data`).
"""
