r"""Times one ELECTRA pretraining step and prints a JSON line (tokens/s, model GFLOP/s).

  python -m electra_tf.benchmarks.steps --size small --batch 32 --seq 128 --steps 10
  python -m electra_tf.benchmarks.steps --task qa --size small --batch 16 --seq 384 --steps 10
  python -m electra_tf.benchmarks.steps --size small --precision bf16
  python -m electra_tf.benchmarks.steps --size small --steps 3 --profile /tmp/electra_profile
  python -m electra_tf.benchmarks.steps --task infer --batch 1 --steps 300 --jit_compile \
      --against_plain_export
  python -m electra_tf.benchmarks.steps --task infer --batch 1 --steps 300 --threads 1 \
      --serving_dtype bfloat16
  python -m electra_tf.benchmarks.steps --task infer --batch 1 --steps 300 --threads 1 \
      --transposed_feedforward --against_plain_export

The benchmark measures the machine's matmul peak in the same run, before and after the timed
steps (a 2048^3 tf.matmul in float32, and in the step's half type under bf16 or fp16; with
TensorFlow's intra-op threads cut to cores / k by --chains or --threads, k such products side
by side, `peak_products_side_by_side`, so that the peak is the whole machine's; `--nopeak`
skips it), and adds `peak_readings_gflop_per_s` (both readings), `peak_gflop_per_s`
(the higher: a VM's speed moves within a minute, and a reading taken in a slow moment would
flatter the step) and `fraction_of_peak` (model GFLOP/s over that peak of the step's matmul
type) to the line. The line also names the CPU (`cpu`, `cores`, and `cpu_flags`: which of
AVX-512, AVX-512 BF16 and AMX it has), since the ratios differ between CPU families, and
`onednn`: whether TensorFlow ran its oneDNN kernels (electra_tf/onednn.py).
`--profile DIR` traces `--profile_steps` more steps with the TensorFlow profiler into DIR,
prints the op time per category (electra_tf.training.profile_breakdown) before the line and
adds it to the line as `profile` (ms per step).

The line has the same fields as ../shared/bench/torch_reference_step.py, and model FLOPs are
counted the same way (matmuls only, backward = 2x forward, generator head at masked positions
only), so the two can be run one after the other on the same machine and compared.

The fine-tuning tasks (`classify`, `qa`) use the reference's inputs: random ids, a full mask,
segment 1 from seq // 4 on (`[CLS] question [SEP] context [SEP]`-like), and count 3x the
encoder's forward FLOPs (the task heads are left out, as the reference leaves out its own);
`classify` counts the FLOPs it does: its last block computes [CLS] alone, where the
reference's computes every position, so compare the two by tokens/s. So does `infer`, whose
exported classifier's last block computes [CLS] alone too, where the references
(`ElectraForPreTraining`, the same under ONNX Runtime) return a logit at every position.
`qa` trains the original's joint head (`qa` config section defaults: beam 20, answerability
head) on answer spans inside the context segment: more work than the reference's
`ElectraForQuestionAnswering` (one linear layer for start and end): the joint end head's
2h -> 512 GELU layer at every position (about 1% of ELECTRA-Small's encoder FLOPs at seq 384)
and the answerability head (per sequence, negligible). The reference also uses torch's AdamW
without layer-wise decay and averages the loss over the batch where ours sums it (the
original's), which does not change the work. SQuAD featurization and prediction throughput:
`electra_tf.benchmarks.squad`.
"""

import dataclasses
import json
import os
import resource
import statistics
import sys
import tempfile
import threading
import time

import numpy as np
from absl import flags

from electra_tf import console
from electra_tf.benchmarks.machine import cpu_description
from electra_tf.cpu_features import available_cores
from electra_tf.config import FinetuneConfig, QAConfig, load_config
from electra_tf.onednn import onednn_enabled
from electra_tf.training.flops import (classification_forward_flops, classification_step_flops,
                                      encoder_flops_per_token, pretraining_step_flops)

console.setup(__name__)  # first: TensorFlow reads its C++ log level when it loads

FLAGS = flags.FLAGS
flags.DEFINE_string("size", "small", "Model config: tiny, small, base, large, or a YAML path.")
flags.DEFINE_integer("batch", 32, "Global batch size (sequences of one update).")
flags.DEFINE_integer("gradient_accumulation_steps", 1, "pretrain: micro-batches per update "
                     "(--batch must be a multiple); the rates still count whole updates.")
flags.DEFINE_integer("seq", 128, "Sequence length.")
flags.DEFINE_integer("steps", 10, "Timed steps; the median is reported.")
flags.DEFINE_integer("warmup", 2, "Untimed steps after compilation.")
flags.DEFINE_enum("precision", "float32", ["float32", "bf16", "fp16"],
                  "Keras dtype policy: float32, mixed_bfloat16 or mixed_float16.")
flags.DEFINE_bool("jit_compile", None, "Compile the train step with XLA (default: only when a "
                  "GPU is present; on CPU it measured slower than TensorFlow's own kernels). "
                  "--task infer: time the export made with jit_compile (the forward pass "
                  "XLA-compiled in the signature).")
flags.DEFINE_enum("serving_dtype", "float32", ["float32", "bfloat16"],
                  "--task infer: the export's weights and matmuls (export_savedmodel "
                  "--serving_dtype); bfloat16's fraction of peak is of the bfloat16 peak.")
flags.DEFINE_bool("transposed_feedforward", False, "--task infer: time the export with the "
                  "feed-forward input kernels stored transposed (export_savedmodel "
                  "--transposed_feedforward).")
flags.DEFINE_enum("litert", None, ["none", "float16", "int8_dynamic"], "--task infer: time "
                  "the LiteRT file of export_litert with this quantization, run by "
                  "ai-edge-litert's interpreter (--threads of its own; 0: the cores), instead "
                  "of the SavedModel.")
flags.DEFINE_integer("threads", 0, "TensorFlow intra-op threads (0: TensorFlow's default).")
flags.DEFINE_integer("chains", 0, "pretrain, classify, qa: run each step's batch as this many "
                     "chains of ops side by side, with cores / chains intra-op threads unless "
                     "--threads says otherwise (run_pretraining and run_finetuning "
                     "--cpu_chains); 0, as there, picks: 2 on a two-core CPU with an even "
                     "micro-batch, else 1.")
flags.DEFINE_multi_string("override", [], "Config overrides, section.key=value.")
flags.DEFINE_enum("task", "pretrain", ["pretrain", "classify", "qa", "infer"],
                  "pretrain: the replaced-token-detection step; classify: one fine-tuning step of "
                  "the GLUE classifier (3 labels, layer-wise LR decay); qa: one fine-tuning step "
                  "of the SQuAD question answerer (joint head, layer-wise LR decay); infer: "
                  "serving_default of the exported classifier, loaded with tf.saved_model.load "
                  "(latency p50/p99).")
flags.DEFINE_bool("peak", True, "Measure the matmul peak (GFLOP/s) of this machine before and "
                  "after the steps and report the step's fraction of the higher reading (a "
                  "few seconds; --nopeak skips it).")
flags.DEFINE_integer("peak_size", 2048, "n of the n x n @ n x n matmul of --peak.")
flags.DEFINE_string("profile", None, "Trace --profile_steps more steps with the TensorFlow "
                    "profiler into this directory and print the op time per category, "
                    "and the XLA kernels' by the scope of the op that ran them.")
flags.DEFINE_integer("profile_steps", 3, "Steps traced with --profile.")
flags.DEFINE_float("host_memory_limit_gib", 0, "Stop the benchmark (exit status 3, a JSON line "
                   "with exceeded_host_memory_gib) once its resident memory passes this many "
                   "GiB: to find what does not fit without the kernel's OOM killer (0: no limit).")
flags.DEFINE_bool("against_keras_hub_layers", False, "pretrain and infer: also time the same "
                  "model with keras-hub's own TransformerEncoder.call in every block (the "
                  "transformer before its faster call), alternating step by step with ours in "
                  "one process, so that the machine's drift hits both alike; adds "
                  "`keras_hub_layers` and `speedup_vs_keras_hub_layers` to the line.")
flags.DEFINE_bool("against_plain_export", False, "infer with --jit_compile or "
                  "--transposed_feedforward: also time the plain export (no XLA, kernels as "
                  "stored) of the same model size, alternating call by call with this one; adds "
                  "`plain_export` and `speedup_vs_plain_export` to the line.")

POLICIES = {"float32": "float32", "bf16": "mixed_bfloat16", "fp16": "mixed_float16"}
MATMUL_DTYPES = {"float32": "float32", "bf16": "bfloat16", "fp16": "float16"}


def main(argv):
    del argv
    accumulation = FLAGS.gradient_accumulation_steps
    if accumulation < 1 or FLAGS.batch % accumulation:
        sys.exit(f"error: --gradient_accumulation_steps {accumulation} must be positive and "
                 f"divide --batch {FLAGS.batch}")
    if accumulation > 1 and FLAGS.task != "pretrain":
        sys.exit("error: --gradient_accumulation_steps is for --task pretrain")
    if FLAGS.host_memory_limit_gib:
        watch_host_memory(FLAGS.host_memory_limit_gib, {
            "task": FLAGS.task, "size": FLAGS.size, "batch": FLAGS.batch, "seq": FLAGS.seq,
            "gradient_accumulation_steps": accumulation})
    import keras
    import tensorflow as tf

    from electra_tf.training.distribution import use_cpu_chains  # lazy: imports TensorFlow

    chains = use_cpu_chains(FLAGS.chains, micro_batches=[FLAGS.batch // accumulation]
                            if FLAGS.task != "infer" else [])
    if FLAGS.threads:
        tf.config.threading.set_intra_op_parallelism_threads(FLAGS.threads)

    size = FLAGS.size if os.path.sep in FLAGS.size else f"model/{FLAGS.size}"
    config = load_config(size, overrides=FLAGS.override)
    keras.mixed_precision.set_dtype_policy(POLICIES[FLAGS.precision])
    keras.utils.set_random_seed(0)
    jit_compile = FLAGS.jit_compile
    if jit_compile is None:
        jit_compile = bool(tf.config.list_physical_devices("GPU"))
    record = {"impl": f"electra_tf keras {keras.__version__} tf {tf.__version__}"
                      + (" xla" if jit_compile else ""),
              **cpu_description(), "onednn": onednn_enabled(),
              "task": FLAGS.task, "size": FLAGS.size, "batch": FLAGS.batch, "seq": FLAGS.seq,
              "gradient_accumulation_steps": FLAGS.gradient_accumulation_steps,
              "precision": FLAGS.precision,
              "threads": FLAGS.threads or ("cores / chains" if chains > 1 else "default"),
              "chains": chains}
    matmul_dtype = MATMUL_DTYPES[FLAGS.precision]
    if FLAGS.task == "infer":
        record["serving_dtype"] = FLAGS.serving_dtype
        record["transposed_feedforward"] = FLAGS.transposed_feedforward
        if FLAGS.serving_dtype == "bfloat16":
            matmul_dtype = "bfloat16"
    if FLAGS.peak:  # before the model exists, so nothing else competes for the cores
        dtypes = dict.fromkeys(["float32", matmul_dtype])
        side_by_side = products_side_by_side()
        peak_readings = {dtype: [matmul_peak_gflops(dtype, FLAGS.peak_size,
                                                    side_by_side=side_by_side)]
                         for dtype in dtypes}
    if FLAGS.task == "pretrain":
        record.update(_pretrain(config, jit_compile))
    elif FLAGS.task == "classify":
        record.update(_classify(config, jit_compile))
    elif FLAGS.task == "qa":
        record.update(_question_answering(config, jit_compile))
    else:
        record.update(_infer(config, jit_compile))
    record.update(peak_memory(tf))
    if FLAGS.peak:
        for dtype, readings in peak_readings.items():
            readings.append(matmul_peak_gflops(dtype, FLAGS.peak_size,
                                               side_by_side=side_by_side))
        record["peak_products_side_by_side"] = side_by_side
        record["peak_readings_gflop_per_s"] = {
            dtype: [round(reading, 1) for reading in readings]
            for dtype, readings in peak_readings.items()}
        peaks = {dtype: max(readings) for dtype, readings in
                 record["peak_readings_gflop_per_s"].items()}
        record["peak_gflop_per_s"] = peaks
        record["fraction_of_peak"] = round(
            record["model_gflop_per_s"] / peaks[matmul_dtype], 3)
    print(json.dumps(record))


def peak_memory(tf) -> dict:
    """{"peak_host_memory_mib": the process's peak resident memory so far, and with a GPU
    "peak_device_memory_mib": TensorFlow's peak allocation on GPU:0}. Run one configuration per
    process to compare them (e.g. --gradient_accumulation_steps 8 against 1)."""
    record = {"peak_host_memory_mib": round(
        resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}  # Linux: KiB
    if tf.config.list_physical_devices("GPU"):
        peak = tf.config.experimental.get_memory_info("GPU:0")["peak"]
        record["peak_device_memory_mib"] = round(peak / 2 ** 20, 1)
    return record


def resident_memory_bytes() -> int:
    """This process's resident memory now (Linux /proc)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def watch_host_memory(limit_gib: float, record: dict, interval: float = 0.1) -> None:
    """Starts a daemon thread that, once the resident memory passes limit_gib, prints `record`
    with "exceeded_host_memory_gib" as a JSON line and ends the process with status 3."""
    limit = limit_gib * 2 ** 30

    def watch():
        while resident_memory_bytes() <= limit:
            time.sleep(interval)
        print(json.dumps(dict(record, exceeded_host_memory_gib=limit_gib)), flush=True)
        os._exit(3)

    threading.Thread(target=watch, daemon=True, name="host-memory-watch").start()


def matmul_peak_gflops(dtype, n=2048, repeats=10, side_by_side=1):
    """GFLOP/s (side_by_side x 2 n^3 / median seconds) of `side_by_side` independent n x n @
    n x n tf.matmuls in `dtype`, run at once in one tf.function without XLA: one untimed call,
    then `repeats` timed ones. With TensorFlow's intra-op threads cut to cores / k (--chains
    k, --threads), one product reads only k-th of the machine; k side by side, on the
    inter-op threads as the chains run, read all of it (`products_side_by_side`)."""
    import tensorflow as tf

    # NumPy's generator, so TensorFlow's global random state is left as the model will find it.
    pairs = [tuple(tf.cast(np.random.default_rng(2 * k + i).standard_normal((n, n), np.float32),
                           dtype) for i in range(2)) for k in range(side_by_side)]
    matmuls = tf.function(lambda: [tf.matmul(a, b) for a, b in pairs], jit_compile=False)

    def run():
        for product in matmuls():
            product.numpy()

    run()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return side_by_side * 2 * n ** 3 / statistics.median(times) / 1e9


def products_side_by_side() -> int:
    """How many products `matmul_peak_gflops` runs at once for the whole machine's peak: cores
    / TensorFlow's intra-op threads (1 with its default, every core)."""
    import tensorflow as tf

    threads = tf.config.threading.get_intra_op_parallelism_threads()
    return max(1, available_cores() // threads) if threads else 1


def _time(step, steps, warmup):
    """(compile seconds, sorted step times) of `step()`: one untimed call, warmup, timed calls."""
    start = time.perf_counter()
    step()
    compile_s = time.perf_counter() - start
    for _ in range(warmup):
        step()
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return compile_s, sorted(times)


def _time_alternately(step, baseline_step, flops, baseline_name="keras_hub_layers"):
    """`step` and `baseline_step` timed alternately, one call of each per round after their
    compilation and warmup: ((compile seconds, sorted times) of `step`, {baseline_name: the
    baseline's rates, "speedup_vs_<baseline_name>": its median over ours})."""
    compile_s, _ = _time(step, 0, FLAGS.warmup)
    baseline_compile_s, _ = _time(baseline_step, 0, FLAGS.warmup)
    times, baseline_times = [], []
    for _ in range(FLAGS.steps):
        for function, record in ((step, times), (baseline_step, baseline_times)):
            start = time.perf_counter()
            function()
            record.append(time.perf_counter() - start)
    baseline = _rates(sorted(baseline_times), baseline_compile_s, flops)
    speedup = statistics.median(baseline_times) / statistics.median(times)
    return (compile_s, sorted(times)), {baseline_name: baseline,
                                        f"speedup_vs_{baseline_name}": round(speedup, 3)}


def with_keras_hub_layers(model):
    """`model` with every TransformerLayer computing keras-hub's TransformerEncoder.call (keras
    MultiHeadAttention and Dense; the block before its faster call) instead of its own. Same
    variables and maths, but every position computed (a classifier's last block `query_rows`
    is a slice of the whole output); set before the model is first traced."""
    # lazy: imported once the flags are parsed, so --help starts no TensorFlow
    import keras_hub
    import tensorflow as tf

    from electra_tf.models.transformer import TransformerLayer, sequence_halves

    def keras_hub_call(layer):
        def call(inputs, query_rows=None, **kwargs):
            outputs = keras_hub.layers.TransformerEncoder.call(layer, inputs, **kwargs)
            return outputs if query_rows is None else outputs[:, :query_rows]
        return call

    def keras_hub_call_on_halves(layer):
        def call_on_halves(halves, padding_mask=None):
            outputs = keras_hub.layers.TransformerEncoder.call(
                layer, tf.concat(halves, axis=1), padding_mask=padding_mask, training=False)
            return (outputs,) if len(halves) == 1 else sequence_halves(outputs)
        return call_on_halves

    for layer in model._flatten_layers():
        if isinstance(layer, TransformerLayer):
            layer.call = keras_hub_call(layer)
            layer.call_on_halves = keras_hub_call_on_halves(layer)
    return model


def _pretrain(config, jit_compile):
    # lazy: imported once the flags are parsed, so --help starts no TensorFlow
    import numpy as np
    import tensorflow as tf

    from electra_tf.pretraining_data.masking import mask_tokens, max_predictions_per_seq
    from electra_tf.models.pretrainer_factory import build_pretrainer
    from electra_tf.training.optimizer import create_optimizer

    objective = config.objective
    num_predictions = max_predictions_per_seq(objective.mask_prob, FLAGS.seq)

    vocab_size = config.model.vocab_size
    ids = np.random.default_rng(0).integers(  # above BERT's special ids when the vocab allows
        min(104, vocab_size // 2), vocab_size, size=(FLAGS.batch, FLAGS.seq)).astype(np.int32)
    ids[:, 0], ids[:, -1] = objective.cls_token_id, objective.sep_token_id
    mask = np.ones_like(ids)
    batch = mask_tokens(ids, mask, tf.constant([0, 0]), mask_prob=objective.mask_prob,
                        max_predictions=num_predictions, mask_token_id=objective.mask_token_id,
                        special_token_ids=[objective.cls_token_id, objective.sep_token_id,
                                           objective.mask_token_id])
    batch.update(input_mask=tf.constant(mask), segment_ids=tf.zeros_like(ids))

    def training_step(model):
        model.gradient_accumulation_steps = FLAGS.gradient_accumulation_steps
        model.compile(optimizer=create_optimizer(config.optimizer), jit_compile=jit_compile)
        return lambda: model.train_on_batch(batch)

    step = training_step(build_pretrainer(config.model, objective))
    flops = pretraining_step_flops(config.model, FLAGS.batch, FLAGS.seq, num_predictions,
                                   objective.electra_objective)
    baseline = {}
    if FLAGS.against_keras_hub_layers:
        baseline_step = training_step(with_keras_hub_layers(
            build_pretrainer(config.model, objective)))
        (compile_s, times), baseline = _time_alternately(step, baseline_step, flops)
    else:
        compile_s, times = _time(step, FLAGS.steps, FLAGS.warmup)
    return {**_rates(times, compile_s, flops), **baseline, **_profile(step)}


def _rates(times, compile_s, flops):
    median = statistics.median(times)
    return {"median_step_s": round(median, 4), "compile_s": round(compile_s, 1),
            "tokens_per_s": round(FLAGS.batch * FLAGS.seq / median, 1),
            "sequences_per_s": round(FLAGS.batch / median, 2),
            "model_gflop_per_s": round(flops / median / 1e9, 1)}


def _profile(step):
    """{"profile": {category: op ms per step}, "profile_xla_kernels": {kernel scope: op ms per
    step}} of --profile_steps calls of `step()` traced into --profile, after printing the two
    breakdown tables; {} without --profile."""
    if not FLAGS.profile:
        return {}
    # lazy: imported once the flags are parsed, so --help starts no TensorFlow
    import tensorflow as tf

    from electra_tf.training.profile_breakdown import (format_breakdown, format_xla_breakdown,
                                                       op_breakdown, xla_kernel_breakdown)

    tf.profiler.experimental.start(FLAGS.profile)
    try:
        for _ in range(FLAGS.profile_steps):
            step()
    finally:
        tf.profiler.experimental.stop()
    rows = op_breakdown(FLAGS.profile, FLAGS.profile_steps)
    print(format_breakdown(rows))
    kernels = xla_kernel_breakdown(FLAGS.profile, FLAGS.profile_steps)
    if kernels:
        print(format_xla_breakdown(kernels))
    return {"profile": {row.category: round(row.ms_per_step, 2) for row in rows},
            "profile_xla_kernels": {scope: round(ms, 2) for scope, ms, _ in kernels}}


def _pair_inputs(vocab_size):
    """Random ids, full mask, second segment from seq // 4 on (as the torch reference)."""
    ids = np.random.default_rng(0).integers(5, vocab_size, size=(FLAGS.batch, FLAGS.seq))
    segments = np.zeros_like(ids)
    segments[:, FLAGS.seq // 4:] = 1
    return {"input_ids": ids.astype(np.int32), "input_mask": np.ones_like(ids, np.int32),
            "segment_ids": segments.astype(np.int32)}


def _finetune(model, config, labels, jit_compile, flops):
    """Times one fine-tuning step of `model` on `_pair_inputs` with the original's fine-tuning
    optimizer (layer-wise LR decay), `flops` a step."""
    # lazy: imported once the flags are parsed, so --help starts no TensorFlow
    from electra_tf.training.optimizer import create_optimizer

    optimizer_config = dataclasses.replace(FinetuneConfig().optimizer, train_steps=10000,
                                           warmup_steps=1000)
    model.compile(optimizer=create_optimizer(optimizer_config, config.model.num_layers),
                  jit_compile=jit_compile)
    inputs = _pair_inputs(config.model.vocab_size)
    step = lambda: model.train_on_batch(inputs, labels)
    compile_s, times = _time(step, FLAGS.steps, FLAGS.warmup)
    return {**_rates(times, compile_s, flops), **_profile(step)}


def _classify(config, jit_compile):
    """One fine-tuning step of the 3-label classifier."""
    # lazy: imported once the flags are parsed, so --help starts no TensorFlow
    import numpy as np

    from electra_tf.models.classifier import ElectraClassifier

    labels = np.random.default_rng(1).integers(0, 3, size=FLAGS.batch).astype(np.int32)
    return _finetune(ElectraClassifier(config.model, num_labels=3), config, labels, jit_compile,
                     classification_step_flops(config.model, FLAGS.batch, FLAGS.seq))


def _question_answering(config, jit_compile):
    """One fine-tuning step of the question answerer with the qa section's defaults; every
    question answerable, its span (1-4 tokens) inside the context segment."""
    # lazy: imported once the flags are parsed, so --help starts no TensorFlow
    import numpy as np

    from electra_tf.models.question_answerer import ElectraQuestionAnswerer

    qa = QAConfig()
    model = ElectraQuestionAnswerer(config.model, head=qa.head, beam_size=qa.beam_size,
                                    answerable_weight=qa.answerable_weight)
    rng = np.random.default_rng(1)
    last = FLAGS.seq - 2  # the final [SEP] is at seq - 1
    start = rng.integers(FLAGS.seq // 4, last + 1, size=FLAGS.batch)
    end = np.minimum(start + rng.integers(0, 4, size=FLAGS.batch), last)
    labels = {"start_positions": start.astype(np.int32), "end_positions": end.astype(np.int32),
              "is_impossible": np.zeros(FLAGS.batch, np.float32)}
    flops = 3 * FLAGS.batch * FLAGS.seq * encoder_flops_per_token(config.model, FLAGS.seq)
    return _finetune(model, config, labels, jit_compile, flops)


def _infer(config, jit_compile):
    """serving_default of the exported classifier, loaded back as a model server would."""
    # lazy: imported once the flags are parsed, so --help starts no TensorFlow
    import tensorflow as tf

    from electra_tf.export.classifier import export_classifier
    from electra_tf.export.precision import serving_copy
    from electra_tf.models.classifier import ElectraClassifier

    inputs = {k: tf.constant(v) for k, v in _pair_inputs(config.model.vocab_size).items()}
    flops = classification_forward_flops(config.model, FLAGS.batch, FLAGS.seq)

    def serving_step(model, directory, jit_compile=jit_compile,
                     transposed=FLAGS.transposed_feedforward):
        export_classifier(serving_copy(model, FLAGS.serving_dtype, transposed),
                          directory, task="benchmark",
                          label_names=("a", "b", "c"), with_examples=False,
                          jit_compile=jit_compile)
        serve = tf.saved_model.load(directory).signatures["serving_default"]
        return lambda: serve(**inputs)["logits"].numpy()

    def litert_step(model, directory):
        # lazy: ai-edge-litert is needed only for --litert (an optional extra)
        from ai_edge_litert.interpreter import Interpreter

        from electra_tf.export.litert import export_litert

        path = export_litert(model, f"{directory}/model.tflite", max_seq_length=FLAGS.seq,
                             quantize=FLAGS.litert)["path"]
        runner = Interpreter(model_path=path, num_threads=FLAGS.threads or available_cores()
                             ).get_signature_runner()
        arrays = {name: value.numpy() for name, value in inputs.items()}
        return lambda: runner(**arrays)["logits"]

    with tempfile.TemporaryDirectory() as directory:
        model = ElectraClassifier(config.model, num_labels=3)
        step = (litert_step(model, directory) if FLAGS.litert else
                serving_step(model, f"{directory}/ours"))
        baseline = {}
        if FLAGS.against_keras_hub_layers:
            baseline_step = serving_step(with_keras_hub_layers(
                ElectraClassifier(config.model, num_labels=3)), f"{directory}/keras_hub",
                transposed=False)
            (compile_s, times), baseline = _time_alternately(
                step, baseline_step, flops)
        elif FLAGS.against_plain_export and (jit_compile or FLAGS.transposed_feedforward):
            plain_step = serving_step(ElectraClassifier(config.model, num_labels=3),
                                      f"{directory}/plain", jit_compile=False, transposed=False)
            (compile_s, times), baseline = _time_alternately(
                step, plain_step, flops, baseline_name="plain_export")
        else:
            compile_s, times = _time(step, FLAGS.steps, FLAGS.warmup)
        profile = _profile(step)
    record = {**_rates(times, compile_s, flops), **baseline}
    if FLAGS.litert:
        record.update(runtime="litert", quantize=FLAGS.litert)
    record.update(latency_p50_ms=round(1000 * times[len(times) // 2], 2),
                  latency_p99_ms=round(1000 * times[min(len(times) - 1,
                                                         int(0.99 * len(times)))], 2),
                  **profile)
    return record


if __name__ == "__main__":
    console.run(main)
