"""The weights and arithmetic of an exported model: float32 (the default) or bfloat16.

A bfloat16 export is the same model rebuilt under Keras' `"bfloat16"` dtype policy with its
weights rounded to bfloat16: every matmul reads bfloat16 operands and writes bfloat16 results,
while LayerNorm computes in float32 (as Keras does for half types) and the signatures still
return float32 (the exporters cast the model's outputs before softmax or sigmoid). On CPUs with
AMX (Intel Sapphire Rapids and later) TensorFlow's oneDNN kernels run these matmuls on the AMX
tiles, two to three times as fast as float32 even for a single request's small products
(docs/serving.md). With AVX-512 BF16 but no AMX it depends on the CPU: on AMD's Zen 4 bfloat16
products run at twice the float32 rate and both batches and single requests gain; on an Intel
Xeon whose AMX is hidden they run at half of it and the export is slower; without either,
bfloat16 matmuls are emulated and slower. `mixed_bfloat16` is
no substitute when serving: it casts every float32 weight on every request.

The graph has the same core ops as the float32 export (bfloat16 kernels of MatMul, BiasAdd,
Softmax, Erfc, ... are registered in TensorFlow's CPU build), so a stock model server loads it.
Outputs differ from the float32 export by bfloat16 rounding (8 bits of mantissa): at most
0.03-0.04 on the logits of a random ELECTRA-Small classifier at batch 1 and 32
(tests/test_export_bfloat16.py states the tolerance).

`transposed_feedforward=True` (either dtype) also stores each transformer block's feed-forward
input kernel transposed, [intermediate, H], for the exported graph to multiply as x @ K^T
(`TransformerLayer.transpose_intermediate_kernel_for_serving`): the same core ops and, in
float32, the same outputs to rounding. It made single requests 1.13-1.14x as fast on an
AVX2-only CPU (AMD Zen 3, one intra-op thread), whose oneDNN kernels run that product at a
single request's 64-128 rows far below the others (docs/serving.md); it is unmeasured on CPUs
with AVX-512, hence not the default.
"""

from __future__ import annotations

import keras

from electra_tf.models.transformer import TransformerLayer

SERVING_DTYPES = ("float32", "bfloat16")


def serving_copy(model, dtype: str, transposed_feedforward: bool = False):
    """`model` itself for "float32"; for "bfloat16" a new model of the same class and config,
    built under Keras' "bfloat16" policy, holding `model`'s weights rounded to bfloat16. With
    `transposed_feedforward` always a new model, whose transformer blocks also hold their
    feed-forward input kernels transposed for inference (module docstring): export it, do not
    train it.

    `model` is any electra_tf Keras model with `get_config`/`from_config` (the pretrainer,
    classifier, question answerer, tagger); its weights are read now, so load them first.
    """
    if dtype not in SERVING_DTYPES:
        raise ValueError(f"serving dtype {dtype!r} is not one of {', '.join(SERVING_DTYPES)}")
    if dtype == "float32" and not transposed_feedforward:
        return model
    copy = _copy(model, dtype)
    if transposed_feedforward:
        blocks = [layer for layer in copy._flatten_layers()
                  if isinstance(layer, TransformerLayer)]
        if not blocks:
            raise ValueError(f"{model.name} has no transformer blocks to transpose kernels of")
        for block in blocks:
            block.transpose_intermediate_kernel_for_serving()
    return copy


def _copy(model, dtype):
    """A new model of `model`'s class and config under the `dtype` policy, with its weights."""
    config = {**model.get_config(), "dtype": dtype}
    # Sublayers created in the constructor take the global policy, not the model's.
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy(dtype)
    try:
        copy = type(model).from_config(config)
    finally:
        keras.config.set_dtype_policy(previous)
    weights = model.get_weights()
    if len(copy.weights) != len(weights):
        raise ValueError(f"the {dtype} copy of {model.name} has {len(copy.weights)} weights, "
                         f"the model {len(weights)}: build the model before exporting it")
    copy.set_weights(weights)  # each assignment casts to the variable's dtype
    return copy
