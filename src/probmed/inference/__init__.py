"""Inference: models answer questions; answers are stored as they arrive and parsed into labels."""
