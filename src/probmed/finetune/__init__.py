"""Fine-tuning: the pretrain and adapt stages and the transfer study (paper Figure 5)."""
