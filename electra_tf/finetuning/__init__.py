"""Fine-tuning the discriminator: task data, the training run, reports and predictions."""

from electra_tf.finetuning.api import build_classifier, finetune, finetune_tasks, load_task

__all__ = ["build_classifier", "finetune", "finetune_tasks", "load_task"]
