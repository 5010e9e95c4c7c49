"""Fine-tuning the discriminator: task data, the training run, reports and predictions."""
