"""Text to tokens: normalization, the in-graph WordPiece tokenizer and vocabulary learning."""
