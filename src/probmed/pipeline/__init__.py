"""The DVC pipeline's own stage: the run plan, checked before any work (dvc.yaml, `probmed plan`)."""
