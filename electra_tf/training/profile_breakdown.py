"""Op time per category from a TensorFlow profiler trace (what `benchmarks.steps --profile` prints).

The trace's /host:CPU plane has one event per executed TensorFlow op on its tf_Compute lines,
named "<op name>:<op type>", e.g. `gradient_tape/discriminator/layer_3/Gelu/mul/Mul:Mul`. A
gradient op keeps its forward op's name under `gradient_tape/`, so it lands in the forward
op's category (GELU's gradient is GELU). Each op gets the first category whose op types match
(a substring of the op type), and only when none does, the first whose name substrings match:

  by op type
    matmul                            MatMul (_MklMatMul, _MklNativeFusedMatMul, BatchMatMul...),
                                      Einsum
    loss and sampling                 SoftmaxCrossEntropy (before Softmax, which it contains)
    attention softmax and masking     Softmax (_MklSoftmax)
    dropout (random numbers, masks)   StatelessRandom, RandomUniform
    embeddings (gather and gradient)  Gather, UnsortedSegmentSum (a gather's gradient, densified)
    optimizer update                  ApplyAdam, AssignSubVariableOp
    transposes                        Transpose (_MklTranspose)
    casts                             Cast
    bias gradients                    BiasAddGrad
    LayerNorm                         LayerNorm (_MklLayerNorm), FusedBatchNorm (inference's
                                      LayerNorm where oneDNN is off)
    XLA kernels (GELU, residual +     ExecuteAsyncOnStream: a kernel that XLA compiled inside a
    LayerNorm, dropout, softmax       step run by TensorFlow's executor: the training GELU and
    gradient, cross-entropy,          its derivative (electra_tf.models.activations), the
    sampling, Adam)                   blocks' dropout + residual + LayerNorm
                                      (electra_tf.models.residual_norm), the other dropouts
                                      (electra_tf.models.dropout), the attention softmax's
                                      gradient (electra_tf.models.attention_probabilities),
                                      the generator's
                                      cross-entropy (electra_tf.models.cross_entropy), the
                                      sampling (electra_tf.models.sampling) and the
                                      optimizer's update of each variable
                                      (`xla_kernel_breakdown` names them apart)
  by op name
    dropout (random numbers, masks)   dropout (keras' stateless_dropout: compare, select, scale)
    GELU                              Gelu, gelu
    LayerNorm                         layer_norm, LayerNorm
    loss and sampling                 SoftmaxCrossEntropy
    attention softmax and masking     Softmax, attention
    embeddings (gather and gradient)  embeddings
    gradient clipping                 clip_by_global_norm, global_norm
    optimizer update                  adam_weight_decay (the optimizer's name scope)
    loss and sampling                 sampling, loss
    metrics                           metric, accuracy, Assign (the optimizer's own assignments
                                      matched above; what is left updates metric variables)
  outside every name scope (gradient_tape/ aside)
    gradient sums (AddN)              names starting with AddN: backprop adding the gradients of
                                      a tensor used twice (residual branches, tied embeddings)
    loss and sampling                 the rest: the train step's own code, e.g. the generator's
                                      sampling
  anything else: other

The optimizers' clipping (`electra_tf.training.optimizer.clip_by_global_norm`) runs in a
clip_by_global_norm scope inside the optimizer's, so it counts as "gradient clipping". The
transformer layer's own ops outside its sublayers (residual adds, the attention's reshapes,
scaling and padding bias) are "other".
"""

import collections
import glob
import os
import re

XLA_KERNELS = ("XLA kernels (GELU, residual + LayerNorm, dropout, softmax gradient, cross-entropy,"
               " sampling, Adam)")
TYPE_RULES = [
    ("matmul", ("MatMul", "Einsum")),
    ("loss and sampling", ("SoftmaxCrossEntropy",)),
    ("attention softmax and masking", ("Softmax",)),
    ("dropout (random numbers, masks)", ("StatelessRandom", "RandomUniform")),
    ("embeddings (gather and gradient)", ("Gather", "UnsortedSegmentSum")),
    ("optimizer update", ("ApplyAdam", "AssignSubVariableOp")),
    ("transposes", ("Transpose",)),
    ("casts", ("Cast",)),
    ("bias gradients", ("BiasAddGrad",)),
    ("LayerNorm", ("LayerNorm", "FusedBatchNorm")),
    (XLA_KERNELS, ("ExecuteAsyncOnStream",)),
]
NAME_RULES = [
    ("dropout (random numbers, masks)", ("dropout",)),
    ("GELU", ("Gelu", "gelu")),
    ("LayerNorm", ("layer_norm", "LayerNorm")),
    ("loss and sampling", ("SoftmaxCrossEntropy",)),
    ("attention softmax and masking", ("Softmax", "attention")),
    ("embeddings (gather and gradient)", ("embeddings",)),
    ("gradient clipping", ("clip_by_global_norm", "global_norm")),
    ("optimizer update", ("adam_weight_decay",)),
    ("loss and sampling", ("sampling", "loss")),
    ("metrics", ("metric", "accuracy", "Assign")),
]
Row = collections.namedtuple("Row", "category ms_per_step share top_op_types")


def categorize(name, op_type):
    """The category of the op `name` of type `op_type` (the module docstring's rules)."""
    for rules, text in ((TYPE_RULES, op_type), (NAME_RULES, name)):
        for category, substrings in rules:
            if any(s in text for s in substrings):
                return category
    unscoped = name.removeprefix("gradient_tape/")
    if unscoped.startswith("AddN"):  # the tape's; forward AddN ops (grappler's) have scopes
        return "gradient sums (AddN)"
    if "/" not in unscoped:
        return "loss and sampling"
    return "other"


def _compute_lines(path):
    """(plane, line) of each tf_Compute line of the /host:CPU plane in the trace at `path` (an
    .xplane.pb file)."""
    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    space = xplane_pb2.XSpace()
    with open(path, "rb") as f:
        space.ParseFromString(f.read())
    for plane in space.planes:
        if plane.name == "/host:CPU":
            for line in plane.lines:
                if line.name.startswith("tf_Compute"):
                    yield plane, line


def op_events(path):
    """(op name, op type, duration in picoseconds) of each op executed in the trace at `path`
    (an .xplane.pb file): the events of the /host:CPU plane's tf_Compute lines."""
    for plane, line in _compute_lines(path):
        for event in line.events:
            label = plane.event_metadata[event.metadata_id].name
            # ThunkExecutor's events are the insides of an XLA kernel's, already counted
            if ":" not in label or label.startswith(("Threadpool", "ExecutorState",
                                                     "ThunkExecutor")):
                continue
            name, _, op_type = label.rpartition(":")
            yield name, op_type, event.duration_ps


def xla_kernel_events(path):
    """(op name, duration in picoseconds) of each XLA kernel run in the trace at `path`: an
    `ExecuteAsyncOnStream` event carries no op name, but lies inside the
    `ExecutorState::ProcessAsync::Start` event of the op that launched it, on the same line,
    whose "name" stat is that op's name (`discriminator/layer_3/layer_norm/PartitionedCall`)."""
    for plane, line in _compute_lines(path):
        name_stats = {key for key, stat in plane.stat_metadata.items() if stat.name == "name"}
        launch_end, launch_name = -1, "?"
        for event in sorted(line.events, key=lambda e: e.offset_ps):
            label = plane.event_metadata[event.metadata_id].name
            if label == "ExecutorState::ProcessAsync::Start":
                launch_end = event.offset_ps + event.duration_ps
                launch_name = next((plane.stat_metadata[s.ref_value].name if s.ref_value
                                    else s.str_value for s in event.stats
                                    if s.metadata_id in name_stats), "?")
            elif label.endswith("ExecuteAsyncOnStream"):
                inside = event.offset_ps + event.duration_ps <= launch_end
                yield (launch_name if inside else "?"), event.duration_ps


def newest_trace(logdir):
    """Path of the newest .xplane.pb under `logdir`/plugins/profile/ (a directory per trace)."""
    paths = glob.glob(os.path.join(logdir, "plugins", "profile", "*", "*.xplane.pb"))
    if not paths:
        raise FileNotFoundError(f"no profiler trace under {logdir}/plugins/profile")
    return max(paths, key=os.path.getmtime)


def op_breakdown(logdir, steps):
    """[Row(category, ms_per_step, share, top_op_types)] of the newest trace in `logdir`, the
    largest category first: op time per step (summed over ops, `steps` steps traced), its share
    of all op time, and the category's three largest op types as [(op type, ms per step)]."""
    by_type = collections.defaultdict(collections.Counter)  # category -> op type -> ps
    for name, op_type, duration_ps in op_events(newest_trace(logdir)):
        by_type[categorize(name, op_type)][op_type] += duration_ps
    totals = {category: sum(types.values()) for category, types in by_type.items()}
    total = sum(totals.values()) or 1
    per_step_ms = 1e-9 / steps  # picoseconds over all steps -> milliseconds per step
    return [Row(category, ps * per_step_ms, ps / total,
                [(t, t_ps * per_step_ms) for t, t_ps in by_type[category].most_common(3)])
            for category, ps in sorted(totals.items(), key=lambda item: -item[1])]


def kernel_scope(op_name):
    """The op name of an XLA kernel's launch with its call op, layer numbers and Keras' call
    suffixes folded: `gradient_tape/discriminator_1/layer_3/layer_norm/PartitionedCall` ->
    `gradient_tape/discriminator/layer_N/layer_norm`."""
    scope = re.sub(r"/?(Stateful)?PartitionedCall(_\d+)?$", "", op_name)
    scope = re.sub(r"layer_\d+", "layer_N", scope)
    return re.sub(r"_\d+(?=/|$)", "", scope) or "(no name scope)"


def xla_kernel_breakdown(logdir, steps):
    """[(kernel scope, ms per step, calls per step)] of the newest trace in `logdir`, the largest
    first: the XLA kernels' op time (the one category `op_breakdown` gives them) by
    `kernel_scope`, e.g. ("layer_norm_gradient", 37.1, 24.0)."""
    time_ps, calls = collections.Counter(), collections.Counter()
    for op_name, duration_ps in xla_kernel_events(newest_trace(logdir)):
        scope = kernel_scope(op_name)
        time_ps[scope] += duration_ps
        calls[scope] += 1
    return [(scope, ps * 1e-9 / steps, calls[scope] / steps)
            for scope, ps in time_ps.most_common()]


def format_breakdown(rows):
    """`rows` (op_breakdown's) as a Markdown table with a caption and a total line."""
    caption = ("Op time per step by category. Independent ops run concurrently on TensorFlow's "
               "inter-op threads (by default one per core), so op time summed can exceed "
               "the step's wall time; shares are of summed op time.")
    lines = [caption, "",
             "| category | ms/step (op time) | share of op time | top op types (ms/step) |",
             "|---|---:|---:|---|"]
    for row in rows:
        top = ", ".join(f"{op_type} {ms:.1f}" for op_type, ms in row.top_op_types)
        lines.append(f"| {row.category} | {row.ms_per_step:.2f} | {row.share:.1%} | {top} |")
    lines.append(f"| total | {sum(row.ms_per_step for row in rows):.2f} | 100% | |")
    return "\n".join(lines)


def format_xla_breakdown(rows):
    """`rows` (xla_kernel_breakdown's) as a Markdown table with a caption."""
    lines = ["XLA kernels' op time per step by the scope of the op that ran them.", "",
             "| XLA kernel | ms/step (op time) | calls/step |", "|---|---:|---:|"]
    lines += [f"| {scope} | {ms:.2f} | {calls:g} |" for scope, ms, calls in rows]
    return "\n".join(lines)
