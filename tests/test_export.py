"""SavedModel export for TF Serving: signatures, numerics in a TensorFlow-only process, the ops
the default graph needs, input validation and the `electra_tf.export_savedmodel` command.

No model server can be installed here (see README, "Serving with TF Serving"), so what TF Serving
checks is emulated: a fresh process that cannot import keras / keras-hub / tensorflow-text /
electra_tf loads the model, `saved_model_cli` reads the signatures, and the graph's op types are
checked against an allowlist of TensorFlow core ops.
"""

import dataclasses
import os
import re
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import tensorflow as tf
import yaml
from tensorflow.core.protobuf import saved_model_pb2

from electra_tf.config import ElectraConfig
from electra_tf.pretraining_data import pretraining_records as records
from electra_tf.export.savedmodel import export_discriminator
from electra_tf.models import ElectraPretrainer
from electra_tf.training.checkpointing import RunCheckpoint
from electra_tf.training.optimizer import create_optimizer
from tests.models.helpers import VOCAB, fast_optimizer_config, objective, tiny_model_config
from tests.run_helpers import SPECIALS, run_cli, run_in_process, write_vocab

WORDS = ["hello", "world", "##s", "the", "cat", "sat", "on", "a", "mat"]
TOKENS = SPECIALS + WORDS + [f"w{i}" for i in range(VOCAB - len(SPECIALS) - len(WORDS))]
PAD, UNK, CLS, SEP = 0, 1, 2, 3
TEXT_MAX_LENGTH = 8

# Every op type the default signature of a clean export uses (tiny model, exact GELU), taken from
# the export itself: all TensorFlow core ops that a stock tensorflow_model_server registers.
SERVING_DEFAULT_OPS = frozenset({
    "AddV2", "All", "Assert", "BatchMatMulV2", "BiasAdd", "BroadcastTo", "Cast", "ConcatV2",
    "Const", "Einsum", "EnsureShape", "Equal", "Erfc", "ExpandDims", "Fill", "FloorDiv",
    "FusedBatchNormV3", "GatherV2", "Greater",
    "Identity", "If", "Less", "LessEqual", "MatMul", "Mean", "Mul", "Neg", "NoOp", "Pack", "Placeholder",
    "Prod", "Range", "ReadVariableOp", "Reshape", "Rsqrt", "SelectV2", "Shape", "Sigmoid", "Slice",
    "Softmax", "SquaredDifference", "Squeeze", "StatefulPartitionedCall", "StopGradient",
    "StridedSlice", "Transpose",
})
# What the rest of the SavedModel adds: example parsing (serve_examples) and the variable
# save/restore plumbing every SavedModel has. Also all core ops.
OTHER_SAVEDMODEL_OPS = frozenset({
    "ParseExampleV2", "RaggedTensorToTensor", "Sub", "AssignVariableOp", "DisableCopyOnRead",
    "MergeV2Checkpoints", "RestoreV2", "SaveV2", "Select", "ShardedFilename",
    "StaticRegexFullMatch", "StringJoin", "VarHandleOp", "VarIsInitializedOp",
})
TF_TEXT_OP_MARKERS = ("Wordpiece", "RegexSplit", "CaseFold", "NormalizeUTF8", "Normalize",
                      "Sentencepiece", "Tokenize")


# ---- fixtures ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def vocab_file(tmp_path_factory):
    return write_vocab(tmp_path_factory.mktemp("vocab") / "vocab.txt", TOKENS)


@pytest.fixture(scope="module")
def pretrainer():
    model = ElectraPretrainer(tiny_model_config(),
                              objective(cls_token_id=CLS, sep_token_id=SEP, mask_token_id=4))
    # Compiled for XLA training, as run_pretraining does on GPU/TPU: the export must stay XLA-free.
    model.compile(optimizer=create_optimizer(fast_optimizer_config()), jit_compile=True)
    return model


@pytest.fixture(scope="module")
def exported(pretrainer, tmp_path_factory):
    """The default export (serving_default + serve_examples)."""
    return export_discriminator(pretrainer, str(tmp_path_factory.mktemp("export") / "1"))


@pytest.fixture(scope="module")
def exported_text(pretrainer, vocab_file, tmp_path_factory):
    """An export with serve_text (needs tensorflow-text ops)."""
    return export_discriminator(pretrainer, str(tmp_path_factory.mktemp("export_text") / "1"),
                                with_tokenizer=True, vocab_file=vocab_file,
                                max_seq_length=TEXT_MAX_LENGTH)


def padded_inputs(lengths, seq, seed):
    """int32 input_ids, input_mask, segment_ids [len(lengths), seq]: [CLS] .. [SEP], then 0s."""
    rng = np.random.default_rng(seed)
    batch = len(lengths)
    mask = (np.arange(seq)[None, :] < np.array(lengths)[:, None]).astype(np.int32)
    ids = rng.integers(5, VOCAB, size=(batch, seq)).astype(np.int32)
    ids[:, 0] = CLS
    ids[np.arange(batch), np.array(lengths) - 1] = SEP
    segments = ((np.arange(seq)[None, :] >= np.array(lengths)[:, None] // 2) * mask)
    return ids * mask, mask, segments.astype(np.int32)


def keras_logits(model, ids, mask, segments):
    return model.discriminator_logits(tf.constant(ids), tf.constant(mask),
                                      tf.constant(segments)).numpy()


def serialized_examples(rows):
    """tf.Example protos with int64 features, one (ids, mask, segments) tuple per example."""
    return [records.serialize_example(ids, seg, len(ids), input_mask=mask)
            for ids, mask, seg in rows]


def op_report(concrete_function):
    """(op types, XLA compile markers) of a signature's graph and its whole function library."""
    graph_def = concrete_function.graph.as_graph_def()
    nodes = list(graph_def.node)
    xla = []
    for function in graph_def.library.function:
        nodes += list(function.node_def)
        xla += [f"{function.signature.name}:{key}" for key, value in function.attr.items()
                if key.startswith("_Xla") and value.b]
    xla += [f"{node.name}:{key}" for node in nodes for key, value in node.attr.items()
            if key.startswith("_Xla") and value.b]
    return {node.op for node in nodes}, xla


def forbidden_ops(op_types):
    """The op types a stock TF Serving binary may lack: XLA and tensorflow-text ones."""
    return sorted(op for op in op_types
                  if op.startswith("Xla") or op == "XlaCallModule"
                  or any(marker.lower() in op.lower() for marker in TF_TEXT_OP_MARKERS))


def savedmodel_ops(export_dir):
    """Every op type in the SavedModel's MetaGraph (what a model server must register to load)."""
    proto = saved_model_pb2.SavedModel()
    with open(os.path.join(export_dir, "saved_model.pb"), "rb") as f:
        proto.ParseFromString(f.read())
    graph_def = proto.meta_graphs[0].graph_def
    ops = {node.op for node in graph_def.node}
    for function in graph_def.library.function:
        ops |= {node.op for node in function.node_def}
    return ops


# ---- numerics in a process that has only TensorFlow ------------------------------------------

# A script prefix that makes keras, keras-hub, tensorflow-text and electra_tf unimportable.
BLOCK_NON_TF_IMPORTS = textwrap.dedent("""
    import importlib.abc, importlib.machinery, sys

    # `import tensorflow` alone imports keras and keras.src (TF 2.21's __init__ loads
    # keras.src.optimizers eagerly, tolerating ImportError). To prove the SavedModel needs none
    # of them, make keras, keras-hub, tensorflow-text and electra_tf unimportable, as they are
    # inside tensorflow_model_server.
    BLOCKED = ("keras", "keras_hub", "tensorflow_text", "tf_keras", "electra_tf")

    class _Unavailable(importlib.abc.Loader):
        def create_module(self, spec):
            return None

        def exec_module(self, module):
            raise ImportError(f"{module.__name__} is blocked in this process")

    class _Block(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in BLOCKED:
                return importlib.machinery.ModuleSpec(name, _Unavailable(), origin=None)
            return None

    sys.meta_path.insert(0, _Block())
""")

FRESH_PROCESS = BLOCK_NON_TF_IMPORTS + textwrap.dedent("""
    import numpy as np
    import tensorflow as tf

    export_dir, text_export_dir, inputs_path, outputs_path = sys.argv[1:5]
    data = np.load(inputs_path)
    serve = tf.saved_model.load(export_dir).signatures["serving_default"]
    results = {}
    for i in range(int(data["count"])):
        out = serve(**{name: tf.constant(data[f"{name}_{i}"])
                       for name in ("input_ids", "input_mask", "segment_ids")})
        results[f"logits_{i}"] = out["logits"].numpy()
        results[f"probabilities_{i}"] = out["probabilities"].numpy()
    try:
        import keras  # noqa: F401
        keras_importable = True
    except ImportError:
        keras_importable = False
    loaded = sorted(m for m in sys.modules if m.split(".")[0] in BLOCKED)
    try:  # the export with serve_text: its tensorflow-text ops are not registered here
        tf.saved_model.load(text_export_dir)
        text_error = ""
    except Exception as e:
        text_error = f"{type(e).__name__}: {e}"
    np.savez(outputs_path, loaded=np.array(loaded + ["-"]), text_error=np.array(text_error),
             keras_importable=np.array(keras_importable), **results)
""")


@pytest.mark.slow
def test_serving_default_in_tensorflow_only_process(pretrainer, exported, exported_text, tmp_path):
    shapes = [([7, 3], 7), ([16, 5, 9, 12, 2], 16)]  # (lengths, seq): batch 2 x 7, 5 x 16
    arrays, expected = {"count": np.array(len(shapes))}, []
    for i, (lengths, seq) in enumerate(shapes):
        ids, mask, segments = padded_inputs(lengths, seq, seed=i)
        arrays.update({f"input_ids_{i}": ids, f"input_mask_{i}": mask,
                       f"segment_ids_{i}": segments})
        expected.append(keras_logits(pretrainer, ids, mask, segments))
    assert expected[1][0].std() > 1e-3  # a real signal, not constant logits
    np.savez(tmp_path / "inputs.npz", **arrays)
    script = tmp_path / "serve.py"
    script.write_text(FRESH_PROCESS)
    result = subprocess.run(
        [sys.executable, str(script), exported, exported_text, str(tmp_path / "inputs.npz"),
         str(tmp_path / "outputs.npz")],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=""))
    assert result.returncode == 0, result.stderr[-3000:]
    out = np.load(tmp_path / "outputs.npz")
    assert list(out["loaded"]) == ["-"]  # no keras, keras_hub, tensorflow_text, electra_tf
    assert not bool(out["keras_importable"])
    for i, (lengths, seq) in enumerate(shapes):
        assert out[f"logits_{i}"].shape == (len(lengths), seq)
        np.testing.assert_allclose(out[f"logits_{i}"], expected[i], atol=1e-5, rtol=0)
        np.testing.assert_allclose(out[f"probabilities_{i}"],
                                   1 / (1 + np.exp(-out[f"logits_{i}"].astype(np.float64))),
                                   atol=1e-6, rtol=0)
    # What a stock model server would say about the serve_text export (README caveat).
    assert "Op type not registered" in str(out["text_error"])
    assert re.search(r"'(NormalizeUTF8|CaseFoldUTF8|RegexSplitWithOffsets|"
                     r"FastWordpieceTokenizeWithOffsets)'", str(out["text_error"]))


# ---- serve_examples ---------------------------------------------------------------------------

def test_serve_examples_agrees_with_serving_default(exported):
    loaded = tf.saved_model.load(exported)
    default, examples = loaded.signatures["serving_default"], loaded.signatures["serve_examples"]
    lengths = [5, 9, 3]
    ids, mask, segments = padded_inputs(lengths, 9, seed=3)
    reference = default(input_ids=tf.constant(ids), input_mask=tf.constant(mask),
                        segment_ids=tf.constant(segments))

    # Unpadded Examples of different lengths: padded with 0 to the longest (9).
    rows = [(ids[i, :n], mask[i, :n], segments[i, :n]) for i, n in enumerate(lengths)]
    out = examples(examples=tf.constant(serialized_examples(rows)))
    assert out["logits"].shape == (3, 9)
    for key in ("logits", "probabilities"):
        np.testing.assert_allclose(out[key].numpy(), reference[key].numpy(), atol=1e-6, rtol=0)

    # Already padded, as in the pretraining TFRecords.
    rows = [(ids[i], mask[i], segments[i]) for i in range(3)]
    out = examples(examples=tf.constant(serialized_examples(rows)))
    np.testing.assert_allclose(out["logits"].numpy(), reference["logits"].numpy(), atol=1e-6)

    # One Example whose mask is shorter than its ids.
    rows = [(ids[0, :5], mask[0, :4], segments[0, :5])]
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="every Example needs as many input_mask values as input_ids values"):
        examples(examples=tf.constant(serialized_examples(rows)))


# ---- signatures as saved_model_cli (and TF Serving) sees them ---------------------------------

def parse_saved_model_cli(text):
    """{signature: {"inputs": {name: (dtype, shape)}, "outputs": {...}, "method": str}}."""
    signatures = {}
    for block in re.split(r"\n(?=signature_def\[')", text)[1:]:
        name = re.match(r"signature_def\['([^']+)'\]", block).group(1)
        inputs_part, _, outputs_part = block.partition("contains the following output(s):")
        entry = {"method": re.search(r"Method name is: (.*)", block).group(1).strip()}
        for key, part in (("inputs", inputs_part), ("outputs", outputs_part)):
            matches = re.finditer(
                r"(inputs|outputs)\['([^']+)'\] tensor_info:\s+dtype: (\w+)\s+shape: ([^\n]+)",
                part)
            entry[key] = {m.group(2): (m.group(3), m.group(4).replace(" ", "")) for m in matches}
        signatures[name] = entry
    return signatures


def test_the_savedmodel_holds_each_weight_once_and_lists_them(pretrainer, exported):
    # Keras' ExportArchive.track() saved each weight twice (its wrapper and the tf.Variable).
    reader = tf.train.load_checkpoint(os.path.join(exported, "variables", "variables"))
    saved = sum(int(np.prod(shape)) for name, shape in reader.get_variable_to_shape_map().items()
                if reader.get_variable_to_dtype_map()[name].is_floating)
    weights = pretrainer.encoder.weights + pretrainer.discriminator_head.weights
    assert saved == sum(int(np.prod(w.shape)) for w in weights)
    listed = pretrainer.encoder.variables + pretrainer.discriminator_head.variables
    assert len(tf.saved_model.load(exported).variables) == len(listed)


def test_the_model_is_traced_once_for_every_signature(pretrainer, monkeypatch, tmp_path):
    """serving_default and serve_examples call one traced forward pass (ExportArchive alone
    traces each signature twice, outside and inside tf.saved_model.save: four traces)."""
    traces = []
    logits = pretrainer.discriminator_logits

    def counted(*args, **kwargs):
        traces.append(1)
        return logits(*args, **kwargs)

    monkeypatch.setattr(pretrainer, "discriminator_logits", counted)
    export_discriminator(pretrainer, str(tmp_path / "1"), with_examples=True)
    assert len(traces) == 1


@pytest.mark.slow
def test_saved_model_cli_lists_the_documented_signatures(exported):
    result = subprocess.run(
        [sys.executable, "-m", "tensorflow.python.tools.saved_model_cli", "show", "--dir",
         exported, "--all"], capture_output=True, text=True, timeout=120,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
    assert result.returncode == 0, result.stderr[-2000:]
    assert "MetaGraphDef with tag-set: 'serve'" in result.stdout
    signatures = parse_saved_model_cli(result.stdout)
    matrix = ("DT_FLOAT", "(-1,-1)")
    assert signatures["serving_default"] == {
        "method": "tensorflow/serving/predict",
        "inputs": {"input_ids": ("DT_INT32", "(-1,-1)"), "input_mask": ("DT_INT32", "(-1,-1)"),
                   "segment_ids": ("DT_INT32", "(-1,-1)")},
        "outputs": {"logits": matrix, "probabilities": matrix}}
    assert signatures["serve_examples"] == {
        "method": "tensorflow/serving/predict",
        "inputs": {"examples": ("DT_STRING", "(-1)")},
        "outputs": {"logits": matrix, "probabilities": matrix}}


# ---- ops: what a stock tensorflow_model_server can run ----------------------------------------

def test_default_graph_uses_only_core_ops(exported):
    loaded = tf.saved_model.load(exported)
    ops, xla = op_report(loaded.signatures["serving_default"])
    assert ops - SERVING_DEFAULT_OPS == set(), "ops outside the core allowlist"
    assert {"MatMul", "Softmax", "Erfc", "ReadVariableOp", "EnsureShape", "Assert"} <= ops
    assert not [op for op in ops if op.startswith("Xla")] and "XlaCallModule" not in ops
    assert forbidden_ops(ops) == []
    assert xla == []  # not traced with jit_compile, although the model was compiled with it
    # Loading the model registers every op of its MetaGraph, not only the called signature's.
    all_ops = savedmodel_ops(exported)
    assert all_ops - SERVING_DEFAULT_OPS - OTHER_SAVEDMODEL_OPS == set()
    assert forbidden_ops(all_ops) == []


@pytest.mark.slow
def test_op_check_catches_tensorflow_text_and_xla(exported_text, tmp_path):
    loaded = tf.saved_model.load(exported_text)  # tensorflow_text is registered in this process
    text_ops, _ = op_report(loaded.signatures["serve_text"])
    caught = forbidden_ops(text_ops)
    assert {"NormalizeUTF8", "RegexSplitWithOffsets",
            "FastWordpieceTokenizeWithOffsets"} <= set(caught)
    assert text_ops - SERVING_DEFAULT_OPS - OTHER_SAVEDMODEL_OPS >= set(caught)
    # The serve_text export's default signature stays clean, but the SavedModel as a whole does
    # not: a stock server could not load it (see the fresh-process test).
    default_ops, _ = op_report(loaded.signatures["serving_default"])
    assert forbidden_ops(default_ops) == [] and default_ops <= SERVING_DEFAULT_OPS
    assert set(caught) <= set(forbidden_ops(savedmodel_ops(exported_text)))

    # A function traced with jit_compile=True carries _XlaMustCompile, which the check reports.
    module = tf.Module()
    module.scale = tf.Variable(2.0)
    jitted = tf.function(lambda x: {"y": x * module.scale}, jit_compile=True,
                         input_signature=[tf.TensorSpec([None], tf.float32, name="x")])
    tf.saved_model.save(module, str(tmp_path / "jit"), signatures={"serving_default": jitted})
    _, xla = op_report(tf.saved_model.load(str(tmp_path / "jit")).signatures["serving_default"])
    assert any(marker.endswith(":_XlaMustCompile") for marker in xla)


# ---- serve_text -------------------------------------------------------------------------------

@pytest.mark.slow
def test_serve_text_tokenizes_in_graph(exported_text, vocab_file):
    assert os.path.exists(os.path.join(exported_text, "assets", "vocab.txt"))
    loaded = tf.saved_model.load(exported_text)
    with open(loaded.vocab_file.asset_path.numpy().decode()) as f:
        assert [line.rstrip("\n") for line in f] == TOKENS
    index = {token: i for i, token in enumerate(TOKENS)}
    texts = ["Hello worlds, the cat", "", "a cat sat on the mat on the mat on the mat"]
    out = loaded.signatures["serve_text"](text=tf.constant(texts))
    ids, mask = out["input_ids"].numpy(), out["input_mask"].numpy()
    expected_first = [CLS] + [index[t] for t in ("hello", "world", "##s")] + [UNK, index["the"],
                                                                              index["cat"], SEP]
    assert ids.shape == (3, TEXT_MAX_LENGTH)
    assert ids[0].tolist() == expected_first
    assert ids[1].tolist() == [CLS, SEP] + [PAD] * (TEXT_MAX_LENGTH - 2)
    assert ids[2].tolist() == [CLS] + [index[t] for t in "a cat sat on the mat".split()] + [SEP]
    assert mask.tolist() == [[1] * 8, [1, 1] + [0] * 6, [1] * 8]

    reference = loaded.signatures["serving_default"](
        input_ids=tf.constant(ids), input_mask=tf.constant(mask),
        segment_ids=tf.zeros_like(ids))
    for key in ("logits", "probabilities"):
        np.testing.assert_allclose(out[key].numpy(), reference[key].numpy(), atol=1e-6, rtol=0)
    # A batch of short texts is padded only to its own longest sequence.
    short = loaded.signatures["serve_text"](text=tf.constant(["the cat", "mat"]))
    assert short["input_ids"].numpy().tolist() == [
        [CLS, index["the"], index["cat"], SEP], [CLS, index["mat"], SEP, PAD]]


# ---- bad input ---------------------------------------------------------------------------------

@pytest.mark.parametrize("case, message", [
    ("int64", "expected to be a int32 tensor but is a int64 tensor"),
    ("float", "expected to be a int32 tensor but is a float tensor"),
    ("rank1", r"Shape of tensor input_ids \[5\] is not compatible with expected shape \[\?,\?\]"),
    ("rank3", r"Shape of tensor input_mask \[2,5,1\] is not compatible with expected shape"),
    ("mask_shape", r"input_mask must have the same shape \[batch, seq\] as input_ids"),
    ("segment_shape", r"segment_ids must have the same shape \[batch, seq\] as input_ids"),
    ("id_range", f"input_ids must be below vocab_size {VOCAB}"),
    ("too_long", r"seq \(the second dimension of input_ids\) must be at most 64"),
])
def test_bad_input_is_rejected_clearly(exported, case, message):
    serve = tf.saved_model.load(exported).signatures["serving_default"]
    ok = np.ones([2, 5], np.int32)
    inputs = {"input_ids": ok, "input_mask": ok, "segment_ids": ok}
    inputs.update({
        "int64": {"input_ids": ok.astype(np.int64)},
        "float": {"input_ids": ok.astype(np.float32)},
        "rank1": {"input_ids": np.ones([5], np.int32)},
        "rank3": {"input_mask": ok[:, :, None]},
        "mask_shape": {"input_mask": np.ones([2, 4], np.int32)},
        "segment_shape": {"segment_ids": np.ones([3, 5], np.int32)},
        "id_range": {"input_ids": ok * VOCAB},
        "too_long": {name: np.ones([1, 65], np.int32) for name in inputs},
    }[case])
    # The signature checks dtypes itself; rank and the rest are the export's own asserts.
    with pytest.raises(tf.errors.InvalidArgumentError, match=message):
        serve(**{name: tf.constant(value) for name, value in inputs.items()})
    assert serve(**{name: tf.constant(ok) for name in inputs})["logits"].shape == (2, 5)


@pytest.mark.slow
def test_mlm_baseline_exports_sequence_output(tmp_path):
    model = ElectraPretrainer(tiny_model_config(), objective(electra_objective=False))
    path = export_discriminator(model, str(tmp_path / "mlm"), with_examples=False)
    loaded = tf.saved_model.load(path)
    assert sorted(loaded.signatures) == ["serving_default"]
    ids, mask, segments = padded_inputs([6, 4], 6, seed=5)
    out = loaded.signatures["serving_default"](input_ids=tf.constant(ids),
                                               input_mask=tf.constant(mask),
                                               segment_ids=tf.constant(segments))
    expected = model.encoder(tf.constant(ids), tf.constant(mask), tf.constant(segments)).numpy()
    assert out["sequence_output"].shape == (2, 6, 32)
    np.testing.assert_allclose(out["sequence_output"].numpy(), expected, atol=1e-5, rtol=0)


@pytest.mark.slow
def test_a_gdes_discriminator_exports_with_its_effective_word_table(tmp_path):
    model = ElectraPretrainer(tiny_model_config(embedding_sharing="gdes"), objective())
    residual = model.discriminator.embeddings.residual_word_embeddings.embeddings
    residual.assign(np.random.default_rng(1).normal(0, 0.5, residual.shape))
    path = export_discriminator(model, str(tmp_path / "gdes"), with_examples=False)
    ids, mask, segments = padded_inputs([6, 4], 6, seed=5)
    out = tf.saved_model.load(path).signatures["serving_default"](
        input_ids=tf.constant(ids), input_mask=tf.constant(mask),
        segment_ids=tf.constant(segments))
    def logits():
        hidden = model.discriminator(tf.constant(ids), tf.constant(mask), tf.constant(segments))
        return model.discriminator_head(hidden).numpy()

    expected = logits()
    residual.assign(tf.zeros_like(residual))  # what the discriminator says without it
    assert not np.allclose(expected, logits(), atol=1e-3)
    np.testing.assert_allclose(out["logits"].numpy(), expected.reshape(out["logits"].shape),
                               atol=1e-4, rtol=0)


# ---- the command ------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def run_dir(tmp_path_factory, vocab_file):
    """A run directory as run_pretraining leaves it: config.yaml and checkpoints/ckpt-5."""
    run = tmp_path_factory.mktemp("run")
    config = ElectraConfig(model=tiny_model_config(),
                           objective=objective(cls_token_id=CLS, sep_token_id=SEP, mask_token_id=4),
                           optimizer=fast_optimizer_config())
    config = dataclasses.replace(config, run=dataclasses.replace(
        config.run, vocab_file=vocab_file, max_seq_length=32)).validate()
    model = ElectraPretrainer(config.model, config.objective)
    model.compile(optimizer=create_optimizer(config.optimizer))
    RunCheckpoint(model, str(run / "checkpoints")).save(5)
    (run / "config.yaml").write_text(config.to_yaml())
    ids, mask, segments = padded_inputs([8, 5], 8, seed=7)
    return run, model, (ids, mask, segments)


def export_cli(*args):
    """`python -m electra_tf.export_savedmodel args`, in its own process."""
    return run_cli(list(args), timeout=180, module="electra_tf.export_savedmodel")


def export_main(*args):
    """The same command's main in this process (its flags, output and exit status)."""
    return run_in_process(list(args), module="electra_tf.export_savedmodel")


def assert_one_line_error(result, fragment):
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("error: ") and fragment in last, result.stderr[-2000:]


@pytest.mark.slow
def test_cli_exports_a_run_directory(run_dir, tmp_path):
    run, model, (ids, mask, segments) = run_dir
    result = export_cli("--model_dir", str(run), "--output_dir", str(tmp_path / "served"),
                        "--with_tokenizer")
    assert result.returncode == 0, result.stderr[-3000:]
    target = tmp_path / "served" / "5"  # the checkpoint's step
    assert f"to {target} (signatures: serving_default, serve_examples, serve_text)" in result.stdout
    assert sorted(os.listdir(tmp_path / "served")) == ["5"]  # no staging directory left
    assert (target / "assets" / "vocab.txt").read_text().split() == TOKENS
    loaded = tf.saved_model.load(str(target))
    assert sorted(loaded.signatures) == ["serve_examples", "serve_text", "serving_default"]
    out = loaded.signatures["serving_default"](input_ids=tf.constant(ids),
                                               input_mask=tf.constant(mask),
                                               segment_ids=tf.constant(segments))
    # The checkpoint's weights, not a fresh initialisation.
    np.testing.assert_allclose(out["logits"].numpy(), keras_logits(model, ids, mask, segments),
                               atol=1e-5, rtol=0)
    # max_seq_length defaults to run.max_seq_length (32): a long text is cut to 32 ids.
    text = loaded.signatures["serve_text"](text=tf.constant([" ".join(["cat"] * 50)]))
    assert text["input_ids"].shape == (1, 32)


@pytest.mark.slow
def test_cli_with_tokenizer_uses_the_vocabulary_a_moved_run_carries(run_dir, tmp_path):
    """A run directory copied from another machine: its config names a vocab.txt that is not
    here. The export says so in one line, and takes vocab.txt from the directory once it is
    there."""
    run, _, _ = run_dir
    moved = tmp_path / "moved"
    shutil.copytree(run, moved)
    config = yaml.safe_load((moved / "config.yaml").read_text())
    config["run"]["vocab_file"] = "/elsewhere/data/vocab.txt"
    (moved / "config.yaml").write_text(yaml.safe_dump(config))
    args = ["--model_dir", str(moved), "--output_dir", str(tmp_path / "served"),
            "--with_tokenizer", "--nowith_examples"]

    missing = export_main(*args)
    assert_one_line_error(missing, "the config's vocab_file /elsewhere/data/vocab.txt does not "
                                   "exist (was the run moved?)")
    assert not (tmp_path / "served").exists()

    write_vocab(moved / "vocab.txt", TOKENS)
    exported = export_main(*args)
    assert exported.returncode == 0, exported.stderr[-3000:]
    assert (tmp_path / "served" / "5" / "assets" / "vocab.txt").read_text().split() == TOKENS


def test_cli_refuses_an_existing_version_unless_overwrite(run_dir, tmp_path):
    run, _, _ = run_dir
    output = tmp_path / "served"
    args = ["--checkpoint", str(run / "checkpoints" / "ckpt-5"), "--config",
            str(run / "config.yaml"), "--output_dir", str(output)]
    (output / "5").mkdir(parents=True)
    (output / "5" / "keep.txt").write_text("old")
    refused = export_main(*args)
    assert_one_line_error(refused, f"{output / '5'} already exists")
    assert os.listdir(output / "5") == ["keep.txt"]

    replaced = export_main(*args, "--overwrite", "--nowith_examples")
    assert replaced.returncode == 0, replaced.stderr[-3000:]
    assert not (output / "5" / "keep.txt").exists()
    assert sorted(tf.saved_model.load(str(output / "5")).signatures) == ["serving_default"]


@pytest.mark.slow
def test_cli_jit_compile_writes_a_compiled_forward_pass(run_dir, tmp_path):
    run, model, (ids, mask, segments) = run_dir
    result = export_main("--model_dir", str(run), "--output_dir", str(tmp_path / "served"),
                         "--jit_compile", "--nowith_examples")
    assert result.returncode == 0, result.stderr[-3000:]
    serve = tf.saved_model.load(str(tmp_path / "served" / "5")).signatures["serving_default"]
    assert any(marker.endswith(":_XlaMustCompile") for marker in op_report(serve)[1])
    out = serve(input_ids=tf.constant(ids), input_mask=tf.constant(mask),
                segment_ids=tf.constant(segments))
    np.testing.assert_allclose(out["logits"].numpy(), keras_logits(model, ids, mask, segments),
                               atol=1e-5, rtol=0)


@pytest.mark.slow
def test_cli_serving_dtype_bfloat16_writes_bfloat16_weights(run_dir, tmp_path):
    run, model, (ids, mask, segments) = run_dir
    result = export_main("--model_dir", str(run), "--output_dir", str(tmp_path / "served"),
                         "--serving_dtype", "bfloat16", "--nowith_examples")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "(signatures: serving_default; bfloat16 weights)" in result.stdout
    loaded = tf.saved_model.load(str(tmp_path / "served" / "5"))
    assert {v.dtype for v in loaded.variables if v.dtype.is_floating} == {tf.bfloat16}
    out = loaded.signatures["serving_default"](input_ids=tf.constant(ids),
                                               input_mask=tf.constant(mask),
                                               segment_ids=tf.constant(segments))
    assert out["logits"].dtype == tf.float32
    # The checkpoint's weights in bfloat16 (tests/test_export_bfloat16.py: the tolerance).
    np.testing.assert_allclose(out["logits"].numpy(), keras_logits(model, ids, mask, segments),
                               atol=0.1, rtol=0.05)


@pytest.mark.slow
def test_cli_transposed_feedforward_gives_the_same_logits(run_dir, tmp_path):
    run, model, (ids, mask, segments) = run_dir
    result = export_main("--model_dir", str(run), "--output_dir", str(tmp_path / "served"),
                         "--transposed_feedforward", "--nowith_examples")
    assert result.returncode == 0, result.stderr[-3000:]
    assert ("(signatures: serving_default; feed-forward input kernels transposed)"
            in result.stdout)
    serve = tf.saved_model.load(str(tmp_path / "served" / "5")).signatures["serving_default"]
    graph_def = serve.graph.as_graph_def()
    assert any(node.op == "MatMul" and node.attr["transpose_b"].b
               for function in graph_def.library.function for node in function.node_def)
    out = serve(input_ids=tf.constant(ids), input_mask=tf.constant(mask),
                segment_ids=tf.constant(segments))
    np.testing.assert_allclose(out["logits"].numpy(), keras_logits(model, ids, mask, segments),
                               atol=1e-5, rtol=0)


@pytest.mark.parametrize("case, fragment", [
    ("no_model_dir", "is not a directory"),
    ("no_config", "has no config.yaml"),
    ("no_checkpoint", "checkpoint not found: "),
    ("wrong_model", "does not fit the model of model/tiny: embeddings/word_embeddings/embeddings "
                    "has shape (120, 16) in the checkpoint, (1000, 32) in the model"),
])
def test_cli_bad_input_is_one_line(run_dir, tmp_path, case, fragment):
    run, _, _ = run_dir
    checkpoint = str(run / "checkpoints" / "ckpt-5")
    out = ["--output_dir", str(tmp_path / "out")]
    if case == "no_config":
        bare = tmp_path / "bare"
        (bare / "checkpoints").mkdir(parents=True)
        args = ["--model_dir", str(bare)]
    else:
        args = {
            "no_model_dir": ["--model_dir", str(tmp_path / "missing")],
            "no_checkpoint": ["--checkpoint", str(tmp_path / "ckpt-9"), "--config",
                              str(run / "config.yaml")] + out,
            # configs/model/tiny is another size than the checkpoint's model.
            "wrong_model": ["--checkpoint", checkpoint, "--config", "model/tiny"] + out,
        }[case]
    result = export_main(*args)
    assert_one_line_error(result, fragment)
    assert not (tmp_path / "out").exists()


def test_cli_help_documents_every_flag():
    result = export_cli("--help")
    assert result.returncode == 0 and "Traceback" not in result.stderr
    assert "TF Serving's `<base>/<version>/` layout" in result.stdout  # the module docstring
    for flag in ("model_dir", "checkpoint", "config", "output_dir", "version", "overwrite",
                 "with_examples", "with_tokenizer", "vocab_file", "lower_case", "max_seq_length",
                 "jit_compile", "serving_dtype", "transposed_feedforward"):
        assert re.search(rf"--(\[no\])?{flag}:", result.stdout), flag
