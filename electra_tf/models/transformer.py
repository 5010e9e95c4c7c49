"""The post-LN BERT block: keras-hub's TransformerEncoder with a separate attention dropout and a
faster forward pass over the same variables."""

import keras
import keras_hub
import tensorflow as tf

from electra_tf.models.activations import training_activation
from electra_tf.models.attention_probabilities import attention_probabilities
from electra_tf.models.residual_norm import residual_layer_norm
from electra_tf.cpu_features import cpu_flags
from electra_tf.onednn import avx2_without_avx512


@keras.saving.register_keras_serializable(package="electra_tf")
class TransformerLayer(keras_hub.layers.TransformerEncoder):
    """keras-hub's TransformerEncoder (post-LN), with its own attention-probability dropout rate.

    Call: `inputs` [batch, seq, H], `padding_mask` [batch, seq] (1 = real token) -> [batch, seq, H];
    with `query_rows=k`, the outputs of the first k positions only, [batch, k, H]: their queries
    attend to every position, and the other positions' queries, attention outputs and
    feed-forward layers are not computed (a classifier's last block needs [CLS] alone).

    The variables, their names and the sublayers are keras-hub's (so checkpoints and weight
    conversions see the same structure), but the padding-mask-only call computes the block as
    2-D matmuls over [batch * seq, H] with a plain bias add, and adds the padding bias to the
    attention scores. keras's MultiHeadAttention runs each projection as a broadcast einsum
    whose kernel gradient is a batched matmul followed by a sum over the batch, masks with two
    `where`s, and Dense on 3-D inputs reshapes around every matmul; the 2-D form lets oneDNN
    fuse bias and GELU into the matmul when serving (docs/performance.md). In inference the two
    halves of the sequence go through separate ops, which TensorFlow runs in parallel, and an
    encoder hands them from block to block (`call_on_halves`). The maths
    is keras-hub's (tested against its call, with gradients); an explicit `attention_mask` or
    `return_attention_scores` takes keras-hub's path.
    """

    def __init__(self, intermediate_dim, num_heads, dropout=0.1, attention_dropout=0.1,
                 activation="gelu", layer_norm_epsilon=1e-12, kernel_initializer=None, **kwargs):
        # ELECTRA's defaults, not keras-hub's (ReLU, epsilon 1e-5, Glorot).
        kernel_initializer = kernel_initializer or keras.initializers.TruncatedNormal(stddev=0.02)
        super().__init__(intermediate_dim, num_heads, dropout=dropout, activation=activation,
                         layer_norm_epsilon=layer_norm_epsilon,
                         kernel_initializer=kernel_initializer, **kwargs)
        self.attention_dropout = attention_dropout
        self.transposed_intermediate_kernel = None  # transpose_intermediate_kernel_for_serving

    def build(self, inputs_shape):
        # keras-hub uses one `dropout` rate for both the attention probabilities and the residual
        # branches; ELECTRA configures them separately. Build all three with a positive rate
        # when either is (a Dropout made with rate 0 has no seed generator and fails once given
        # a positive one), then set each to its own rate.
        hidden_dropout, self.dropout = self.dropout, self.attention_dropout or self.dropout
        try:
            super().build(inputs_shape)
        finally:
            self.dropout = hidden_dropout
        attention = self._self_attention_layer
        attention._dropout = attention._dropout_layer.rate = self.attention_dropout
        self._self_attention_dropout.rate = hidden_dropout
        self._feedforward_dropout.rate = hidden_dropout

    def call(self, inputs, padding_mask=None, attention_mask=None, training=None,
             return_attention_scores=False, query_rows=None):
        if attention_mask is not None or return_attention_scores or self.normalize_first:
            if query_rows is not None and return_attention_scores:
                raise ValueError("query_rows does not combine with return_attention_scores")
            outputs = super().call(inputs, padding_mask=padding_mask,
                                   attention_mask=attention_mask, training=training,
                                   return_attention_scores=return_attention_scores)
            return outputs if query_rows is None else outputs[:, :query_rows]
        if query_rows is not None:
            key, value = self._keys_and_values(inputs, training)
            return self._block(inputs[:, :query_rows], key, value, padding_mask, training)
        if training:
            key, value = self._keys_and_values(inputs, training)
            return self._block(inputs, key, value, padding_mask, training)
        return tf.concat(self.call_on_halves(sequence_halves(inputs), padding_mask), axis=1)

    def call_on_halves(self, halves, padding_mask=None):
        """Inference on a sequence given as its two halves, `sequence_halves(inputs)`: [batch,
        half, H] and [batch, seq - half, H] -> the block's outputs for them, the same pair of
        shapes. An encoder passes the pair from block to block (no concatenation and slicing
        between blocks); `call` in inference joins it. A 1-tuple, the whole sequence, gives the
        block's outputs as a 1-tuple (an encoder's chain over one half of a batch).

        Each half runs through its own ops (each half's queries attend to all keys; the outputs
        are the whole block's), and the executor runs the two chains at once on its inter-op
        threads. A single request's matmuls are small enough that TensorFlow's oneDNN kernels
        run each on one thread (their operands fit in the L2 cache): with one intra-op thread
        (TF Serving's --tensorflow_intra_op_parallelism=1) the two chains keep two cores busy
        (docs/performance.md, "Single requests")."""
        keys_and_values = [self._keys_and_values(rows) for rows in halves]
        key, value = (tf.concat(parts, axis=2) for parts in zip(*keys_and_values))
        return tuple(self._block(rows, key, value, padding_mask, training=False)
                     for rows in halves)

    def _keys_and_values(self, inputs, training=False):
        """`inputs` [batch, rows, H] -> key and value heads, each [batch, heads, rows, d]."""
        shape = tf.shape(inputs)
        x = tf.reshape(inputs, [-1, inputs.shape[-1]])  # [batch * rows, H]
        attention = self._self_attention_layer
        with tf.name_scope("attention"):  # scopes name the ops in a profile
            return [_split_heads(x, projection, shape[0], shape[1], training=training)
                    for projection in (attention._key_dense, attention._value_dense)]

    def _block(self, inputs, key, value, padding_mask, training):
        """The block for the positions `inputs` [batch, rows, H] of a sequence whose key and
        value heads are `key`, `value` [batch, heads, seq, d] -> [batch, rows, H]."""
        shape = tf.shape(inputs)
        hidden = inputs.shape[-1]
        x = tf.reshape(inputs, [-1, hidden])  # [batch * rows, H]
        with tf.name_scope("attention"):
            attended = self._attention(x, shape[0], shape[1], key, value, padding_mask,
                                       training)
        x = residual_layer_norm(x, attended, self._self_attention_dropout,
                                self._self_attention_layer_norm, training)
        intermediate_dense = self._feedforward_intermediate_dense
        output_dense = self._feedforward_output_dense
        activation = training_activation(intermediate_dense.activation, training)
        if training or self.transposed_intermediate_kernel is None:
            intermediate = _dense(x, intermediate_dense.kernel, intermediate_dense.bias, training)
        else:
            intermediate = _dense_transposed(x, self.transposed_intermediate_kernel,
                                             intermediate_dense.bias)
        with tf.name_scope(activation.__name__):
            intermediate = activation(intermediate)
        output = _dense(intermediate, output_dense.kernel, output_dense.bias, training)
        x = residual_layer_norm(x, output, self._feedforward_dropout,
                                self._feedforward_layer_norm, training)
        return tf.reshape(x, shape)

    def _attention(self, x, batch, rows, key, value, padding_mask, training):
        """Self-attention of the queries of `x` [batch * rows, H] over `key`, `value` [batch,
        heads, seq, d] -> [batch * rows, H], keras's maths: queries scaled by 1/sqrt(head
        size), -1e9 on the scores of padding keys."""
        attention = self._self_attention_layer
        heads, head_size = attention.num_heads, attention.key_dim
        hidden = heads * head_size
        scale = attention._inverse_sqrt_key_dim
        if training:  # the scale on the projection's kernel and bias, [H, H] + [H], not on the
            # queries [batch, heads, rows, d] each way; exact when it is a power of 2 (d = 64)
            query = _split_heads(x, attention._query_dense, batch, rows, scale, training)
        else:
            query = _split_heads(x, attention._query_dense, batch, rows)
            query *= tf.cast(scale, query.dtype)
        scores = tf.matmul(query, key, transpose_b=True)  # [batch, heads, rows, seq]
        if padding_mask is not None:  # an added bias, not keras's tf.where: no gradient op
            scores += _padding_bias(padding_mask, scores.dtype)
        probabilities = attention_probabilities(scores, attention._dropout_layer, training)
        context = tf.matmul(probabilities, value)  # [batch, heads, rows, d]
        context = tf.reshape(tf.transpose(context, [0, 2, 1, 3]), [-1, hidden])
        output = attention._output_dense
        return _dense(context, tf.reshape(output.kernel, [hidden, -1]), output.bias, training)

    def transpose_intermediate_kernel_for_serving(self):
        """Gives inference its own copy of the feed-forward input kernel, stored transposed
        ([intermediate, H], a non-trainable tf.Variable) and multiplied as x @ K^T. For a model
        that is exported, not trained further: training neither uses nor updates the copy.

        At a single request's 64-128 rows, TensorFlow's oneDNN kernels on an AVX2-only CPU (AMD
        Zen 3) ran [rows, 256] @ [256, 1024] at 37-43 GFLOP/s with the kernel as stored and
        60-70 with it transposed (other products gain nothing); the exported classifier served
        single requests 1.13-1.14x as fast (docs/serving.md)."""
        kernel = self._feedforward_intermediate_dense.kernel
        self.transposed_intermediate_kernel = tf.Variable(
            tf.transpose(kernel), trainable=False, name="transposed_intermediate_kernel")

    def get_config(self):
        config = super().get_config()
        config["attention_dropout"] = self.attention_dropout
        return config


def sequence_halves(inputs):
    """[batch, seq, H] -> its first seq // 2 positions [batch, half, H] and the rest."""
    half = tf.shape(inputs)[1] // 2
    return inputs[:, :half], inputs[:, half:]


def _dense(x, kernel, bias, training=False):
    """x [n, in] @ kernel [in, out] + bias [out], cast to x's dtype (mixed precision). In
    training, the kernel's and the bias's gradients may take other forms (`_training_dense`);
    inference and exports keep the plain graph, which oneDNN fuses when serving."""
    kernel, bias = tf.cast(kernel, x.dtype), tf.cast(bias, x.dtype)
    if training and (_narrowing(x, kernel) or x.dtype == tf.bfloat16
                     or _float32_on_avx2_only(x) or _widening_with_kernel_transposed(x, kernel)):
        return _training_dense(x, kernel, bias)
    return tf.nn.bias_add(tf.matmul(x, kernel), bias)


def _dense_transposed(x, transposed_kernel, bias):
    """x [n, in] @ transposed_kernel [out, in]^T + bias [out], in x's dtype (inference)."""
    transposed_kernel, bias = tf.cast(transposed_kernel, x.dtype), tf.cast(bias, x.dtype)
    return tf.nn.bias_add(tf.matmul(x, transposed_kernel, transpose_b=True), bias)


@tf.custom_gradient
def _training_dense(x, kernel, bias):
    """`_dense`'s forward pass, with autodiff's gradients except for these measured forms:

    - float32 with in > out (the feed-forward output, [n, 1024] -> [n, 256] in ELECTRA-Small):
      the kernel's gradient x^T @ dy [in, out] as (dy^T @ x)^T. oneDNN's float32 product with
      the [in, out] output took 11.6-12.4 ms on [4096, 1024] x [4096, 256], the [out, in] one
      and its transpose 8.7-9.0 ms; in bfloat16 the plain product is the faster.
    - float32 feed-forward kernels (one side at least 4x the other) on CPUs with AVX2 and no
      AVX-512 (`_wide_operand_transposed`): the kernel's gradient from the wide operand
      (the [n, 1024] one of x and dy) transposed first by an XLA kernel, as wide^T [1024, n]
      @ narrow [n, 256], transposed back for the feed-forward input. oneDNN's AVX2 kernels
      run x^T @ dy on [4096, 256] x [4096, 1024] at 68 GFLOP/s on two threads (36 on one),
      with the wide operand's transpose written out at 107-112 (62-65); grappler folds a
      plain Transpose back into the product's transpose_a, hence the XLA kernel. With the
      transpose (8-9 ms) the feed-forward output's gradient took 24 instead of 39 ms, the
      input's 33 instead of 36, and ELECTRA-Small's pretraining and classification steps
      ran 1.04-1.06x as fast. Timings on a two-core AMD EPYC (Zen 3), 2026-11-28.
    - float32 with out >= 4x in (the feed-forward input, [n, 256] -> [n, 1024]) on other
      CPUs (`_widening_with_kernel_transposed`): the input's gradient dy @ W^T from W^T
      [out, in] written out by an XLA kernel (a plain Transpose would be folded back into the
      product's transpose_b by grappler). On [4096, 1024] x [256, 1024]^T oneDNN took 14.1 ms
      with transpose_b, 10.7 with W^T written out (11.2 with the transpose); ELECTRA-Small's
      classification and pretraining steps ran 1.02-1.06x as fast (two-core AMD EPYC, Zen 4,
      2026-11-28; docs/performance.md).
    - float32 on AVX2-only CPUs: the bias's gradient, the column sums of dy, from an XLA kernel
      (for the feed-forward input, the same call that writes dy's transpose): TensorFlow's
      `BiasAddGrad` took 0.95 ms on [4096, 256] and 2.45 on [4096, 1024], XLA's sum 0.53 and
      1.23 (two-core Zen 3, 2026-11-28).
    - bfloat16: the bias's gradient, the column sums of dy [n, out], as the product
      ones [1, n] @ dy, which oneDNN accumulates in float32. Autodiff's `BiasAddGrad`
      accumulates bfloat16 in bfloat16: on [4096, 256] gradients of mean 2e-4 and spread 1e-3
      its sums were off by 21% (median), the product's by 0.12%, one rounding. It is also the
      faster (0.79 against 1.25 ms on [4096, 1024], 0.36 against 0.62 on [4096, 256]).
      float32 keeps `BiasAddGrad`, exact enough and as fast.

    Other timings on the two-core Intel Xeon with AMX, 2026-11-27."""

    narrowing = _narrowing(x, kernel)
    avx2_only = _float32_on_avx2_only(x)
    wide_operand_transposed = _wide_operand_transposed(x, kernel)
    kernel_transposed = _widening_with_kernel_transposed(x, kernel)

    def gradient(upstream):
        if x.dtype == tf.bfloat16:
            ones = tf.ones([1, tf.shape(upstream)[0]], upstream.dtype)
            bias_gradient = tf.reshape(tf.matmul(ones, upstream), [-1])
        elif wide_operand_transposed and not narrowing:
            upstream_transposed, bias_gradient = _transposed_and_column_sums_by_xla(upstream)
        elif avx2_only:
            bias_gradient = _column_sums_by_xla(upstream)
        else:
            bias_gradient = tf.raw_ops.BiasAddGrad(out_backprop=upstream)
        if wide_operand_transposed and narrowing:
            kernel_gradient = tf.matmul(_transpose_by_xla(x), upstream)
        elif wide_operand_transposed:
            kernel_gradient = tf.transpose(tf.matmul(upstream_transposed, x))
        elif narrowing:
            kernel_gradient = tf.transpose(tf.matmul(upstream, x, transpose_a=True))
        else:
            kernel_gradient = tf.matmul(x, upstream, transpose_a=True)
        if kernel_transposed:
            input_gradient = tf.matmul(upstream, _transpose_by_xla(kernel))
        else:
            input_gradient = tf.matmul(upstream, kernel, transpose_b=True)
        return input_gradient, kernel_gradient, bias_gradient

    product = tf.matmul(x, kernel)
    if _bfloat16_on_amx(x):
        return _bias_add_by_xla(product, bias), gradient
    return tf.nn.bias_add(product, bias), gradient


def _bfloat16_on_amx(x):
    """Whether `_training_dense` adds the bias in an XLA kernel after the product: bfloat16 on
    a CPU with AMX-BF16 and no GPU. There oneDNN's bfloat16 product with the bias fused into
    it (grappler's remapper fuses a bias_add or `+ b` after a MatMul) ran [4096, 256] @ [256,
    1024] at 249 GFLOP/s, the product alone at 951 (docs/performance.md#bf16-on-a-cpu-with-amx)."""
    return (x.dtype == tf.bfloat16 and "amx_bf16" in cpu_flags()
            and not tf.config.list_physical_devices("GPU"))


@tf.function(jit_compile=True, autograph=False)
def _bias_add_by_xla(product, bias):
    """product [n, out] + bias [out], as an XLA kernel that grappler cannot fuse into the
    product."""
    return tf.nn.bias_add(product, bias)


def _float32_on_cpu(x):
    """Whether `x` is float32 and no GPU is visible, so that its products and sums run on
    TensorFlow's CPU (oneDNN and Eigen) kernels, the ones `_training_dense`'s forms were
    measured with."""
    return x.dtype == tf.float32 and not tf.config.list_physical_devices("GPU")


def _float32_on_avx2_only(x):
    """Whether `_training_dense` takes the AVX2 forms: `_float32_on_cpu` on a CPU with AVX2 and
    no AVX-512."""
    return _float32_on_cpu(x) and avx2_without_avx512()


def _wide_operand_transposed(x, kernel):
    """Whether `_training_dense` takes the kernel gradient from the wide operand transposed:
    `_float32_on_avx2_only` and a kernel one of whose sides is at least 4x the other (a
    feed-forward one)."""
    return max(kernel.shape) >= 4 * min(kernel.shape) and _float32_on_avx2_only(x)


def _widening_with_kernel_transposed(x, kernel):
    """Whether `_training_dense` takes the input's gradient as dy @ (W^T written out): float32,
    a kernel [in, out] with out >= 4x in (a feed-forward input), on a CPU with AVX-512 (not
    `avx2_without_avx512`, whose oneDNN kernels were not measured with it) and no GPU."""
    return (kernel.shape[1] >= 4 * kernel.shape[0] and _float32_on_cpu(x)
            and not avx2_without_avx512())


@tf.function(jit_compile=True, autograph=False)
def _transpose_by_xla(x):
    """x [a, b] -> [b, a], written out: a TensorFlow Transpose feeding a MatMul becomes the
    product's transpose_a or transpose_b under grappler."""
    return tf.transpose(x)


@tf.function(jit_compile=True, autograph=False)
def _column_sums_by_xla(x):
    """x [n, m] -> its column sums [m] (a bias gradient)."""
    return tf.reduce_sum(x, 0)


@tf.function(jit_compile=True, autograph=False)
def _transposed_and_column_sums_by_xla(x):
    """x [n, m] -> (x^T [m, n] written out, x's column sums [m]) from one XLA kernel call."""
    return tf.transpose(x), tf.reduce_sum(x, 0)


def _narrowing(x, kernel):
    """Whether `_training_dense` takes the kernel gradient as (dy^T @ x)^T: float32, in > out."""
    return x.dtype == tf.float32 and kernel.shape[0] > kernel.shape[1]


def _split_heads(x, projection, batch, seq, scale=None, training=False):
    """x [batch * seq, H] through a query/key/value EinsumDense, its kernel and bias times
    `scale` if given -> [batch, heads, seq, d]."""
    heads, head_size = projection.kernel.shape[1:]
    hidden = heads * head_size
    kernel = tf.reshape(projection.kernel, [-1, hidden])
    bias = tf.reshape(projection.bias, [hidden])
    if scale is not None:
        kernel, bias = kernel * scale, bias * scale
    y = _dense(x, kernel, bias, training)
    return tf.transpose(tf.reshape(y, [batch, seq, heads, head_size]), [0, 2, 1, 3])


def _padding_bias(padding_mask, dtype):
    """[batch, seq] (1 = real token) -> [batch, 1, 1, seq]: 0 for real keys, -1e9 for padding
    (-3e4 in float16), keras's value. Added to the scores, it zeroes padding in the softmax;
    unlike keras's second `where`, a row with no real key at all gets uniform weights, as in the
    original (such rows are only ever all-padding examples, which every loss ignores)."""
    large = 3e4 if dtype == tf.float16 else 1e9
    mask = tf.cast(padding_mask, dtype)[:, None, None, :]
    return (mask + tf.cast(-1.0, dtype)) * tf.cast(large, dtype)  # AddV2, not Sub: an allowed op
