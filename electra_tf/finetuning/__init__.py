"""Fine-tuning the discriminator: task data, the training run, reports and predictions.

Names are imported on first use: importing one module of this package (a task kind, the
runner) does not load the others.
"""

from electra_tf.lazy_names import lazy_names

_EXPORTS = {name: "electra_tf.finetuning.api"
            for name in ("build_classifier", "finetune", "finetune_tasks", "load_task")}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_names(__name__, _EXPORTS)
