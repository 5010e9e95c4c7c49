"""The forms in which an encoder layer's products are timed: x @ W, the kernel stored
transposed, and training's two gradients as autodiff writes them or with a transpose written
out, each as TensorFlow and torch compute it (`small_matmuls`, `onednn_primitives`)."""


def layer_products(hidden, intermediate, rows, chain):
    """An encoder layer's three product shapes with random float32 inputs: yields (what, k,
    n, xs, dys, w) for x [rows, k] @ w [k, n], `xs` `chain` distinct [rows, k] inputs and
    `dys` `chain` distinct [rows, n] upstream gradients (distinct, so that grappler merges no
    two products), `w` scaled by 1/sqrt(k). The same seed every call."""
    # lazy: imported once the flags are parsed, so --help starts no TensorFlow
    import numpy as np

    rng = np.random.default_rng(0)
    for what, k, n in (("query/key/value or output projection", hidden, hidden),
                       ("feed-forward in", hidden, intermediate),
                       ("feed-forward out", intermediate, hidden)):
        xs = [rng.normal(size=(rows, k)).astype(np.float32) for _ in range(chain)]
        dys = [rng.normal(size=(rows, n)).astype(np.float32) for _ in range(chain)]
        w = (rng.normal(size=(k, n)) / np.sqrt(k)).astype(np.float32)
        yield what, k, n, xs, dys, w


def products_of(what, m, k, n, w, torch, dtype="float32", transposed_kernels=False,
                gradients=False, written_transposes=False):
    """The timed forms of x [m, k] @ w [k, n] (float32 numpy `w`): a list of (name, [m, k, n]
    of the product, kernel, tf_product, torch_product), the products called as
    f(x, dy, kernel) with dy [m, n]. Forms named "input gradient" compute dy @ w^T [m, k],
    "kernel gradient" x^T @ dy [k, n], the others x @ w [m, n]. `torch` may be None (then
    torch_product is never called); torch's products take operands of `dtype`."""
    # lazy: imported once the flags are parsed, so --help starts no TensorFlow
    import numpy as np
    import tensorflow as tf

    bias = torch.zeros(n, dtype=getattr(torch, dtype)) if torch is not None else None
    products = [(what, (m, k, n), w, lambda x, dy, w: tf.matmul(x, w),
                 lambda x, dy, w: torch.addmm(bias, x, w))]
    if transposed_kernels:
        products.append((f"{what}, kernel stored transposed", (m, k, n),
                         np.ascontiguousarray(w.T),
                         lambda x, dy, w: tf.matmul(x, w, transpose_b=True),
                         lambda x, dy, w: torch.addmm(bias, x, w.t())))
    if gradients:
        products += _gradients(what, m, k, n, w, torch, written_transposes)
    return products


def _gradients(what, m, k, n, w, torch, written_transposes):
    """The gradient products of x [m, k] @ w [k, n] as `products_of` entries: autodiff's
    forms, and with `written_transposes` the forms with a transpose written out by an XLA
    kernel."""
    # lazy: imported once the flags are parsed, so --help starts no TensorFlow
    import tensorflow as tf
    from electra_tf.models.transformer import _transpose_by_xla

    gradients = [
        (f"{what}, input gradient dy @ W^T", (m, n, k), w,
         lambda x, dy, w: tf.matmul(dy, w, transpose_b=True),
         lambda x, dy, w: torch.matmul(dy, w.t())),
        (f"{what}, kernel gradient x^T @ dy", (k, m, n), w,
         lambda x, dy, w: tf.matmul(x, dy, transpose_a=True),
         lambda x, dy, w: torch.matmul(x.t(), dy))]
    if written_transposes:
        gradients += [
            (f"{what}, input gradient dy @ (W^T written)", (m, n, k), w,
             lambda x, dy, w: tf.matmul(dy, _transpose_by_xla(w)),
             lambda x, dy, w: torch.matmul(dy, w.t().contiguous())),
            (f"{what}, kernel gradient (x^T written) @ dy", (k, m, n), w,
             lambda x, dy, w: tf.matmul(_transpose_by_xla(x), dy),
             lambda x, dy, w: torch.matmul(x.t().contiguous(), dy)),
            (f"{what}, kernel gradient ((dy^T written) @ x)^T", (k, m, n), w,
             lambda x, dy, w: tf.transpose(tf.matmul(_transpose_by_xla(dy), x)),
             lambda x, dy, w: torch.matmul(dy.t().contiguous(), x).t().contiguous())]
    return gradients


def tf_chain(xs, dys, kernel, tf_product, dtype):
    """A tf.function computing `tf_product(x, dy, kernel)` for each of the float32 numpy
    inputs `xs`, `dys` (distinct, so that grappler merges no two products), in `dtype`, the
    kernel a variable as in a model."""
    # lazy: imported once the flags are parsed, so --help starts no TensorFlow
    import tensorflow as tf

    xs = [tf.constant(x, dtype=dtype) for x in xs]
    dys = [tf.constant(dy, dtype=dtype) for dy in dys]
    kernel = tf.Variable(tf.constant(kernel, dtype=dtype))
    return tf.function(lambda: [tf_product(x, dy, kernel) for x, dy in zip(xs, dys)])


def torch_chain(torch, xs, dys, kernel, torch_product, dtype):
    """A function computing `torch_product(x, dy, kernel)` for each input pair in eager torch
    (no autograd), in `dtype`."""
    dtype = getattr(torch, dtype)
    xs = [torch.from_numpy(x).to(dtype) for x in xs]
    dys = [torch.from_numpy(dy).to(dtype) for dy in dys]
    kernel = torch.from_numpy(kernel).to(dtype)

    def chain():
        with torch.no_grad():
            for x, dy in zip(xs, dys):
                torch_product(x, dy, kernel)
    return chain
