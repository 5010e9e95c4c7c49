"""The Colab notebooks in colab/: stored without outputs, linked from the README, and executed top
to bottom on the CPU with tiny parameters (papermill, in a kernel of this interpreter), with
assertions on the files and tables they produce. No network: the tests write small data in the
real layouts (GLUE TSV, SQuAD JSON) and tiny converted checkpoints, and point the notebooks'
parameters cell at them; cells that only make sense on Colab (install, Drive, GCS auth, the TPU
build of TensorFlow, the download of Google's checkpoint) skip themselves."""

import json
import os
import re
import sys
import time

import pytest
import tensorflow as tf

from tests.conftest import require
from tests.run_helpers import ONE_LAYER

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COLAB = os.path.join(REPO, "colab")
NOTEBOOKS = ("pretrain_on_tpu", "finetune_glue", "squad_and_serving")
BADGE = re.compile(r"\[!\[Open In Colab\]\(https://colab\.research\.google\.com/assets/"
                   r"colab-badge\.svg\)\]\(https://colab\.research\.google\.com/github/"
                   r"electra-tf/electra_tf/blob/main/colab/([\w.-]+\.ipynb)\)")
KERNEL = "electra-tf-notebook-tests"


def read_notebook(name):
    with open(os.path.join(COLAB, name + ".ipynb"), encoding="utf-8") as f:
        return json.load(f)


def parameters_cells(notebook):
    return [c for c in notebook["cells"] if "parameters" in c.get("metadata", {}).get("tags", [])]


# ---------------------------------------------------------------------------------------------
# Stored notebooks


def test_the_three_notebooks_and_nothing_else():
    stored = sorted(n[:-len(".ipynb")] for n in os.listdir(COLAB) if n.endswith(".ipynb"))
    assert stored == sorted(NOTEBOOKS)


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_stored_notebook_has_no_outputs_and_one_parameters_cell(name):
    notebook = read_notebook(name)
    assert notebook["nbformat"] == 4
    assert notebook["metadata"]["kernelspec"]["name"] == "python3"
    code = [c for c in notebook["cells"] if c["cell_type"] == "code"]
    for cell in code:
        source = "".join(cell["source"])
        assert cell["outputs"] == [], f"{name}: a cell has outputs: {source[:80]!r}"
        assert cell["execution_count"] is None, f"{name}: a cell has an execution count"
        compile(source, f"{name}.ipynb", "exec")  # Colab-only branches too (CI skips them)
    params = parameters_cells(notebook)
    assert len(params) == 1 and params[0] is code[0], "the first code cell holds the parameters"
    # One place for the repository's address, used by the install cell.
    sources = "".join("".join(c["source"]) for c in code)
    assert sources.count("https://github.com/electra-tf/electra_tf") == 1


def test_every_notebook_has_a_colab_badge_in_both_readmes():
    for readme in ("README.md", os.path.join("colab", "README.md")):
        with open(os.path.join(REPO, readme), encoding="utf-8") as f:
            linked = BADGE.findall(f.read())
        assert sorted(linked) == sorted(n + ".ipynb" for n in NOTEBOOKS), readme
        for name in linked:
            assert os.path.isfile(os.path.join(COLAB, name)), f"{readme} links a missing {name}"


# ---------------------------------------------------------------------------------------------
# Executed notebooks


@pytest.fixture(scope="module")
def kernel(tmp_path_factory):
    """A Jupyter kernel spec for this interpreter, quiet TensorFlow, the working tree importable."""
    require("papermill")
    require("ipykernel")
    require("matplotlib")
    directory = tmp_path_factory.mktemp("jupyter")
    spec_dir = directory / "kernels" / KERNEL
    spec_dir.mkdir(parents=True)
    env = {"TF_CPP_MIN_LOG_LEVEL": "2", "CUDA_VISIBLE_DEVICES": "",
           "PYTHONPATH": os.pathsep.join(filter(None, [REPO, os.environ.get("PYTHONPATH")]))}
    (spec_dir / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "electra_tf tests", "language": "python", "env": env}))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("JUPYTER_PATH", os.pathsep.join(
            filter(None, [str(directory), os.environ.get("JUPYTER_PATH")])))
        yield KERNEL


def execute(name, parameters, cwd):
    """Runs colab/<name>.ipynb in cwd with the parameters; returns the executed notebook."""
    import papermill

    path = os.path.join(COLAB, name + ".ipynb")
    unknown = set(parameters) - set(papermill.inspect_notebook(path))
    assert not unknown, f"{name}.ipynb has no parameters {sorted(unknown)}"
    output = os.path.join(cwd, name + ".executed.ipynb")
    started = time.time()
    try:
        papermill.execute_notebook(
            path, output, parameters=parameters,
            kernel_name=KERNEL, cwd=str(cwd), progress_bar=False, execution_timeout=600)
    except papermill.PapermillExecutionError as e:
        pytest.fail(f"{name}.ipynb failed in cell {e.exec_count}: {e.ename}: {e.evalue}\n"
                    + "\n".join(e.traceback)[-3000:])
    print(f"\n{name}.ipynb executed in {time.time() - started:.0f} s", file=sys.stderr)
    with open(output, encoding="utf-8") as f:
        return json.load(f)


def outputs(notebook, kind):
    """Texts of the executed notebook's outputs: 'stdout', 'stderr' or a MIME type."""
    found = []
    for cell in notebook["cells"]:
        for output in cell.get("outputs", []):
            if output["output_type"] == "stream" and output["name"] == kind:
                found.append("".join(output["text"]))
            elif kind in output.get("data", {}):
                data = output["data"][kind]
                found.append("".join(data) if isinstance(data, list) else data)
    return found


def markdown_tables(notebook):
    return [t for t in outputs(notebook, "text/markdown") if t.startswith("| ")]


def table_rows(table):
    """The rows of a Markdown table as lists of cells (header first, separator dropped)."""
    lines = [line for line in table.splitlines() if not line.startswith("|---")]
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in lines]


def read_csv(path):
    import csv

    with open(path, newline="") as f:
        return list(csv.reader(f))


def is_png(path):
    with open(path, "rb") as f:
        return f.read(8) == b"\x89PNG\r\n\x1a\n"


def saved_model_signatures(path):
    assert os.path.isfile(os.path.join(path, "saved_model.pb")), path
    import tensorflow_text  # noqa: F401  (serve_text models hold its ops)

    return sorted(tf.saved_model.load(path).signatures)


@pytest.mark.slow
def test_pretrain_on_tpu_notebook(kernel, tmp_path):
    model_dir = tmp_path / "run"
    notebook = execute("pretrain_on_tpu", {
        "CONFIG": "pretrain/demo", "MODEL_DIR": str(model_dir), "TRAIN_STEPS": 30,
        "OVERRIDES": ["run.train_batch_size=8", "run.log_every_steps=10",
                      "run.eval_every_steps=15", "run.eval_batches=2",
                      "run.save_checkpoints_steps=15",
                      *(f"model.{size}" for size in ONE_LAYER)],
        "MIXED_PRECISION": "bf16", "SHOW_TENSORBOARD": False}, tmp_path)
    stdout = "\n".join(outputs(notebook, "stdout"))
    assert "not on Colab" in stdout and "TensorBoard not shown" in stdout
    assert "strategy: OneDeviceStrategy with 1 replica(s)" in stdout
    assert "finished at step 30" in stdout
    # The demo corpus was built in the working directory, the run went to MODEL_DIR.
    assert (tmp_path / "electra_demo_corpus" / "data" / "vocab.txt").is_file()
    assert tf.train.latest_checkpoint(str(model_dir / "checkpoints")).endswith("ckpt-30")
    assert saved_model_signatures(str(model_dir / "export" / "30")) == [
        "serve_examples", "serving_default"]
    assert "serve_text" in saved_model_signatures(str(model_dir / "export_text" / "30"))
    assert stdout.count("p(replaced):") == 2
    # Curves and the held-out table: evaluations at steps 15 and 30.
    assert is_png(model_dir / "pretraining_curves.png")
    assert outputs(notebook, "image/png"), "the plot is shown in the notebook"
    rows = read_csv(model_dir / "heldout_metrics.csv")
    assert rows[0][:2] == ["step", "disc_auc"] and [r[0] for r in rows[1:]] == ["15", "30"]
    assert all(0.0 <= float(r[1]) <= 1.0 for r in rows[1:])
    [table] = markdown_tables(notebook)
    assert table_rows(table)[1:] == rows[1:]


@pytest.fixture(scope="module")
def converted_tiny_model(tmp_path_factory):
    """A converted (random) tiny ELECTRA whose vocabulary has the words of the GLUE and SQuAD
    fixtures, as convert_checkpoint writes it: config.yaml, checkpoints/, vocab.txt."""
    from electra_tf.convert_checkpoint import write_electra_tf
    from electra_tf.models import ElectraPretrainer
    from tests.finetuning.helpers import SPECIALS, TOPIC_A, TOPIC_B
    from tests.models.helpers import objective, tiny_model_config
    from tests.test_run_finetuning import WORDS

    root = tmp_path_factory.mktemp("converted")
    tokens = SPECIALS + TOPIC_A + TOPIC_B + WORDS
    (root / "vocab.txt").write_text("".join(t + "\n" for t in tokens))
    pretrainer = ElectraPretrainer(tiny_model_config(vocab_size=len(tokens)),
                                   objective(cls_token_id=2, sep_token_id=3, mask_token_id=4))
    write_electra_tf(pretrainer, str(root), str(root / "vocab.txt"))
    return str(root)


@pytest.mark.slow
def test_finetune_glue_notebook(kernel, converted_tiny_model, tmp_path):
    from tests.test_run_finetuning import write_rte

    write_rte(tmp_path / "glue" / "RTE", n_train=24, n_dev=10)
    model_dir = tmp_path / "rte"
    notebook = execute("finetune_glue", {
        "TASK": "glue/rte", "INIT_CHECKPOINT": converted_tiny_model,
        "DATA_DIR": str(tmp_path / "glue"), "MODEL_DIR": str(model_dir), "NUM_TRIALS": 2,
        "OVERRIDES": ["finetune.train_batch_size=8", "finetune.eval_batch_size=8",
                      "finetune.max_seq_length=16", "finetune.num_train_epochs=2"]}, tmp_path)
    stdout = "\n".join(outputs(notebook, "stdout"))
    assert f"fine-tuning from {converted_tiny_model}" in stdout  # no download
    assert "discriminator: 2 layers, hidden 32" in stdout  # electra_tf.load
    assert "glue/rte: 24 training examples, dev 10" in stdout
    assert "glue/rte: 2 trial(s)" in stdout  # the library's closing report
    # keras-hub's TextClassifier.from_preset of the converted preset is ours, on raw pairs
    assert "ElectraTextClassifier over ElectraBackbone: P(not_entailment)" in stdout
    report = json.loads((model_dir / "report.json").read_text())
    assert report["status"] == "finished" and len(report["dev"]["dev"]["values"]) == 2
    for k in range(2):
        trial = json.loads((model_dir / f"trial_{k}" / "results.json").read_text())
        assert trial["steps"] == 6 and len(trial["history"]) == 2  # ceil(24 / 8) x 2 epochs
        assert "serve_text" in saved_model_signatures(trial["export"])
    # The results table: one row per trial and a median row, in the notebook and results.csv.
    rows = read_csv(model_dir / "results.csv")
    assert rows[0][:5] == ["trial", "seed", "split", "steps", "dev accuracy"]
    assert [r[0] for r in rows[1:]] == ["0", "1", "median"]
    values = report["dev"]["dev"]["values"]
    assert [float(r[4]) for r in rows[1:3]] == pytest.approx(values, abs=0.006)
    [table] = markdown_tables(notebook)
    assert table_rows(table)[1:] == rows[1:]
    assert is_png(model_dir / "results.png") and outputs(notebook, "image/png")
    # The exported classifier answered five dev pairs with RTE's labels.
    predictions = re.findall(r"predicted '(\w+)'", stdout)
    assert len(predictions) == 5 and set(predictions) <= {"entailment", "not_entailment"}


@pytest.mark.slow
def test_squad_and_serving_notebook(kernel, converted_tiny_model, tmp_path):
    from tests.finetuning.squad_helpers import write_squad

    data = write_squad(tmp_path / "squad", n_train=64, n_dev=16)
    model_dir = tmp_path / "squad_run"
    notebook = execute("squad_and_serving", {
        "TASK": "squad/v1.1", "INIT_CHECKPOINT": converted_tiny_model,
        "TRAIN_FILE": os.path.join(data, "train.json"), "DEV_FILE": os.path.join(data, "dev.json"),
        "MODEL_DIR": str(model_dir), "MODEL_NAME": "qa",
        "OVERRIDES": ["finetune.max_seq_length=48", "qa.doc_stride=16", "qa.max_query_length=8",
                      "qa.beam_size=8", "finetune.train_batch_size=16",
                      "finetune.eval_batch_size=64", "finetune.num_train_epochs=1"]}, tmp_path)
    stdout = "\n".join(outputs(notebook, "stdout"))
    assert f"fine-tuning from {converted_tiny_model}" in stdout
    assert "squad/v1.1: 64 training questions, 16 dev questions" in stdout
    report = json.loads((model_dir / "report.json").read_text())
    assert report["status"] == "finished"
    [trial] = report["trial_results"]
    predictions = json.loads((model_dir / "predictions" / "dev" / "predictions.json").read_text())
    assert len(predictions) == 16
    # The dev scores table, in the notebook and results.csv.
    rows = read_csv(model_dir / "results.csv")
    assert [r[0] for r in rows[1:]] == ["exact_match", "f1"]
    assert float(rows[2][1]) == pytest.approx(trial["dev"]["dev"]["last"]["f1"], abs=0.006)
    scores_table, answers_table = markdown_tables(notebook)
    assert table_rows(scores_table)[1:] == rows[1:]
    # The SavedModel of the run answered both questions with a piece of the context.
    assert saved_model_signatures(trial["export"]) == [
        "serve_examples", "serve_text", "serving_default"]
    answers = read_csv(model_dir / "answers.csv")
    assert answers[0] == ["question", "answer", "score", "answerable_logit"] and len(answers) == 3
    assert all(row[1] and row[1] in "Ada Lovelace wrote the first published algorithm for "
               "Charles Babbage's Analytical Engine, a machine he proposed in 1837."
               for row in answers[1:])
    assert [r[:2] for r in table_rows(answers_table)[1:]] == [r[:2] for r in answers[1:]]
    # The stock-server export (integer signatures only) in TF Serving's <base>/<version> layout.
    assert saved_model_signatures(str(model_dir / "serving" / "qa" / "1")) == [
        "serve_examples", "serving_default"]
    assert f"source={model_dir / 'serving' / 'qa'},target=/models/qa" in stdout
    # REST bodies, answered as the server would: rows -> predictions, columns -> outputs.
    assert stdout.count("curl -X POST http://localhost:8501/v1/models/qa:predict -d") == 2
    rest = re.search(r'-> (\{"predictions": .*\})\n', stdout)
    assert [p["answer"] for p in json.loads(rest.group(1))["predictions"]] == [
        r[1] for r in answers[1:]]
    assert "'start_top_index': '(2, 8) values'" in stdout  # two windows, beam of 8
    # gRPC: the PredictRequest where tensorflow-serving-api is installed, a clean skip elsewhere.
    try:
        from tensorflow_serving.apis import predict_pb2  # noqa: F401
    except ImportError:
        assert "tensorflow-serving-api is not installed" in stdout
    else:
        assert 'name: "qa"' in stdout and 'signature_name: "serving_default"' in stdout
        assert "-> PredictResponse: {" in stdout
