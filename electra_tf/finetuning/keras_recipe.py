"""`compile_for_finetuning`: `compile()` a task model with `run_finetuning`'s recipe, for users
who call `fit` themselves (on raw strings, with a preprocessor, or on features)."""

from __future__ import annotations

import dataclasses

from electra_tf.config import FinetuneConfig
from electra_tf.finetuning.api import resolve_finetune_config
from electra_tf.training.optimizer import create_optimizer


def compile_for_finetuning(model, num_train_steps: int, config: str = "finetune/default",
                           overrides=(), **compile_kwargs) -> FinetuneConfig:
    """Compiles `model` (a task model) with the recipe's AdamW, warmup (the recipe's
    proportion of `num_train_steps`) then linear decay to 0 at `num_train_steps`, and
    layer-wise decay over its encoder's layers; the learning rate for the encoder's width unless
    the recipe or `overrides` name one. `compile_kwargs` go to `compile()`; `jit_compile` is
    False unless given, as `run_finetuning`'s default (XLA measured slower on CPUs; pass True on
    TPUs and GPUs). Returns the resolved config."""
    if num_train_steps < 1:
        raise ValueError(f"num_train_steps must be at least 1, got {num_train_steps}")
    # the recipe's length only has to fit the model: the data decide the real one
    preprocessor = getattr(model, "preprocessor", None)
    length = (preprocessor.sequence_length if preprocessor is not None
              else model.model_config.max_position_embeddings)
    resolved = resolve_finetune_config(None, config,
                                       [f"finetune.max_seq_length={length}", *overrides],
                                       model_config=model.model_config)
    optimizer_config = dataclasses.replace(
        resolved.optimizer, train_steps=num_train_steps,
        warmup_steps=int(num_train_steps * resolved.finetune.warmup_proportion))
    compile_kwargs.setdefault("jit_compile", False)
    model.compile(optimizer=create_optimizer(optimizer_config, resolved.model.num_layers),
                  **compile_kwargs)
    return resolved
