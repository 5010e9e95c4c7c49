"""Benchmarks: commands that print numbers (`python -m electra_tf.benchmarks.<name>`), never tests."""
