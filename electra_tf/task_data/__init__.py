"""Fine-tuning task data: GLUE and CSV/TSV/JSONL tables, SQuAD and CoNLL readers and features."""
