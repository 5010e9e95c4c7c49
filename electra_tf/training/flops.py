"""Matmul FLOPs of training steps, for throughput figures and equal-compute comparisons."""


def encoder_flops_per_token(config, seq):
    """Forward matmul FLOPs per token of one encoder (projection, attention, feed-forward)."""
    per_layer = 8 * config.hidden_size ** 2 + 4 * config.hidden_size * config.intermediate_size
    per_layer += 4 * seq * config.hidden_size  # attention scores and context
    projection = (2 * config.embedding_size * config.hidden_size
                  if config.embedding_size != config.hidden_size else 0)
    return projection + config.num_layers * per_layer


def classification_forward_flops(config, batch, seq):
    """Matmul FLOPs of a classifier's forward pass: the encoder at every position but the last
    block, which computes [CLS] alone (its keys and values at every position;
    `electra_tf.models.classifier`)."""
    h = config.hidden_size
    skipped_per_position = 4 * h * h + 4 * h * config.intermediate_size + 4 * seq * h
    return batch * (seq * encoder_flops_per_token(config, seq)
                    - (seq - 1) * skipped_per_position)


def classification_step_flops(config, batch, seq):
    """Matmul FLOPs of one classifier training step, 3x the forward pass."""
    return 3 * classification_forward_flops(config, batch, seq)


def pretraining_step_flops(model_config, batch, seq, num_predictions, electra=True):
    """Matmul FLOPs of one training step: 3x the forward pass (backward = 2x forward)."""
    tokens = batch * seq
    generator = model_config.generator_config() if electra else model_config
    forward = tokens * encoder_flops_per_token(generator, seq)
    forward += batch * num_predictions * (2 * generator.hidden_size * generator.embedding_size
                                          + 2 * generator.embedding_size * model_config.vocab_size)
    if electra:
        h = model_config.hidden_size
        forward += tokens * (encoder_flops_per_token(model_config, seq) + 2 * h * h + 2 * h)
    return 3 * forward
