"""The benchmark commands run end to end and print their JSON lines."""

import json
import os
import re
import subprocess
import sys

import pytest
import tensorflow as tf

from electra_tf.benchmarks.machine import cpu_description
from electra_tf.config import load_config
from electra_tf.onednn import prefer_onednn
from electra_tf.training.flops import (classification_forward_flops, classification_step_flops,
                                      pretraining_step_flops)
from electra_tf.training.profile_breakdown import (XLA_KERNELS, format_breakdown,
                                                   format_xla_breakdown, op_breakdown,
                                                   xla_kernel_breakdown)
from tests.run_helpers import _own_flags, run_in_process


def test_flop_count_of_electra_small():
    model = load_config("model/small").model
    # Hand count, forward: discriminator 12 x (8*256^2 + 4*256*1024 + 4*128*256) + projection
    # 2*128*256 + head 2*256^2 + 2*256 per token; generator (width 64) 12 x (8*64^2 + 4*64*256
    # + 4*128*64) + 2*128*64 per token; MLM head 2*64*128 + 2*128*30522 per masked slot.
    disc = 12 * (8 * 256**2 + 4 * 256 * 1024 + 4 * 128 * 256) + 2 * 128 * 256 + 2 * 256**2 + 2 * 256
    gen = 12 * (8 * 64**2 + 4 * 64 * 256 + 4 * 128 * 64) + 2 * 128 * 64
    head = 2 * 64 * 128 + 2 * 128 * 30522
    expected = 3 * (32 * 128 * (disc + gen) + 32 * 19 * head)
    assert pretraining_step_flops(model, 32, 128, 19) == expected


def test_flop_count_of_an_electra_small_classification_step():
    model = load_config("model/small").model
    # Hand count, forward: 11 whole blocks and the projection at 128 positions; the last block's
    # key and value projections (4*256^2) at 128 positions, the rest of it at [CLS] alone.
    block = 8 * 256**2 + 4 * 256 * 1024 + 4 * 128 * 256
    per_sequence = 128 * (11 * block + 2 * 128 * 256 + 4 * 256**2) + block - 4 * 256**2
    assert classification_forward_flops(model, 32, 128) == 32 * per_sequence
    assert classification_step_flops(model, 32, 128) == 3 * 32 * per_sequence


def _json_lines(module, *args, own_process=True):
    """The JSON lines a benchmark command prints (it must succeed): run as `python -m`, or its
    main in this process."""
    if own_process:
        result = subprocess.run([sys.executable, "-m", module, *args], capture_output=True,
                                text=True, timeout=300)
    else:
        result = run_in_process(args, module=module)
    assert result.returncode == 0, result.stderr[-2000:]
    return [json.loads(l) for l in result.stdout.splitlines() if l.startswith("{")]


@pytest.mark.slow
def test_benchmark_prints_a_json_line():
    record = _json_lines("electra_tf.benchmarks.steps", "--size", "tiny", "--batch", "4", "--seq", "16",
                         "--steps", "2", "--warmup", "0", "--gradient_accumulation_steps", "2",
                         "--peak_size", "256")[-1]
    assert {"impl", "size", "batch", "seq", "median_step_s", "tokens_per_s",
            "model_gflop_per_s"} <= set(record)
    assert record["batch"] == 4 and record["seq"] == 16 and record["tokens_per_s"] > 0
    # By default the line carries the machine's float32 matmul peak and the step's share of it
    # (of 256 x 256 products here: at the default 2,048 the probe took a quarter of the test)
    assert record["peak_gflop_per_s"]["float32"] > 0 and record["fraction_of_peak"] > 0
    # an update of 2 accumulated micro-batches of 2
    assert record["peak_host_memory_mib"] > 100 and record["gradient_accumulation_steps"] == 2
    assert record["cpu"] and record["cores"] >= 1 and isinstance(record["cpu_flags"], list)
    # `python -m electra_tf...` asks for oneDNN on every CPU, unless the environment says no
    assert record["onednn"] is prefer_onednn(dict(os.environ), modules={})


def test_benchmark_stops_at_its_host_memory_limit():
    # TensorFlow alone passes 0.05 GiB while it loads: the watchdog ends the process there.
    result = subprocess.run([sys.executable, "-m", "electra_tf.benchmarks.steps", "--size",
                             "tiny", "--batch", "4", "--seq", "16", "--nopeak",
                             "--host_memory_limit_gib", "0.05"],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 3, result.stderr[-2000:]
    record = json.loads(result.stdout.splitlines()[-1])
    assert record["exceeded_host_memory_gib"] == 0.05 and record["batch"] == 4


def test_benchmark_refuses_accumulation_that_does_not_divide_the_batch():
    result = run_in_process(["--batch", "4", "--gradient_accumulation_steps", "3"],
                            module="electra_tf.benchmarks.steps")
    assert result.returncode != 0
    assert "error: --gradient_accumulation_steps 3 must be positive and divide --batch 4" in (
        result.stderr + result.stdout)


@pytest.mark.slow
@pytest.mark.parametrize("task,seq,steps", [("classify", 16, 3), ("infer", 16, 3), ("qa", 32, 2)])
def test_finetuning_benchmarks_print_a_json_line(task, seq, steps):
    record = _json_lines("electra_tf.benchmarks.steps", "--task", task, "--size", "tiny", "--batch", "2",
                         "--seq", str(seq), "--steps", str(steps), "--warmup", "0",
                         own_process=False)[-1]
    assert record["task"] == task and record["seq"] == seq and record["sequences_per_s"] > 0
    assert record["model_gflop_per_s"] > 0
    if task == "infer":
        assert record["latency_p99_ms"] >= record["latency_p50_ms"] > 0


def test_matmul_peak_probe_measures_float32_and_bfloat16():
    with _own_flags("electra_tf.benchmarks.steps") as benchmark:  # its flags only for the import
        for dtype in ("float32", "bfloat16"):
            assert benchmark.matmul_peak_gflops(dtype, n=128, repeats=2) > 0
            assert benchmark.matmul_peak_gflops(dtype, n=128, repeats=2, side_by_side=2) > 0


@pytest.mark.parametrize("cores, threads, side_by_side", [(2, 0, 1), (2, 1, 2), (8, 2, 4),
                                                          (2, 2, 1)])
def test_the_peak_runs_a_product_for_each_share_of_the_cores(monkeypatch, cores, threads,
                                                             side_by_side):
    # --chains 2 on two cores leaves TensorFlow one intra-op thread: one product would read
    # one core's peak, and the step (on both cores) would read twice its fraction of it.
    monkeypatch.setattr(tf.config.threading, "get_intra_op_parallelism_threads", lambda: threads)
    monkeypatch.setattr(os, "sched_getaffinity", lambda _: set(range(cores)))
    with _own_flags("electra_tf.benchmarks.steps") as benchmark:
        assert benchmark.products_side_by_side() == side_by_side


@pytest.mark.slow
def test_benchmark_reports_its_fraction_of_the_matmul_peak():
    record = _json_lines("electra_tf.benchmarks.steps", "--size", "tiny", "--batch", "8", "--seq", "32",
                         "--steps", "1", "--warmup", "0", "--precision", "bf16", "--peak",
                         "--peak_size", "128", own_process=False)[-1]
    peaks = record["peak_gflop_per_s"]
    assert set(peaks) == {"float32", "bfloat16"} and min(peaks.values()) > 0
    # read before and after the steps; the higher reading is the peak
    readings = record["peak_readings_gflop_per_s"]
    assert {dtype: len(values) for dtype, values in readings.items()} == {"float32": 2,
                                                                          "bfloat16": 2}
    assert peaks == {dtype: max(values) for dtype, values in readings.items()}
    assert record["peak_products_side_by_side"] == 1  # TensorFlow's own threads: every core
    assert record["model_gflop_per_s"] > 0
    assert record["fraction_of_peak"] == pytest.approx(
        record["model_gflop_per_s"] / peaks["bfloat16"], abs=5e-4)


@pytest.mark.slow
def test_benchmark_profile_prints_the_op_time_breakdown(tmp_path):
    result = run_in_process(["--size", "tiny", "--batch", "4", "--seq", "16", "--steps", "1",
                             "--warmup", "0", "--profile", tmp_path, "--profile_steps", "2"],
                            module="electra_tf.benchmarks.steps")
    assert result.returncode == 0, result.stderr[-2000:]
    lines = result.stdout.strip().splitlines()
    profile = json.loads(lines[-1])["profile"]  # the JSON line stays the last one
    assert "| category | ms/step (op time) |" in result.stdout
    (total_line,) = [line for line in lines if line.startswith("| total |")]
    total = float(total_line.split("|")[2])
    assert profile["matmul"] > 0
    assert sum(profile.values()) == pytest.approx(total, abs=0.01 * len(profile))
    assert profile.get("other", 0) < 0.2 * total
    # The XLA kernels' op time, named by scope, adds up to their category's.
    kernels = json.loads(lines[-1])["profile_xla_kernels"]
    assert "| XLA kernel | ms/step (op time) | calls/step |" in result.stdout
    assert {"layer_norm_gradient", "gelu_gradient", "adam_weight_decay", "sampling"} <= set(kernels)
    assert sum(kernels.values()) == pytest.approx(
        profile[XLA_KERNELS], abs=0.01 * len(kernels))


@pytest.mark.slow
@pytest.mark.parametrize("task", ["pretrain", "infer"])
def test_benchmark_against_keras_hub_layers(task):
    record = _json_lines("electra_tf.benchmarks.steps", "--task", task, "--size", "tiny", "--batch", "2",
                         "--seq", "16", "--steps", "3", "--warmup", "0", "--nopeak",
                         "--against_keras_hub_layers", own_process=False)[-1]
    baseline = record["keras_hub_layers"]
    assert baseline["median_step_s"] > 0 and baseline["model_gflop_per_s"] > 0
    # From tokens/s: a tiny model's median_step_s, rounded to 0.1 ms, is too coarse.
    assert record["speedup_vs_keras_hub_layers"] == pytest.approx(
        record["tokens_per_s"] / baseline["tokens_per_s"], rel=0.01)


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["--jit_compile", "--transposed_feedforward"])
def test_infer_benchmark_times_an_export_variant_against_the_plain_one(variant):
    record = _json_lines("electra_tf.benchmarks.steps", "--task", "infer", "--size", "tiny",
                         "--batch", "2", "--seq", "16", "--steps", "3", "--warmup", "0",
                         "--nopeak", variant, "--against_plain_export", own_process=False)[-1]
    assert record["impl"].endswith(" xla") == (variant == "--jit_compile")
    assert record["transposed_feedforward"] == (variant == "--transposed_feedforward")
    assert record["plain_export"]["tokens_per_s"] > 0
    assert record["speedup_vs_plain_export"] == pytest.approx(
        record["tokens_per_s"] / record["plain_export"]["tokens_per_s"], rel=0.01)


@pytest.mark.slow
def test_infer_benchmark_times_the_litert_file():
    record = _json_lines("electra_tf.benchmarks.steps", "--task", "infer", "--size", "tiny",
                         "--batch", "2", "--seq", "16", "--steps", "3", "--warmup", "0",
                         "--nopeak", "--litert", "int8_dynamic", own_process=False)[-1]
    assert (record["runtime"], record["quantize"]) == ("litert", "int8_dynamic")
    assert record["latency_p99_ms"] >= record["latency_p50_ms"] > 0


def test_cpu_description_names_the_model_and_the_flags_of_note(tmp_path):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\ncpu family\t: 6\nmodel\t\t: 143\n"
                       "model name\t: Intel(R) Xeon(R) Platinum 8481C\n"
                       "flags\t\t: fpu sse2 avx2 avx512f avx512_bf16 amx_tile amx_bf16\n\n"
                       "processor\t: 1\nmodel name\t: other\nflags\t\t: fpu\n")
    described = cpu_description(str(cpuinfo))
    assert described["cpu"] == "Intel(R) Xeon(R) Platinum 8481C (cpu family 6, model 143)"
    assert described["cpu_flags"] == ["AVX-512", "AVX-512 BF16", "AMX-BF16", "AMX"]
    assert described["cores"] >= 1
    cpuinfo.write_text("model name\t: AMD EPYC\nflags\t\t: avx2 avx512f avx512_bf16\n")
    assert cpu_description(str(cpuinfo))["cpu_flags"] == ["AVX-512", "AVX-512 BF16"]
    assert cpu_description(str(tmp_path / "missing"))["cpu_flags"] == []


def test_with_keras_hub_layers_runs_keras_hub_attention_with_the_same_result():
    import tensorflow as tf

    from electra_tf.models.encoder import ElectraEncoder, make_embeddings

    with _own_flags("electra_tf.benchmarks.steps") as benchmark:
        config = load_config("model/tiny").model
        inputs = (tf.constant([[5, 6, 7, 0]]), tf.constant([[1, 1, 1, 0]]), tf.zeros([1, 4], tf.int32))
        ours = ElectraEncoder.from_model_config(config, make_embeddings(config))
        ours(*inputs)
        baseline = ElectraEncoder.from_model_config(config, make_embeddings(config))
        baseline(*inputs)
        baseline.set_weights(ours.get_weights())
        benchmark.with_keras_hub_layers(baseline)

        def runs_einsum_dense(encoder):  # keras MultiHeadAttention's query projection
            graph_def = tf.function(encoder).get_concrete_function(*inputs).graph.as_graph_def()
            nodes = list(graph_def.node) + [node for function in graph_def.library.function
                                            for node in function.node_def]  # cond's branches
            return any(re.search(r"self_attention_layer(_\d+)?/query", node.name)
                       for node in nodes)

        assert runs_einsum_dense(baseline) and not runs_einsum_dense(ours)
        tf.debugging.assert_near(ours(*inputs), baseline(*inputs), atol=1e-5)


def _write_trace(directory, events):
    """An .xplane.pb in `directory` whose /host:CPU plane's tf_Compute line holds `events`
    [(label, duration in ms)], beside a line and a plane the breakdown must ignore."""
    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    space = xplane_pb2.XSpace()
    device = space.planes.add(name="/device:GPU:0")
    host = space.planes.add(name="/host:CPU")
    python_line = host.lines.add(name="benchmark.py")
    compute = host.lines.add(name="tf_Compute/123")
    for index, (label, ms) in enumerate(events, start=1):
        host.event_metadata[index].id = index
        host.event_metadata[index].name = label
        for line in (compute, python_line):
            line.events.add(metadata_id=index, duration_ps=int(ms * 1e9))
        device.event_metadata[index].name = label
        device.lines.add(name="tf_Compute/1").events.add(metadata_id=index, duration_ps=10**12)
    os.makedirs(directory)
    with open(os.path.join(directory, "host.xplane.pb"), "wb") as f:
        f.write(space.SerializeToString())


def test_op_breakdown_sums_op_time_per_category_of_the_newest_trace(tmp_path):
    _write_trace(tmp_path / "plugins/profile/old", [("old/MatMul:MatMul", 1000.0)])
    os.utime(tmp_path / "plugins/profile/old/host.xplane.pb", (0, 0))
    _write_trace(tmp_path / "plugins/profile/new", [
        ("gradient_tape/discriminator/layer_3/MatMul/MatMul:_MklMatMul", 6.0),
        ("discriminator/layer_0/MatMul:_MklNativeFusedMatMul", 2.0),
        ("generator/layer_1/dropout_1/StatelessRandomUniformV2:StatelessRandomUniformV2", 3.0),
        ("gradient_tape/generator/layer_1/feedforward_dropout/stateless_dropout/SelectV2:SelectV2",
         1.0),
        ("gradient_tape/discriminator/layer_1/Gelu/mul/Mul:Mul", 2.0),
        ("CpuExecutable::ExecuteAsyncOnStream", 0.6),  # the training GELU, XLA-compiled
        ("ThunkExecutor::Execute", 0.6),  # inside that kernel: skipped
        ("discriminator/layer_1/self_attention_layer_norm/SquaredDifference:SquaredDifference",
         1.0),
        ("classifier/transformer_layer_2/add_1:_MklLayerNorm", 1.0),  # inference's, by type
        ("discriminator/layer_1/Softmax:_MklSoftmax", 0.4),
        ("SparseSoftmaxCrossEntropyWithLogits/x:SparseSoftmaxCrossEntropyWithLogits", 0.8),
        ("ArgMax:ArgMax", 0.2),  # outside every name scope: the train step's sampling
        ("adam_weight_decay/Square_3:Square", 1.2),
        ("adam_weight_decay/AssignSubVariableOp_4:AssignSubVariableOp", 0.6),
        ("adam_weight_decay/Sum_3/input:UnsortedSegmentSum", 0.5),  # the type decides first
        ("clip_by_global_norm/mul:Mul", 0.3),
        ("adam_weight_decay/clip_by_global_norm/L2Loss_2:L2Loss", 0.2),  # ours, in Adam's scope
        ("gradient_tape/discriminator/layer_1/BiasAdd/BiasAddGrad:BiasAddGrad", 0.7),
        ("gradient_tape/generator_predictions/word_embeddings/transpose/transpose:_MklTranspose",
         0.9),
        ("AddN_7:AddN", 0.1),  # the tape's sum of two gradients
        ("AddN/tmp_var_accum_0:AssignAdd", 0.05),
        ("discriminator/embeddings/AddN:AddN", 0.1),  # grappler's sum of three embeddings
        ("AssignVariableOp_3:AssignVariableOp", 0.05),
        ("discriminator/layer_1/concat:ConcatV2", 0.1),
        ("Threadpool::Enqueue:Threadpool", 50.0),  # not ops: skipped
        ("ExecutorState::Process:ExecutorState", 50.0),
        ("EagerExecute", 50.0),
    ])
    rows = op_breakdown(str(tmp_path), steps=2)
    assert {row.category: row.ms_per_step for row in rows} == pytest.approx({
        "matmul": 4.0, "dropout (random numbers, masks)": 2.0, "GELU": 1.0, "LayerNorm": 1.0,
        "XLA kernels (GELU, residual + LayerNorm, dropout, softmax gradient, cross-entropy,"
        " sampling, Adam)": 0.3,
        "attention softmax and masking": 0.2, "loss and sampling": 0.5,
        "optimizer update": 0.9, "embeddings (gather and gradient)": 0.3,
        "gradient clipping": 0.25, "bias gradients": 0.35, "transposes": 0.45,
        "gradient sums (AddN)": 0.075, "metrics": 0.025, "other": 0.05})
    assert [row.category for row in rows[:3]] == ["matmul", "dropout (random numbers, masks)",
                                                  "GELU"]
    assert sum(row.share for row in rows) == pytest.approx(1.0)
    assert rows[0].share == pytest.approx(8.0 / 22.8)
    assert [(op_type, round(ms, 9)) for op_type, ms in rows[0].top_op_types] == [
        ("_MklMatMul", 3.0), ("_MklNativeFusedMatMul", 1.0)]
    table = format_breakdown(rows)
    assert "| matmul | 4.00 | 35.1% | _MklMatMul 3.0, _MklNativeFusedMatMul 1.0 |" in table
    assert table.splitlines()[-1] == "| total | 11.40 | 100% | |"


def test_xla_kernel_breakdown_names_each_kernel_by_the_op_that_launched_it(tmp_path):
    """An XLA kernel's event carries no op name: it is the name stat of the
    ProcessAsync::Start event around it on its line (stored by reference, as the profiler
    does, or as a string), layer numbers and call suffixes folded."""
    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    space = xplane_pb2.XSpace()
    host = space.planes.add(name="/host:CPU")
    host.stat_metadata[1].name = "name"
    host.stat_metadata[2].name = "kernel_type"
    for key, text in ((3, "discriminator_1/layer_3/layer_norm/PartitionedCall"),
                      (4, "discriminator_1/layer_7/layer_norm/PartitionedCall"),
                      (5, "PartitionedCall")):
        host.stat_metadata[key].name = text
    for key, label in ((1, "ExecutorState::ProcessAsync::Start"),
                       (2, "CpuExecutable::ExecuteAsyncOnStream"),
                       (3, "discriminator/MatMul:MatMul")):
        host.event_metadata[key].name = label
    compute = host.lines.add(name="tf_Compute/7")
    ms = 10**9  # picoseconds

    def launch(at, duration, name_stat, kernel_ms):
        event = compute.events.add(metadata_id=1, offset_ps=at * ms, duration_ps=duration * ms)
        event.stats.add(metadata_id=2, str_value="PartitionedCall")
        if isinstance(name_stat, int):
            event.stats.add(metadata_id=1, ref_value=name_stat)
        else:
            event.stats.add(metadata_id=1, str_value=name_stat)
        compute.events.add(metadata_id=2, offset_ps=(at + 1) * ms, duration_ps=kernel_ms * ms)

    launch(0, 10, 3, 6)
    launch(20, 10, 4, 4)
    launch(40, 10, "gradient_tape/sampling/PartitionedCall_2", 2)
    launch(60, 5, 5, 3)
    compute.events.add(metadata_id=3, offset_ps=70 * ms, duration_ps=5 * ms)  # not a kernel
    compute.events.add(metadata_id=2, offset_ps=80 * ms, duration_ps=ms)  # outside a launch
    os.makedirs(tmp_path / "plugins/profile/run")
    (tmp_path / "plugins/profile/run/host.xplane.pb").write_bytes(space.SerializeToString())
    rows = xla_kernel_breakdown(str(tmp_path), steps=2)
    assert rows == [("discriminator/layer_N/layer_norm", 5.0, 1.0),
                    ("(no name scope)", 1.5, 0.5), ("gradient_tape/sampling", 1.0, 0.5),
                    ("?", 0.5, 0.5)]
    assert "| discriminator/layer_N/layer_norm | 5.00 | 1 |" in format_xla_breakdown(rows)


@pytest.mark.slow
def test_squad_pipeline_benchmark_prints_its_json_lines():
    # 300 questions: two featurization chunks, so the 2-process build really uses a pool.
    records = _json_lines("electra_tf.benchmarks.squad", "--size", "tiny", "--num_examples", "300",
                          "--predict_examples", "12", "--max_seq_length", "256", "--batch", "4",
                          "--num_workers", "2")
    by_measure = {}
    for record in records:
        by_measure.setdefault(record["measure"], []).append(record)
    assert by_measure["examples"][0]["examples"] == 300
    assert by_measure["examples"][0]["long_paragraphs"] > 0
    featurize = by_measure["featurize"] + by_measure["write_training_records"]
    assert [r["processes"] for r in featurize] == [1, 1, 2]
    assert len({r["windows"] for r in featurize}) == 1  # the same windows however built
    for record in featurize:
        assert record["windows"] > record["examples"] == 300 and record["examples_per_s"] > 0
    (predict,) = by_measure["predict"]
    assert predict["examples"] == 12 and predict["features"] >= 12
    assert predict["features_per_s"] > 0 and predict["model_features_per_s"] > 0


@pytest.mark.slow
def test_data_benchmark_prints_its_json_lines(tmp_path):
    """Vocabulary learning (ours and `tokenizers`' trainer, twice each), then the build,
    pipeline and tokenizer measures on one copy of the embedded corpus."""
    from electra_tf.text.vocab_learning import learn_vocabulary
    from tests.text.test_vocab_learning import random_word_lines

    (tmp_path / "corpus.txt").write_text(
        "".join(line + "\n\n" for line in random_word_lines(300)), encoding="utf-8")
    other_vocab = tmp_path / "other_vocab.txt"
    learn_vocabulary(random_word_lines(300, seed=1), 60, str(other_vocab))
    records = _json_lines("electra_tf.benchmarks.pretraining_data", "--vocab_corpus",
                          str(tmp_path / "corpus.txt"), "--vocab_size", "150",
                          "--learn_repeats", "2", "--compare_vocab_file", str(other_vocab),
                          "--copies", "1", "--num_processes", "1")
    by_measure = {}
    for record in records:
        by_measure.setdefault(record["measure"], []).append(record)
    (corpus,) = by_measure["vocab_corpus"]
    assert corpus["documents"] == 270 and corpus["held_out_documents"] == 30
    ours, hf = by_measure["learn_vocabulary"]
    assert ours["impl"].startswith("electra_tf") and hf["impl"].startswith("hf tokenizers")
    assert ours["identical_files"] and ours["size"] == hf["size"] == 150
    for record in (ours, hf):
        assert len(record["all_seconds"]) == 2 and record["seconds"] > 0
        assert 1 < record["held_out_tokens_per_word"] < 8
    (other,) = by_measure["held_out_tokens_per_word"]
    assert other["size"] == 60 and other["tokens_per_word"] > ours["held_out_tokens_per_word"]
    assert [r["processes"] for r in by_measure["build_pretraining_data"]] == [1]
    assert by_measure["input_pipeline"][0]["batches_per_s"] > 0
    assert [r["impl"].split()[0] for r in by_measure["tokenize"]] == ["electra_tf", "hf", "hf"]
