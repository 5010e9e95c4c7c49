"""Tests for the model building blocks: embeddings, transformer layer, encoder, RTD head."""

import math

import keras
import numpy as np
import pytest
import tensorflow as tf

from electra_tf.models.activations import get_activation
from electra_tf.models.embeddings import ElectraEmbeddings
from electra_tf.models.encoder import ElectraEncoder
from electra_tf.models.heads import DiscriminatorHead
from electra_tf.models import transformer
from electra_tf.models.transformer import TransformerLayer

INIT_STD = 0.02
# Standard deviation of a normal(0, s) truncated at +-2s (what tf.truncated_normal_initializer and
# keras TruncatedNormal draw, without rescaling): s * 0.8796.
_A = 2.0
_PHI = math.exp(-_A * _A / 2) / math.sqrt(2 * math.pi)
_Z = math.erf(_A / math.sqrt(2))
TRUNC_STD = INIT_STD * math.sqrt(1 - 2 * _A * _PHI / _Z)


def _gelu_exact(x):
    x = np.asarray(x, np.float64)
    return 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))


def _gelu_tanh(x):
    x = np.asarray(x, np.float64)
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


def _layer_norm(x, gamma, beta, eps):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


def _ids(batch, seq, vocab, seed):
    return tf.random.stateless_uniform([batch, seq], seed=[seed, 0], maxval=vocab, dtype=tf.int32)


# ----------------------------------------------------------------------------------------------
# ElectraEmbeddings
# ----------------------------------------------------------------------------------------------

def _embeddings(**kwargs):
    kwargs.setdefault("max_position_embeddings", 16)
    return ElectraEmbeddings(kwargs.pop("vocab_size", 50), kwargs.pop("embedding_size", 8),
                             **kwargs)


def test_embeddings_shape_and_values():
    emb = _embeddings()
    ids = _ids(2, 7, 50, seed=1)
    seg = tf.constant([[0, 0, 0, 1, 1, 1, 1], [0, 0, 0, 0, 0, 1, 1]])
    out = emb(ids, seg, training=False)
    assert out.shape == (2, 7, 8)
    assert emb.layer_norm.epsilon == 1e-12
    # Reference: LN(word[ids] + type[seg] + pos[:L]) with epsilon 1e-12, no dropout.
    word = emb.word_embeddings.embeddings.numpy().astype(np.float64)
    ttype = emb.token_type_embeddings.embeddings.numpy().astype(np.float64)
    pos = emb.position_embeddings.position_embeddings.numpy().astype(np.float64)
    x = word[ids.numpy()] + ttype[seg.numpy()] + pos[None, :7]
    expected = _layer_norm(x, emb.layer_norm.gamma.numpy(), emb.layer_norm.beta.numpy(), 1e-12)
    np.testing.assert_allclose(out.numpy(), expected, atol=2e-5)


def test_embeddings_layer_norm_epsilon_is_used():
    """A row with tiny variance: epsilon 1e-12 normalises it to unit variance, 1e-3 would not."""
    emb = _embeddings(embedding_size=4)
    emb.build()
    emb.word_embeddings.embeddings.assign(np.tile([[1e-3, -1e-3, 1e-3, -1e-3]], [50, 1]))
    emb.token_type_embeddings.embeddings.assign(np.zeros([2, 4]))
    emb.position_embeddings.position_embeddings.assign(np.zeros([16, 4]))
    out = emb(tf.constant([[3]]), tf.constant([[0]]), training=False).numpy()
    np.testing.assert_allclose(out[0, 0], [1, -1, 1, -1], atol=1e-4)


def test_embeddings_initializer_truncated_normal_002():
    emb = _embeddings(vocab_size=4000, embedding_size=64, max_position_embeddings=512)
    emb.build()
    word = emb.word_embeddings.embeddings.numpy()
    # Truncated at 2 * 0.02, like tf.truncated_normal_initializer(stddev=0.02) in the original.
    assert np.abs(word).max() <= 2 * INIT_STD + 1e-6
    assert abs(word.mean()) < 1e-3
    # The std of N(0, 0.02) truncated at 2 sigma is 0.0176 (12% below 0.02, as in the original).
    assert abs(word.std() - TRUNC_STD) / TRUNC_STD < 0.03
    for table in (emb.position_embeddings.position_embeddings, emb.token_type_embeddings.embeddings):
        values = table.numpy()
        assert np.abs(values).max() <= 2 * INIT_STD + 1e-6
        assert values.std() > 0.5 * TRUNC_STD
    np.testing.assert_array_equal(emb.layer_norm.gamma.numpy(), 1.0)
    np.testing.assert_array_equal(emb.layer_norm.beta.numpy(), 0.0)


def test_embeddings_dropout_only_in_training():
    emb = _embeddings(vocab_size=100, embedding_size=32, dropout=0.25)
    ids, seg = _ids(4, 16, 100, seed=2), tf.zeros([4, 16], tf.int32)
    inference = emb(ids, seg, training=False).numpy()
    np.testing.assert_array_equal(inference, emb(ids, seg).numpy())  # default: no dropout
    assert np.count_nonzero(inference == 0) == 0
    train1 = emb(ids, seg, training=True).numpy()
    train2 = emb(ids, seg, training=True).numpy()
    dropped = train1 == 0
    assert 0.15 < dropped.mean() < 0.35
    # Kept units are scaled by 1 / (1 - rate).
    np.testing.assert_allclose(train1[~dropped], inference[~dropped] / 0.75, rtol=1e-5, atol=1e-6)
    assert not np.array_equal(train1, train2)  # each call draws its own mask


def test_embeddings_config_round_trip():
    emb = _embeddings(vocab_size=60, embedding_size=12, max_position_embeddings=24,
                      type_vocab_size=3, dropout=0.3, layer_norm_epsilon=1e-7,
                      initializer_range=0.05, name="emb")
    config = emb.get_config()
    for key, value in dict(vocab_size=60, embedding_size=12, max_position_embeddings=24,
                           type_vocab_size=3, dropout=0.3, layer_norm_epsilon=1e-7,
                           initializer_range=0.05).items():
        assert config[key] == value, key
    clone = ElectraEmbeddings.from_config(config)
    assert clone.get_config() == config
    assert clone.layer_norm.epsilon == 1e-7
    assert clone.dropout_layer.rate == 0.3
    ids, seg = _ids(2, 5, 60, seed=3), tf.constant([[0, 1, 2, 0, 1]] * 2)
    expected = emb(ids, seg)
    clone.build()
    clone.set_weights(emb.get_weights())
    np.testing.assert_allclose(clone(ids, seg).numpy(), expected.numpy(), atol=1e-6)


# ----------------------------------------------------------------------------------------------
# TransformerLayer
# ----------------------------------------------------------------------------------------------

def test_transformer_separate_attention_dropout():
    layer = TransformerLayer(32, 2, dropout=0.2, attention_dropout=0.35)
    layer.build((None, None, 16))
    assert layer._self_attention_layer.dropout == pytest.approx(0.35)
    assert layer._self_attention_dropout.rate == pytest.approx(0.2)
    assert layer._feedforward_dropout.rate == pytest.approx(0.2)
    assert layer.dropout == pytest.approx(0.2)
    assert layer.attention_dropout == pytest.approx(0.35)


def test_transformer_attention_dropout_is_applied():
    x = tf.random.stateless_normal([2, 6, 16], seed=[4, 0])
    off = TransformerLayer(32, 2, dropout=0.0, attention_dropout=0.0)
    np.testing.assert_allclose(off(x, training=True).numpy(), off(x, training=False).numpy(),
                               atol=1e-6)
    only_attention = TransformerLayer(32, 2, dropout=0.0, attention_dropout=0.5)
    diff = np.abs(only_attention(x, training=True).numpy()
                  - only_attention(x, training=False).numpy())
    assert diff.max() > 1e-3


def test_transformer_config_round_trip():
    layer = TransformerLayer(48, 4, dropout=0.15, attention_dropout=0.05, layer_norm_epsilon=1e-12,
                             name="block")
    layer.build((None, None, 16))
    config = layer.get_config()
    assert config["attention_dropout"] == pytest.approx(0.05)
    assert config["dropout"] == pytest.approx(0.15)
    assert config["intermediate_dim"] == 48 and config["num_heads"] == 4
    clone = TransformerLayer.from_config(config)
    assert clone.get_config() == config
    clone.build((None, None, 16))
    assert clone._self_attention_layer.dropout == pytest.approx(0.05)
    assert clone._self_attention_dropout.rate == pytest.approx(0.15)
    assert clone._feedforward_dropout.rate == pytest.approx(0.15)
    # Registered: generic (de)serialisation gives the same class and config.
    again = keras.layers.deserialize(keras.layers.serialize(layer))
    assert type(again) is TransformerLayer
    assert again.get_config() == config


def test_transformer_matches_post_ln_reference():
    """Post-LN BERT block computed with numpy from the layer's own weights."""
    h, heads, ffn, eps = 16, 2, 32, 1e-12
    # TransformerLayer keeps keras-hub's default activation (relu); the encoder passes GELU.
    layer = TransformerLayer(ffn, heads, layer_norm_epsilon=eps, activation=get_activation("gelu"))
    x = tf.random.stateless_normal([2, 5, h], seed=[5, 0])
    mask = tf.constant([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]])
    out = layer(x, padding_mask=mask, training=False).numpy()
    attn = layer._self_attention_layer
    q = np.einsum("bth,hnd->btnd", x.numpy(), attn._query_dense.kernel.numpy()) + attn._query_dense.bias.numpy()
    k = np.einsum("bth,hnd->btnd", x.numpy(), attn._key_dense.kernel.numpy()) + attn._key_dense.bias.numpy()
    v = np.einsum("bth,hnd->btnd", x.numpy(), attn._value_dense.kernel.numpy()) + attn._value_dense.bias.numpy()
    scores = np.einsum("bfnd,btnd->bnft", q, k) / math.sqrt(h // heads)
    scores = scores + (1.0 - mask.numpy()[:, None, None, :]) * -1e9  # padding masked as key only
    probs = np.exp(scores - scores.max(-1, keepdims=True))
    probs /= probs.sum(-1, keepdims=True)
    ctx = np.einsum("bnft,btnd->bfnd", probs, v)
    att_out = (np.einsum("bfnd,ndh->bfh", ctx, attn._output_dense.kernel.numpy())
               + attn._output_dense.bias.numpy())
    ln1 = layer._self_attention_layer_norm
    x1 = _layer_norm(x.numpy() + att_out, ln1.gamma.numpy(), ln1.beta.numpy(), eps)
    inter = layer._feedforward_intermediate_dense
    hidden = _gelu_exact(x1 @ inter.kernel.numpy() + inter.bias.numpy())
    dense_out = layer._feedforward_output_dense
    x2 = x1 + hidden @ dense_out.kernel.numpy() + dense_out.bias.numpy()
    ln2 = layer._feedforward_layer_norm
    expected = _layer_norm(x2, ln2.gamma.numpy(), ln2.beta.numpy(), eps)
    np.testing.assert_allclose(out, expected, atol=1e-4)
    assert ln1.epsilon == eps and ln2.epsilon == eps


def test_transformer_padding_does_not_leak():
    layer = TransformerLayer(32, 2)
    x = tf.random.stateless_normal([2, 6, 16], seed=[6, 0]).numpy()
    mask = np.array([[1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1]])
    changed = x.copy()
    changed[0, 4:] = np.random.default_rng(7).normal(size=(2, 16)) * 10.0
    a = layer(tf.constant(x), padding_mask=tf.constant(mask), training=False).numpy()
    b = layer(tf.constant(changed), padding_mask=tf.constant(mask), training=False).numpy()
    np.testing.assert_allclose(a[0, :4], b[0, :4], atol=1e-6)
    np.testing.assert_allclose(a[1], b[1], atol=1e-6)
    # Without the mask the padded inputs do change the real positions.
    c = layer(tf.constant(changed), training=False).numpy()
    assert np.abs(a[0, :4] - c[0, :4]).max() > 1e-3


def _keras_hub_call(layer, x, mask, training):
    """The same layer through keras-hub's own TransformerEncoder.call (keras MultiHeadAttention,
    Dense on 3-D inputs), which TransformerLayer's padding-mask path replaces for speed."""
    import keras_hub
    return keras_hub.layers.TransformerEncoder.call(layer, x, padding_mask=mask, training=training)


@pytest.mark.parametrize("training", [False, True])
def test_transformer_fast_path_matches_keras_hub_call_and_gradients(training):
    # Dropout 0 so that training=True compares the training graph (GELU with its written-out
    # derivative) rather than random masks.
    layer = TransformerLayer(64, 4, dropout=0.0, attention_dropout=0.0,
                             activation=get_activation("gelu"))
    x = tf.random.stateless_normal([3, 7, 32], seed=[8, 0])
    mask = tf.constant([[1] * 7, [1, 1, 1, 1, 0, 0, 0], [1, 1, 0, 0, 0, 0, 0]])
    layer(x, padding_mask=mask)
    results = []
    for call in (layer, lambda x, padding_mask, training: _keras_hub_call(layer, x, padding_mask,
                                                                          training)):
        with tf.GradientTape() as tape:
            tape.watch(x)
            out = call(x, padding_mask=mask, training=training)
            loss = tf.reduce_sum(out * tf.sin(out))
        results.append([out] + tape.gradient(loss, [x] + layer.trainable_variables))
    for fast, reference in zip(*results):
        np.testing.assert_allclose(fast.numpy(), reference.numpy(), rtol=1e-5, atol=1e-5)


def test_transformer_gelu_gradient_form_only_in_training():
    """Training uses GELU with its written-out derivative; inference keeps the plain GELU that
    oneDNN fuses into the matmul of an exported model (custom_gradient's IdentityN would not)."""
    layer = TransformerLayer(64, 4, activation=get_activation("gelu"))
    x = tf.random.stateless_normal([2, 5, 32], seed=[11, 0])
    mask = tf.ones([2, 5], tf.int32)
    layer(x, padding_mask=mask)

    def op_types(training):
        graph = tf.function(lambda x: layer(x, padding_mask=mask, training=training)
                            ).get_concrete_function(x).graph
        return {op.type for op in graph.get_operations()}

    assert "IdentityN" in op_types(True) and "IdentityN" not in op_types(False)
    assert "Erfc" in op_types(False)


@pytest.mark.parametrize("in_out, avx2_only", [
    ((12, 5), False),  # narrowing: (dy^T x)^T
    ((24, 6), True),  # feed-forward out on an AVX2-only CPU: x transposed by XLA, then x^T @ dy
    ((6, 24), True),  # feed-forward in there: (dy^T @ x)^T with dy transposed by XLA
    ((6, 6), True),  # a projection there: autodiff's products, XLA's column sums for the bias
    ((6, 24), False),  # feed-forward in on an AVX-512 CPU: dy @ (W^T written out by XLA)
])
def test_training_dense_gradients_match_the_plain_dense(monkeypatch, in_out, avx2_only):
    """The kernel gradient forms of float32 training give the values of autodiff through
    matmul + bias_add (inference's graph), whatever CPU runs the test."""
    monkeypatch.setattr(transformer, "avx2_without_avx512", lambda: avx2_only)
    x = tf.random.stateless_normal([9, in_out[0]], seed=[13, 0])
    kernel = tf.random.stateless_normal(in_out, seed=[13, 1])
    bias = tf.random.stateless_normal([in_out[1]], seed=[13, 2])
    results = []
    for training in (True, False):
        with tf.GradientTape() as tape:
            tape.watch([x, kernel, bias])
            out = transformer._dense(x, kernel, bias, training)
            loss = tf.reduce_sum(out * tf.sin(out))
        results.append([out] + tape.gradient(loss, [x, kernel, bias]))
    for fast, plain in zip(*results):
        np.testing.assert_allclose(fast.numpy(), plain.numpy(), rtol=1e-5, atol=1e-6)


def test_bfloat16_dense_bias_gradient_is_the_correctly_rounded_column_sum():
    """In bfloat16 training the bias gradient is the product ones @ dy, which accumulates in
    float32: the column sums of dy within a bfloat16 rounding. TensorFlow's BiasAddGrad, which
    autodiff through bias_add takes, accumulates in bfloat16 (over 4,096 rows it can be off by
    more than the sum itself). The input and kernel gradients are autodiff's."""
    rows = 4096
    x = tf.cast(tf.random.stateless_normal([rows, 12], seed=[14, 0]), tf.bfloat16)
    kernel = tf.cast(tf.random.stateless_normal([12, 5], seed=[14, 1]), tf.bfloat16)
    bias = tf.cast(tf.random.stateless_normal([5], seed=[14, 2]), tf.bfloat16)
    upstream = tf.cast(3 * tf.random.stateless_normal([rows, 5], seed=[14, 3]), tf.bfloat16)
    results = []
    for training in (True, False):
        with tf.GradientTape() as tape:
            tape.watch([x, kernel, bias])
            out = transformer._dense(x, kernel, bias, training)
        results.append(tape.gradient(out, [x, kernel, bias], output_gradients=upstream))
    (dx, dkernel, dbias), (plain_dx, plain_dkernel, _) = results
    np.testing.assert_array_equal(dx.numpy(), plain_dx.numpy())
    np.testing.assert_array_equal(dkernel.numpy(), plain_dkernel.numpy())
    exact = tf.reduce_sum(tf.cast(upstream, tf.float64), axis=0)
    assert dbias.dtype == tf.bfloat16
    # Within one bfloat16 ulp of the exact sums (relative 2^-7): oneDNN rounds once, Eigen's
    # product (TF_ENABLE_ONEDNN_OPTS=0) comes within 0.8 ulp.
    np.testing.assert_allclose(tf.cast(dbias, tf.float64).numpy(), exact.numpy(), rtol=2 ** -7)


@pytest.mark.parametrize("in_out, dtype, training, avx2_only, kernel_path, bias_path, input_path", [
    ((12, 5), tf.float32, True, False, "narrowing", "BiasAddGrad", "transpose_b"),
    ((12, 5), tf.float32, False, False, "plain", "BiasAddGrad", "transpose_b"),  # inference
    ((5, 12), tf.float32, True, False, "plain", "BiasAddGrad", "transpose_b"),  # under 4x
    ((5, 5), tf.float32, True, False, "plain", "BiasAddGrad", "transpose_b"),
    ((12, 5), tf.bfloat16, True, False, "plain", "product", "transpose_b"),  # bf16: plain faster
    ((5, 12), tf.bfloat16, True, False, "plain", "product", "transpose_b"),
    ((5, 20), tf.bfloat16, True, False, "plain", "product", "transpose_b"),
    ((5, 12), tf.bfloat16, False, False, "plain", "BiasAddGrad", "transpose_b"),
    ((20, 5), tf.float32, True, True, "x transposed by XLA", "column sums by XLA",
     "transpose_b"),  # AVX2 only
    ((5, 20), tf.float32, True, True, "dy transposed by XLA", "with dy's transpose",
     "transpose_b"),
    ((20, 5), tf.float32, True, False, "narrowing", "BiasAddGrad", "transpose_b"),  # AVX-512
    ((5, 20), tf.float32, True, False, "plain", "BiasAddGrad", "W^T by XLA"),  # AVX-512, 4x
    ((5, 20), tf.float32, False, False, "plain", "BiasAddGrad", "transpose_b"),
    ((12, 5), tf.float32, True, True, "narrowing", "column sums by XLA", "transpose_b"),
    ((5, 5), tf.float32, True, True, "plain", "column sums by XLA", "transpose_b"),
    ((5, 20), tf.float32, False, True, "plain", "BiasAddGrad", "transpose_b"),
    ((5, 20), tf.bfloat16, True, True, "plain", "product", "transpose_b"),
])
def test_dense_gradient_paths(monkeypatch, in_out, dtype, training, avx2_only, kernel_path,
                              bias_path, input_path):
    """float32 training with in > out takes the narrowing kernel gradient (a Transpose of
    dy^T x); on a CPU with AVX2 and no AVX-512 a feed-forward kernel (4x) takes it from its
    wide operand transposed by XLA, and every float32 bias gradient is XLA's column sum (with
    the feed-forward input's, dy's transpose in the same call); on other CPUs the feed-forward
    input's float32 input gradient multiplies by W^T written out by XLA; bfloat16 training
    takes the bias gradient as a product; the rest, and every inference graph, autodiff's
    plain one."""
    monkeypatch.setattr(transformer, "avx2_without_avx512", lambda: avx2_only)
    monkeypatch.setattr(transformer, "cpu_flags", frozenset)  # no AMX: the bias fused
    x = tf.zeros([4, in_out[0]], dtype)
    kernel, bias = tf.zeros(in_out), tf.zeros([in_out[1]])

    def gradients(x):
        with tf.GradientTape() as tape:
            tape.watch([x, kernel, bias])
            out = tf.reduce_sum(tf.cast(transformer._dense(x, kernel, bias, training), tf.float32))
        return tape.gradient(out, [x, kernel, bias])

    operations = tf.function(gradients).get_concrete_function(x).graph.get_operations()
    types = {op.type for op in operations}
    calls = [(_xla_function(op), tuple(op.inputs[0].shape)) for op in operations
             if op.type in _CALLS]
    called = {name for name, _ in calls}
    assert called <= {"_transpose_by_xla", "_column_sums_by_xla",
                      "_transposed_and_column_sums_by_xla"}
    transposed = {shape for name, shape in calls if name == "_transpose_by_xla"}
    taken_kernel = ("dy transposed by XLA" if "_transposed_and_column_sums_by_xla" in called else
                    "x transposed by XLA" if tuple(x.shape) in transposed else
                    "narrowing" if "Transpose" in types else "plain")
    taken_bias = ("BiasAddGrad" if "BiasAddGrad" in types else
                  "with dy's transpose" if "_transposed_and_column_sums_by_xla" in called else
                  "column sums by XLA" if "_column_sums_by_xla" in called else "product")
    taken_input = "W^T by XLA" if in_out in transposed else "transpose_b"
    assert (taken_kernel, taken_bias, taken_input) == (kernel_path, bias_path, input_path)


@pytest.mark.parametrize("dtype, training, amx, apart", [
    (tf.bfloat16, True, True, True),
    (tf.bfloat16, True, False, False),
    (tf.bfloat16, False, True, False),  # inference (exports): core ops only
    (tf.float32, True, True, False),
])
def test_bfloat16_training_dense_adds_the_bias_apart_from_the_product_on_amx(
        monkeypatch, dtype, training, amx, apart):
    """With AMX, oneDNN's bfloat16 product runs at about the float32 rate once grappler fuses
    the bias into it, so bfloat16 training there adds the bias in an XLA kernel after the
    product; the gradients are the same, the outputs within one more bfloat16 rounding."""
    monkeypatch.setattr(transformer, "cpu_flags",
                        lambda: frozenset({"avx512f", "amx_bf16"} if amx else {"avx512f"}))
    x = tf.cast(tf.random.stateless_normal([64, 12], seed=[15, 0]), dtype)
    kernel = tf.random.stateless_normal([12, 20], seed=[15, 1])
    bias = tf.random.stateless_normal([20], seed=[15, 2])
    upstream = tf.cast(tf.random.stateless_normal([64, 20], seed=[15, 3]), dtype)

    def forward_and_gradients(x):
        with tf.GradientTape() as tape:
            tape.watch([x, kernel, bias])
            out = transformer._dense(x, kernel, bias, training)
        return out, tape.gradient(out, [x, kernel, bias], output_gradients=upstream)

    function = tf.function(forward_and_gradients)
    operations = function.get_concrete_function(x).graph.get_operations()
    called = {_xla_function(op) for op in operations if op.type in _CALLS}
    assert ("_bias_add_by_xla" in called) == apart
    out, gradients = function(x)
    monkeypatch.setattr(transformer, "cpu_flags", frozenset)
    fused_out, fused_gradients = tf.function(forward_and_gradients)(x)
    for gradient, fused_gradient in zip(gradients, fused_gradients):
        np.testing.assert_array_equal(gradient.numpy(), fused_gradient.numpy())
    exact = (tf.cast(x, tf.float64) @ tf.cast(tf.cast(kernel, dtype), tf.float64)
             + tf.cast(tf.cast(bias, dtype), tf.float64)).numpy()
    scale = (np.abs(tf.cast(x, tf.float64).numpy()) @ np.abs(kernel.numpy())
             + np.abs(bias.numpy()))
    for result in (out, fused_out):  # the product's rounding and the sum's: 2^-8 each
        assert np.all(np.abs(tf.cast(result, tf.float64).numpy() - exact) <= 2 ** -7 * scale)


_CALLS = ("PartitionedCall", "StatefulPartitionedCall")


def _xla_function(call):
    """The Python name of the tf.function a call op runs: "__inference_<name>_<n>" -> <name>."""
    return call.get_attr("f").name.removeprefix("__inference_").rsplit("_", 1)[0]


@pytest.mark.parametrize("seq", [1, 2, 7, 16])
def test_transformer_inference_runs_the_sequence_halves_apart_with_the_same_outputs(seq):
    """In inference each half of the sequence has its own chain of ops (two attention softmaxes,
    one per half, so TensorFlow's executor can run them at once), and the outputs are those of
    the whole-sequence block that training runs, odd lengths and one-token sequences included."""
    layer = TransformerLayer(64, 4, activation=get_activation("gelu"))
    x = tf.random.stateless_normal([3, seq, 32], seed=[12, seq])
    mask = tf.sequence_mask([seq, max(1, seq - 3), 1], seq, dtype=tf.int32)
    layer(x, padding_mask=mask)

    def whole_sequence(x):
        key, value = layer._keys_and_values(x)
        return layer._block(x, key, value, mask, training=False)

    # 1e-5 as the keras-hub parity test: oneDNN may pick other kernels for fewer rows on other
    # CPUs; a half attending to its own keys only would differ by about 1e-1.
    np.testing.assert_allclose(layer(x, padding_mask=mask, training=False).numpy(),
                               whole_sequence(x).numpy(), rtol=1e-5, atol=1e-5)

    def softmaxes(training):
        graph = tf.function(lambda x: layer(x, padding_mask=mask, training=training)
                            ).get_concrete_function(x).graph
        return sum(op.type == "Softmax" for op in graph.get_operations())

    assert softmaxes(False) == 2 and softmaxes(True) == 1


@pytest.mark.parametrize("training", [False, True])
@pytest.mark.parametrize("query_rows", [1, 3])
def test_transformer_query_rows_are_the_first_rows_of_the_whole_block(training, query_rows):
    """`query_rows=k` computes the first k positions only (their queries attend to every key):
    the first k rows of the whole block's outputs, with the same gradients for a loss on them,
    on the fast path and on keras-hub's (an explicit attention mask). A one-position block is
    what a classifier's last layer runs."""
    layer = TransformerLayer(64, 4, dropout=0.0, attention_dropout=0.0,
                             activation=get_activation("gelu"))
    x = tf.random.stateless_normal([3, 7, 32], seed=[14, query_rows])
    mask = tf.constant([[1] * 7, [1, 1, 1, 1, 0, 0, 0], [1, 1, 0, 0, 0, 0, 0]])
    layer(x, padding_mask=mask)
    attention_mask = tf.cast(mask[:, None, :] * tf.ones([1, 7, 1], tf.int32), tf.bool)
    for masks in ({"padding_mask": mask}, {"attention_mask": attention_mask}):
        results = []
        for rows in (None, query_rows):
            with tf.GradientTape() as tape:
                tape.watch(x)
                out = layer(x, training=training, query_rows=rows, **masks)
                out = out if rows else out[:, :query_rows]
                loss = tf.reduce_sum(out * tf.sin(out))
            results.append([out] + tape.gradient(loss, [x] + layer.trainable_variables))
        assert results[1][0].shape == (3, query_rows, 32)
        for first_rows, whole in zip(*results):
            np.testing.assert_allclose(first_rows.numpy(), whole.numpy(), rtol=1e-5, atol=1e-5)


def test_transformer_query_rows_skip_the_other_positions_work():
    """With `query_rows`, the feed-forward products have query_rows rows per sequence, not seq:
    the block does not compute the positions it does not return."""
    layer = TransformerLayer(64, 4, activation=get_activation("gelu"))
    x = tf.zeros([2, 16, 32])
    mask = tf.ones([2, 16], tf.int32)
    layer(x, padding_mask=mask)
    for training in (False, True):
        graph = tf.function(lambda x: layer(x, padding_mask=mask, training=training,
                                            query_rows=1)).get_concrete_function(x).graph
        rows = {op.outputs[0].shape[0] for op in graph.get_operations()
                if op.type == "MatMul" and op.outputs[0].shape[-1] == 64}
        assert rows == {2}, (training, rows)


def test_transformer_training_scales_the_query_kernel_not_the_queries():
    """In training 1/sqrt(head size) multiplies the query projection's kernel and bias, so no
    Mul runs over the queries [batch, heads, rows, d] forward or backward; inference keeps
    keras's multiply on the queries (at batch 1 they are smaller than the kernel). With d = 16
    the scale is 1/4, a power of 2: the two orders give the same numbers."""
    layer = TransformerLayer(64, 4, dropout=0.0, attention_dropout=0.0)
    x = tf.random.stateless_normal([2, 7, 64], seed=[13, 0])
    mask = tf.constant([[1] * 7, [1, 1, 1, 1, 0, 0, 0]])
    layer(x, padding_mask=mask)

    def query_multiplies(training):
        def loss(x):
            with tf.GradientTape() as tape:
                tape.watch(x)
                y = tf.reduce_sum(layer(x, padding_mask=mask, training=training) ** 2)
            return tape.gradient(y, x)

        graph = tf.function(loss).get_concrete_function(x).graph
        return [op for op in graph.get_operations() if op.type == "Mul"
                and op.outputs[0].shape.rank == 4 and op.outputs[0].shape[-1] == 16]

    assert not query_multiplies(True) and query_multiplies(False)
    flat, query_dense = tf.reshape(x, [-1, 64]), layer._self_attention_layer._query_dense
    np.testing.assert_array_equal(
        transformer._split_heads(flat, query_dense, 2, 7, scale=0.25).numpy(),
        (transformer._split_heads(flat, query_dense, 2, 7) * 0.25).numpy())


def test_transformer_fast_path_under_mixed_bfloat16():
    keras.mixed_precision.set_dtype_policy("mixed_bfloat16")
    try:
        layer = TransformerLayer(64, 4, dropout=0.0, attention_dropout=0.0)
        x = tf.cast(tf.random.stateless_normal([2, 6, 32], seed=[9, 0]), tf.bfloat16)
        mask = tf.constant([[1] * 6, [1, 1, 1, 0, 0, 0]])
        out = layer(x, padding_mask=mask, training=True)
        reference = _keras_hub_call(layer, x, mask, training=True)
    finally:
        keras.mixed_precision.set_dtype_policy("float32")
    assert out.dtype == tf.bfloat16 and layer.kernel_initializer is not None
    np.testing.assert_allclose(tf.cast(out, tf.float32).numpy(),
                               tf.cast(reference, tf.float32).numpy(), atol=0.1)


def test_transformer_hidden_dropout_without_attention_dropout():
    # A Dropout built with rate 0 has no seed generator; this configuration used to fail.
    layer = TransformerLayer(32, 2, dropout=0.3, attention_dropout=0.0)
    x = tf.random.stateless_normal([2, 6, 16], seed=[10, 0])
    trained = layer(x, training=True).numpy()
    assert layer._self_attention_layer.dropout == 0.0
    assert np.abs(trained - layer(x, training=False).numpy()).max() > 1e-3


def test_gelu_with_analytic_gradient_matches_autodiff():
    from electra_tf.models.activations import gelu_with_analytic_gradient

    # bfloat16 inputs are computed in float32 and rounded once: within half a bfloat16 ulp
    # (2^-9 relative) of float32 autodiff on the same inputs.
    for dtype, rtol in ((tf.float32, 1e-6), (tf.bfloat16, 2.0 ** -8)):
        x = tf.cast(tf.linspace(-9.0, 9.0, 2001), dtype)
        x32 = tf.cast(x, tf.float32)
        with tf.GradientTape(persistent=True) as tape:
            tape.watch([x, x32])
            ours, reference = gelu_with_analytic_gradient(x), tf.nn.gelu(x32, approximate=False)
        for a, b in ((ours, reference), (tape.gradient(ours, x), tape.gradient(reference, x32))):
            assert a.dtype == dtype
            np.testing.assert_allclose(tf.cast(a, tf.float32).numpy(), b.numpy(), rtol=rtol,
                                       atol=1e-6)


def test_training_activation_swaps_exact_gelu_in_training_only():
    from electra_tf.models.activations import (gelu_approximate, gelu_with_analytic_gradient,
                                               training_activation)

    gelu = keras.activations.gelu
    assert training_activation(gelu, True) is gelu_with_analytic_gradient
    for activation, training in ((gelu, False), (gelu, None), (gelu_approximate, True),
                                 (keras.activations.relu, True)):
        assert training_activation(activation, training) is activation


# ----------------------------------------------------------------------------------------------
# ElectraEncoder
# ----------------------------------------------------------------------------------------------

def _encoder(embedding_size=16, hidden_size=32, vocab=50, activation="gelu", embeddings=None,
             **kwargs):
    embeddings = embeddings or _embeddings(vocab_size=vocab, embedding_size=embedding_size)
    return ElectraEncoder(embeddings, hidden_size, kwargs.pop("num_layers", 2),
                          kwargs.pop("num_heads", 2), kwargs.pop("intermediate_size", 64),
                          activation=activation, **kwargs)


def test_encoder_projection_iff_sizes_differ():
    with_projection = _encoder(embedding_size=16, hidden_size=32)
    with_projection.build()
    assert with_projection.embeddings_project is not None
    assert tuple(with_projection.embeddings_project.kernel.shape) == (16, 32)
    np.testing.assert_array_equal(with_projection.embeddings_project.bias.numpy(), 0.0)
    no_projection = _encoder(embedding_size=32, hidden_size=32)
    no_projection.build()
    assert no_projection.embeddings_project is None
    assert not any("embeddings_project" in v.path for v in no_projection.weights)
    ids = _ids(2, 6, 50, seed=8)
    mask, seg = tf.ones([2, 6], tf.int32), tf.zeros([2, 6], tf.int32)
    for enc in (with_projection, no_projection):
        assert enc(ids, mask, seg).shape == (2, 6, 32)


def test_encoder_initializers():
    enc = _encoder(embedding_size=64, hidden_size=128, num_layers=2, num_heads=2,
                   intermediate_size=512)
    enc.build()
    kernel = enc.embeddings_project.kernel.numpy()
    bound = math.sqrt(6 / (64 + 128))
    assert np.abs(kernel).max() <= bound + 1e-7
    assert np.abs(kernel).max() > 0.95 * bound  # uniform over the whole range, not 0.02-normal
    assert abs(kernel.std() - bound / math.sqrt(3)) / (bound / math.sqrt(3)) < 0.05
    kernels, biases = [], []
    for layer in enc.transformer_layers:
        for v in layer.weights:
            if v.path.endswith("kernel"):
                kernels.append(v.numpy().ravel())
            elif v.path.endswith("bias") or v.path.endswith("beta"):
                biases.append(v.numpy().ravel())
    assert len(kernels) == 2 * 6  # q, k, v, attention output, intermediate, output per layer
    kernels = np.concatenate(kernels)
    assert np.abs(kernels).max() <= 2 * INIT_STD + 1e-6
    assert abs(kernels.std() - TRUNC_STD) / TRUNC_STD < 0.03
    np.testing.assert_array_equal(np.concatenate(biases), 0.0)


def test_encoder_default_activation_is_exact_gelu():
    enc = _encoder()
    enc.build()
    x = -2.7
    exact = 0.5 * x * (1 + math.erf(x / math.sqrt(2)))
    tanh_form = float(_gelu_tanh(x))
    for layer in enc.transformer_layers:
        value = float(layer._feedforward_intermediate_dense.activation(tf.constant([x]))[0])
        assert abs(value - exact) < 1e-7
        assert abs(value - tanh_form) > 1e-4
        assert layer.layer_norm_epsilon == 1e-12
    xs = np.linspace(-6, 6, 241).astype(np.float32)
    act = enc.transformer_layers[0]._feedforward_intermediate_dense.activation
    np.testing.assert_allclose(act(tf.constant(xs)).numpy(), _gelu_exact(xs), atol=2e-6)


def test_encoder_gelu_approximate_selects_tanh():
    enc = _encoder(activation="gelu_approximate")
    enc.build()
    act = enc.transformer_layers[0]._feedforward_intermediate_dense.activation
    x = -2.7
    value = float(act(tf.constant([x]))[0])
    assert abs(value - float(_gelu_tanh(x))) < 1e-6
    assert abs(value - 0.5 * x * (1 + math.erf(x / math.sqrt(2)))) > 1e-4
    xs = np.linspace(-6, 6, 241).astype(np.float32)
    np.testing.assert_allclose(act(tf.constant(xs)).numpy(), _gelu_tanh(xs), atol=2e-6)


def test_encoders_share_embedding_variables():
    shared = _embeddings(vocab_size=50, embedding_size=16)
    discriminator = _encoder(hidden_size=32, embeddings=shared)
    generator = _encoder(hidden_size=8, num_heads=1, intermediate_size=32, embeddings=shared)
    discriminator.build()
    generator.build()
    for name in ("word_embeddings", "token_type_embeddings"):
        assert (getattr(discriminator.embeddings, name).embeddings
                is getattr(generator.embeddings, name).embeddings)
    assert (discriminator.embeddings.position_embeddings.position_embeddings
            is generator.embeddings.position_embeddings.position_embeddings)
    assert discriminator.embeddings.layer_norm.gamma is generator.embeddings.layer_norm.gamma
    assert discriminator.embeddings.layer_norm.beta is generator.embeddings.layer_norm.beta
    shared_ids = {id(v) for v in discriminator.weights} & {id(v) for v in generator.weights}
    assert shared_ids == {id(v) for v in shared.weights}
    assert len(shared_ids) == 5  # three tables + LayerNorm gamma/beta; projections not shared
    assert discriminator.embeddings_project is not generator.embeddings_project
    # An update through one network is seen by the other.
    ids, mask, seg = _ids(1, 4, 50, seed=9), tf.ones([1, 4], tf.int32), tf.zeros([1, 4], tf.int32)
    before = generator(ids, mask, seg).numpy()
    discriminator.embeddings.word_embeddings.embeddings.assign_add(
        tf.random.stateless_normal([50, 16], seed=[10, 0]))
    assert np.abs(generator(ids, mask, seg).numpy() - before).max() > 1e-3


def test_encoder_padding_ids_do_not_change_real_positions():
    enc = _encoder()
    ids = _ids(2, 8, 50, seed=11).numpy()
    mask = np.array([[1] * 5 + [0] * 3, [1] * 8])
    seg = np.zeros([2, 8], np.int32)
    changed = ids.copy()
    changed[0, 5:] = (ids[0, 5:] + 17) % 50
    a = enc(tf.constant(ids), tf.constant(mask), tf.constant(seg), training=False).numpy()
    b = enc(tf.constant(changed), tf.constant(mask), tf.constant(seg), training=False).numpy()
    np.testing.assert_allclose(a[0, :5], b[0, :5], atol=1e-6)
    np.testing.assert_allclose(a[1], b[1], atol=1e-6)
    assert np.abs(a[0, 5:] - b[0, 5:]).max() > 1e-3  # the padded positions themselves change


@pytest.mark.parametrize("batch", [1, 2, 3])
@pytest.mark.parametrize("seq", [1, 5, 8])
@pytest.mark.parametrize("output_rows", [None, 1])
@pytest.mark.slow
def test_encoder_inference_outputs_are_the_blocks_called_one_by_one(batch, seq, output_rows):
    """Inference runs as two chains (the batch's halves, or for one sequence the sequence's):
    its outputs are those of the blocks called one by one, with or without a last block for
    the first position alone, for odd batches and lengths and padded sequences."""
    enc = _encoder(num_layers=3)
    ids = _ids(batch, seq, 50, seed=13)
    mask = tf.sequence_mask([seq, max(1, seq - 2), 1][:batch], seq, dtype=tf.int32)
    segments = tf.zeros_like(ids)
    enc(ids, mask, segments)

    def block_by_block(ids):
        x = enc.embeddings_project(enc.embeddings(ids, segments, training=False))
        for i, layer in enumerate(enc.transformer_layers):
            last = output_rows and i == len(enc.transformer_layers) - 1
            x = layer(x, padding_mask=mask, training=False,
                      **({"query_rows": output_rows} if last else {}))
        return x

    expected = block_by_block(ids).numpy()
    outputs = enc(ids, mask, segments, training=False, output_rows=output_rows)
    assert outputs.shape == (batch, output_rows or seq, 32)
    np.testing.assert_allclose(outputs.numpy(), expected, rtol=1e-6, atol=1e-6)
    traced = tf.function(lambda ids, mask: enc(ids, mask, tf.zeros_like(ids), training=False,
                                               output_rows=output_rows))
    unknown = tf.TensorSpec([None, None], tf.int32)
    np.testing.assert_allclose(traced.get_concrete_function(unknown, unknown)(ids, mask).numpy(),
                               expected, rtol=1e-6, atol=1e-6)


def _float_concatenations_and_softmaxes(function, *specs):
    graph = tf.function(function).get_concrete_function(*specs).graph
    operations = graph.get_operations()
    return (sorted(op.outputs[0].shape.rank for op in operations
                   if op.type == "ConcatV2" and op.outputs[0].dtype == tf.float32),
            sum(op.type == "Softmax" for op in operations))


@pytest.mark.parametrize("output_rows", [None, 1])
@pytest.mark.slow
def test_encoder_inference_chains_are_the_batch_halves_or_the_sequence_halves(output_rows):
    """A batch of several sequences runs as its two halves, each through every block on its own
    (one softmax per block and half, and the only concatenation of activations the final join);
    a single sequence as the sequence's halves, which hand themselves on from block to block
    (`TransformerLayer.call_on_halves`: each block joins the halves' keys and values as [batch,
    heads, seq, d], and [batch, rows, H] activations are joined once). The call picks one by the
    batch size at run time (one conditional in the graph)."""
    enc = _encoder(num_layers=3)
    enc.build()
    unknown_ids = tf.TensorSpec([None, None], tf.int32)
    activations = tf.TensorSpec([None, None, 32], tf.float32)
    layers, last = enc.transformer_layers[:2], enc.transformer_layers[2]
    if not output_rows:
        layers, last = enc.transformer_layers, None
    halved_blocks = len(layers)
    batch_halves = _float_concatenations_and_softmaxes(
        lambda x, mask: enc._on_batch_halves(x, mask, layers, last, output_rows),
        activations, unknown_ids)
    sequence_halves = _float_concatenations_and_softmaxes(
        lambda x, mask: enc._on_sequence_halves(x, mask, layers, last, output_rows),
        activations, unknown_ids)
    assert batch_halves == ([3], 2 * len(enc.transformer_layers))
    assert sequence_halves == ([3] + [4] * 2 * halved_blocks,
                               2 * halved_blocks + (last is not None))
    graph = tf.function(lambda ids, mask: enc(ids, mask, tf.zeros_like(ids), training=False,
                                              output_rows=output_rows)
                        ).get_concrete_function(unknown_ids, unknown_ids).graph
    conditionals = [op for op in graph.get_operations() if op.type in ("If", "StatelessIf")]
    assert len(conditionals) == 1
    # batch > 1 takes the batch halves (one softmax per block and half), else the sequence's
    functions = {function.signature.name: function
                 for function in graph.as_graph_def().library.function}

    def branch_softmaxes(attribute):
        branch = functions[conditionals[0].get_attr(attribute).name]
        return sum(node.op == "Softmax" for node in branch.node_def)

    assert (branch_softmaxes("then_branch"), branch_softmaxes("else_branch")) == (
        batch_halves[1], sequence_halves[1])
    predicate = conditionals[0].inputs[0].op
    assert predicate.type == "Greater" and tf.get_static_value(predicate.inputs[1]) == 1


def test_encoder_config_round_trip():
    enc = _encoder(hidden_dropout=0.2, attention_dropout=0.3, activation="gelu_approximate")
    config = enc.get_config()
    clone = ElectraEncoder.from_config(config)
    assert isinstance(clone.embeddings, ElectraEmbeddings)
    assert clone.embeddings.embedding_size == 16
    assert clone.get_config() == config
    clone.build()
    assert clone.transformer_layers[0]._self_attention_layer.dropout == pytest.approx(0.3)
    assert clone.transformer_layers[0]._feedforward_dropout.rate == pytest.approx(0.2)


# ----------------------------------------------------------------------------------------------
# DiscriminatorHead
# ----------------------------------------------------------------------------------------------

def test_discriminator_head_shape_dtype_and_values():
    head = DiscriminatorHead(16)
    x = tf.random.stateless_normal([3, 7, 16], seed=[12, 0])
    logits = head(x)
    assert logits.shape == (3, 7)
    assert logits.dtype == tf.float32
    assert tuple(head.dense_prediction.kernel.shape) == (16, 1)
    assert tuple(head.dense.kernel.shape) == (16, 16)
    hidden = _gelu_exact(x.numpy() @ head.dense.kernel.numpy() + head.dense.bias.numpy())
    expected = (hidden @ head.dense_prediction.kernel.numpy()
                + head.dense_prediction.bias.numpy())[..., 0]
    np.testing.assert_allclose(logits.numpy(), expected, atol=1e-5)
    # dense: truncated normal 0.02; dense_prediction: glorot uniform bound sqrt(6 / (16 + 1)).
    assert np.abs(head.dense.kernel.numpy()).max() <= 2 * INIT_STD + 1e-6
    assert np.abs(head.dense_prediction.kernel.numpy()).max() <= math.sqrt(6 / 17) + 1e-7
    assert np.abs(head.dense_prediction.kernel.numpy()).max() > 2 * INIT_STD


@pytest.mark.parametrize("dtype, rtol", [("float32", 1e-5), ("mixed_bfloat16", 5e-2)])
def test_discriminator_head_training_gelu_kernel_matches_inference(dtype, rtol):
    """In training the head's GELU is `gelu_with_analytic_gradient` (XLA kernels, no Erfc);
    its logits and gradients are the plain Dense GELU's, which inference keeps (in bfloat16
    within a few roundings: the plain path rounds after each of erfc's ops)."""
    head = DiscriminatorHead(16, dtype=dtype)
    x = tf.random.stateless_normal([3, 7, 16], seed=[15, 0])
    head(x)
    head.set_weights([0.3 * tf.random.stateless_normal(w.shape, seed=[16, i]).numpy()
                      for i, w in enumerate(head.get_weights())])  # pre-activations ~ N(0, 1.5)
    results = []
    for training in (True, False):
        with tf.GradientTape() as tape:
            tape.watch(x)
            logits = head(x, training=training)
            loss = tf.reduce_sum(logits * tf.sin(logits))
        # In bfloat16 the prediction layer's own gradients (the same ops on both paths) are
        # left out: their sums over tokens cancel, so rounding of the logits shows as 10%.
        variables = head.trainable_variables if dtype == "float32" else (
            head.dense.trainable_variables)
        gradients = tape.gradient(loss, [x] + variables)
        results.append([logits] + [tf.cast(g, tf.float32) for g in gradients])
    for fast, plain in zip(*results):
        scale = np.abs(plain.numpy()).max()
        np.testing.assert_allclose(fast.numpy(), plain.numpy(), rtol=rtol, atol=rtol * scale)

    def op_types(training):
        graph = tf.function(lambda x: head(x, training=training)).get_concrete_function(x).graph
        return {op.type for op in graph.get_operations()}

    assert "IdentityN" in op_types(True) and "Erfc" not in op_types(True)
    assert "Erfc" in op_types(False) and "IdentityN" not in op_types(False)


def test_discriminator_head_float32_under_mixed_precision():
    head = DiscriminatorHead(16, dtype="mixed_bfloat16")
    logits = head(tf.random.stateless_normal([2, 5, 16], seed=[13, 0]))
    assert logits.shape == (2, 5)
    assert logits.dtype == tf.float32


def test_discriminator_head_config_round_trip():
    head = DiscriminatorHead(12, activation="gelu_approximate", initializer_range=0.05, name="rtd")
    config = head.get_config()
    assert config["hidden_size"] == 12
    assert config["activation"] == "gelu_approximate"
    assert config["initializer_range"] == 0.05
    clone = DiscriminatorHead.from_config(config)
    assert clone.get_config() == config
    again = keras.layers.deserialize(keras.layers.serialize(head))
    assert type(again) is DiscriminatorHead and again.get_config() == config
    x = tf.random.stateless_normal([2, 4, 12], seed=[14, 0])
    expected = head(x)
    clone.build()
    clone.set_weights(head.get_weights())
    np.testing.assert_allclose(clone(x).numpy(), expected.numpy(), atol=1e-6)


def test_reinitialize_top_layers_gives_the_top_blocks_fresh_weights_and_keeps_the_rest():
    from electra_tf.config import ModelConfig
    from electra_tf.models.encoder import make_embeddings

    keras.utils.set_random_seed(0)
    config = ModelConfig(vocab_size=50, embedding_size=16, hidden_size=32, num_layers=3,
                         num_heads=2, intermediate_size=64, max_position_embeddings=32,
                         initializer_range=0.5)
    encoder = ElectraEncoder.from_model_config(config, make_embeddings(config))
    encoder.build()
    for weight in encoder.weights:  # "pretrained": every weight away from any initial value
        weight.assign(weight + 3.0)
    before = {weight.path: weight.numpy() for weight in encoder.weights}
    encoder.reinitialize_top_layers(1)
    fresh = {w.path for w in encoder.weights if "/layer_2/" in w.path}
    assert len(fresh) == len(encoder.transformer_layers[2].weights) > 0
    for weight in encoder.weights:
        value = weight.numpy()
        if weight.path not in fresh:
            np.testing.assert_array_equal(value, before[weight.path], err_msg=weight.path)
        elif weight.path.endswith("gamma"):
            np.testing.assert_array_equal(value, 1.0, err_msg=weight.path)
        elif weight.path.endswith(("beta", "bias")):
            np.testing.assert_array_equal(value, 0.0, err_msg=weight.path)
        else:  # truncated normal, stddev 0.5 before truncation at 2 sigma (0.44 after)
            assert abs(value.mean()) < 0.1 and 0.35 < value.std() < 0.5, weight.path
    with pytest.raises(ValueError, match="top 4 blocks of an encoder of 3"):
        encoder.reinitialize_top_layers(4)
