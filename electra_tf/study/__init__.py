"""What pretraining is worth downstream: ELECTRA and the MLM baseline at equal FLOPs, each
checkpoint (and the random initialisation) fine-tuned on a classification task at several label
counts, seeds and learning rates; a table and a plot of accuracy against pretraining FLOPs.

    python -m electra_tf.study --data_dir data/debian --output_dir runs/study

    from electra_tf.study import run_study, write_report
    result = run_study(data_dir="data/debian", output_dir="runs/study")
    write_report("runs/study")        # the report of a study still running, from results.jsonl

Modules: `plan` (the plan as plain data), `data` (the data directory), `pretraining` (the two
runs), `grid` (the fine-tuning trials), `results` (results.jsonl and its summary), `report`
(table and plot), `runner` (`run_study`). Names are imported on first use, so
`python -m electra_tf.study --help` does not start TensorFlow.
"""

from __future__ import annotations

from electra_tf.lazy_names import lazy_names

_EXPORTS = {"run_study": "electra_tf.study.runner", "StudyResult": "electra_tf.study.runner",
            "write_report": "electra_tf.study.report", "StudyError": "electra_tf.study.plan"}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_names(__name__, _EXPORTS)
