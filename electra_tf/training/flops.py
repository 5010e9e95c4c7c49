"""Matmul FLOPs of training steps, for throughput figures and equal-compute comparisons."""


def pretraining_step_flops(model_config, batch, seq, num_predictions, electra=True):
    """Matmul FLOPs of one training step: 3x the forward pass (backward = 2x forward)."""

    def encoder_flops_per_token(c):
        per_layer = 8 * c.hidden_size ** 2 + 4 * c.hidden_size * c.intermediate_size
        per_layer += 4 * seq * c.hidden_size  # attention scores and context
        projection = 2 * c.embedding_size * c.hidden_size if c.embedding_size != c.hidden_size else 0
        return projection + c.num_layers * per_layer

    tokens = batch * seq
    generator = model_config.generator_config() if electra else model_config
    forward = tokens * encoder_flops_per_token(generator)
    forward += batch * num_predictions * (2 * generator.hidden_size * generator.embedding_size
                                          + 2 * generator.embedding_size * model_config.vocab_size)
    if electra:
        h = model_config.hidden_size
        forward += tokens * (encoder_flops_per_token(model_config) + 2 * h * h + 2 * h)
    return 3 * forward
