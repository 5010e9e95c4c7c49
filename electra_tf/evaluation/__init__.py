"""Evaluation metrics for fine-tuning (GLUE-style scoring)."""
