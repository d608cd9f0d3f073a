"""probmed: probing evaluation of large multimodal models on medical VQA."""

__version__ = "0.1.0"
