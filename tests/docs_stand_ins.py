"""The tiny stand-ins the docs' code runs on in tests/test_docs_run.py, declared once.

The docs name data a test machine cannot have (a corpus, GLUE, Google's release, SQuAD) and
recipes that train for days. Every block runs as written, in one working directory shared by
the docs in `ORDER`, with three kinds of stand-in:

- INPUTS: the paths the docs read and no block writes, made the first time a command or block
  names them: tiny files in the real layouts (the readers' own tests use the same writers);
- SHRINK: flags appended to each `python -m electra_tf.<command>` so that it trains a few
  steps of a tiny model (absl: a later flag wins; `--override` applies after the recipe's);
- PYTHON_PRELUDE: what a Python block uses and defines nowhere (`premises`, `questions`,
  `input_ids`), and the same shrink for the Python API's training calls.

Nothing else is changed: a command, a flag, a recipe or a keyword the docs show is run.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OLD_LAYOUT = os.path.join(REPO, "tests", "fixtures", "old_layout")

# The docs in the order a reader meets the work: each writes what the next ones read.
ORDER = ["README.md", "docs/tokenization.md", "docs/pretraining.md", "docs/conversion.md",
         "docs/finetuning.md", "docs/serving.md", "docs/small_models.md",
         "docs/faithfulness.md", "docs/pretraining_value.md", "docs/performance.md",
         "docs/bazel.md", "docs/architecture.md", "docs/layout.md"]

# ---- SHRINK: a few steps of a tiny model ----------------------------------------------------

TINY_MODEL = ["model.embedding_size=16", "model.hidden_size=32", "model.num_layers=1",
              "model.num_heads=2", "model.intermediate_size=64", "model.generator_fraction=0.5"]
PRETRAIN_SHRINK = [*TINY_MODEL, "run.train_batch_size=4", "run.gradient_accumulation_steps=1",
                   "run.eval_batches=1", "run.log_every_steps=1",
                   "optimizer.warmup_steps=1", "optimizer.train_steps=3",
                   "run.save_checkpoints_steps=3", "run.eval_every_steps=3"]
# batch 1: the GLUE fixtures have 1 to 3 training examples; length 16: the converted fixture's
# positions
FINETUNE_SHRINK = ["finetune.train_batch_size=1", "finetune.eval_batch_size=4",
                   "finetune.max_seq_length=16", "finetune.num_train_epochs=1",
                   "qa.doc_stride=8", "qa.max_query_length=4", "qa.beam_size=4"]
STUDY_SHRINK = ["--pretrain_config", "pretrain/demo", "--max_seq_length", "32",
                "--vocab_size", "300", "--labels", "16", "--seeds", "1",
                "--learning_rates", "1e-3", "--min_finetune_steps", "2",
                "--finetune_max_seq_length", "32",
                *[f"--override={o}" for o in TINY_MODEL + [
                    "run.train_batch_size=4", "run.eval_batches=1", "optimizer.warmup_steps=1",
                    "run.log_every_steps=2", "model.max_position_embeddings=64"]],
                "--finetune_override=finetune.train_batch_size=8"]


def _overrides(values):
    return [f"--override={v}" for v in values]


def _study(argv):
    """One checkpoint, at 2 steps of the demo model, with the schedule ending there (the doc's
    own --checkpoints list is parsed, and pretrained to, by tests/study/test_study.py)."""
    return [*STUDY_SHRINK, "--checkpoints=2", "--schedule_steps=2"]


def _flag(argv, name):
    for i, token in enumerate(argv):
        if token == name and i + 1 < len(argv):
            return argv[i + 1]
        if token.startswith(name + "="):
            return token.split("=", 1)[1]
    return None


def _fewer_trials(argv):
    trials = _flag(argv, "--num_trials")
    return [] if trials is None else [f"--num_trials={min(int(trials), 2)}"]


def _smaller_vocabulary(argv):
    size = _flag(argv, "--vocab_size")
    return [] if size is None else [f"--vocab_size={min(int(size), 300)}"]


# command -> argv -> flags appended to it
SHRINK = {
    # from --init_checkpoint (a converted stand-in, tiny already): the checkpoint's sizes
    "electra_tf.run_pretraining": lambda argv: _overrides(
        PRETRAIN_SHRINK[len(TINY_MODEL):] if _flag(argv, "--init_checkpoint") else PRETRAIN_SHRINK)
        + ([] if _flag(argv, "--train_steps") is None else ["--train_steps=3"]),
    "electra_tf.run_finetuning": lambda argv: (
        _overrides(FINETUNE_SHRINK) + _fewer_trials(argv)
        # the demonstration: its 4,000 coherence pairs at a larger batch, one seed per encoder
        + ([] if _flag(argv, "--task") else ["--override=finetune.train_batch_size=64",
                                              "--num_trials=1"])
        # from scratch (no --init_checkpoint): the recipe's model, made tiny
        + (_overrides(TINY_MODEL) if _flag(argv, "--task") and not _flag(
            argv, "--init_checkpoint") else [])),
    "electra_tf.build_vocab": _smaller_vocabulary,
    "electra_tf.study": _study,
    "electra_tf.study.variants": lambda argv: ["--train_steps=3", "--trials=1",
                                               "--train_pairs=40"],
    "electra_tf.study.batch_sizes": lambda argv: ["--config=pretrain/demo", "--sequences=384",
                                                  "--batches=64", "--held_out_sequences=64"],
}


def shrunk(module: str, argv: list[str]) -> list[str]:
    """The documented argv of `python -m module` with its stand-in flags appended."""
    extra = SHRINK.get(module)
    return [*argv, *(extra(argv) if extra else [])]


# ---- PYTHON_PRELUDE: names the blocks use and do not define ---------------------------------

# what a block uses (a regular expression) -> the lines that define it, before the block
SHRUNK_CALL = """\
def _shrunk(function, extra):
    def call(*args, overrides=(), **kwargs):
        if args and not isinstance(args[0], (str, list, tuple)):  # a job: it has them already
            return function(*args, **kwargs)
        if "train_steps" in kwargs:  # the demonstration's own steps, shrunk as the rest
            kwargs["train_steps"] = min(kwargs["train_steps"], 3)
        return function(*args, overrides=[*overrides, *extra], **kwargs)
    return call
"""
PYTHON_PRELUDE = {
    r"\bload_config\(": f"""\
import electra_tf.config as _config
_config.load_config = _shrunk(_config.load_config, {PRETRAIN_SHRINK!r})
""",
    r"\bpretrain\(|resolve_pretrain_job\(": f"""\
import electra_tf as _electra_tf
_electra_tf.pretrain = _shrunk(_electra_tf.pretrain, {PRETRAIN_SHRINK!r})
_electra_tf.resolve_pretrain_job = _shrunk(_electra_tf.resolve_pretrain_job, {PRETRAIN_SHRINK!r})
""",
    r"\bfinetune(_tasks)?\(": f"""\
import electra_tf.finetuning as _finetuning
_finetuning.finetune = _shrunk(_finetuning.finetune, {FINETUNE_SHRINK!r})
_finetuning.finetune_tasks = _shrunk(_finetuning.finetune_tasks, {FINETUNE_SHRINK!r})
""",
    # a documented fit of many steps: the same loop, a few steps of it
    r"\.fit\([^)]*steps_per_epoch=": """\
import keras as _keras
_fit = _keras.Model.fit
def _few_steps(self, *args, **kwargs):
    if kwargs.get("steps_per_epoch"):
        kwargs["steps_per_epoch"] = min(kwargs["steps_per_epoch"], 3)
    return _fit(self, *args, **kwargs)
_keras.Model.fit = _few_steps
""",
    r"\bpremises\b": """\
premises = ["A man sleeps.", "A dog runs.", "Two people talk.", "It rains."] * 8
hypotheses = ["Nobody sleeps.", "An animal moves.", "People are silent.", "It is wet."] * 8
labels = [2, 0, 2, 0] * 8
dev_premises, dev_hypotheses, dev_labels = premises[:2], hypotheses[:2], labels[:2]
""",
    r"\bquestions\b": """\
questions = ["Who wrote it?"]
contexts = ["It was written by Ada Lovelace in 1843."]
""",
    r"\btag_names=tags\b": """\
tags = ["O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC", "B-MISC", "I-MISC"]
""",
    r"\binput_ids, input_mask, segment_ids\)": """\
import numpy as _np
input_ids = _np.array([[2, 8, 9, 10, 3, 0]], _np.int32)
input_mask = _np.array([[1, 1, 1, 1, 1, 0]], _np.int32)
segment_ids = _np.zeros_like(input_ids)
""",
}


def python_prelude(block: str) -> str:
    """The stand-in lines a Python block needs, in PYTHON_PRELUDE's order."""
    code = "".join(code for pattern, code in PYTHON_PRELUDE.items() if re.search(pattern, block))
    return (SHRUNK_CALL if "_shrunk(" in code else "") + code


# ---- INPUTS: the data the docs read and no block writes -------------------------------------

WORDS = ("the a cat dog sat ran on mat park big small red blue house tree river road car "
         "book read wrote man woman child sleeps talks walks city town day night sun rain "
         "package library python perl tool network document develop utility").split()


def _sentence(rng, n=8):
    return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + "."


def _corpus(path):
    """One sentence a line, a blank line between documents: two files of 20 documents."""
    rng = random.Random(0)
    os.makedirs(path, exist_ok=True)
    for name in ("a.txt", "b.txt"):
        documents = ["\n".join(_sentence(rng) for _ in range(rng.randint(3, 6)))
                     for _ in range(20)]
        with open(os.path.join(path, name), "w") as f:
            f.write("\n\n".join(documents) + "\n")


def _glue(path):
    from tests.task_data.test_classification_data import GLUE_FIXTURES, write_glue

    for task in GLUE_FIXTURES:
        write_glue(path, task)


def _csv_task(path, columns, label_values, n=(24, 8, 8), sep=",", header=True):
    rng = random.Random(1)
    os.makedirs(path, exist_ok=True)
    for split, count in zip(("train", "dev", "test"), n):
        lines = [sep.join(columns)] if header else []
        for _ in range(count):
            lines.append(sep.join([_sentence(rng, 6) for _ in columns[:-1]]
                                  + [str(rng.choice(label_values))]))
        extension = "csv" if sep == "," else "tsv"
        with open(os.path.join(path, f"{split}.{extension}"), "w") as f:
            f.write("\n".join(lines) + "\n")


def _reviews(path):
    _csv_task(path, ["review", "stars"], [1, 2, 3, 4, 5])


def _pairs(path):
    _csv_task(path, ["0", "1", "2"], [0.0, 1.5, 2.5, 4.0, 5.0], sep="\t", header=False)


DEBIAN_LABELS = ["libs", "libdevel", "python", "doc", "perl", "devel", "utils", "net"]


def _sections(path, rows=40):
    """The Debian task's layout: text, label, package columns; the docs' 8 labels."""
    rng = random.Random(2)
    os.makedirs(path, exist_ok=True)
    for split, count in (("train", rows), ("dev", 16), ("test", 16)):
        with open(os.path.join(path, f"{split}.tsv"), "w") as f:
            f.write("text\tlabel\tpackage\n")
            for i in range(count):
                label = DEBIAN_LABELS[i % len(DEBIAN_LABELS)]
                f.write(f"{_sentence(rng)} {label}\t{label}\tp{split}{i}\n")


def _debian(path):
    """build_debian_corpus's layout: corpus/ and heldout/ text, sections/ task."""
    _corpus(os.path.join(path, "corpus"))
    _corpus(os.path.join(path, "heldout"))
    _sections(os.path.join(path, "sections"))


def _run_entry(module, argv, cwd):
    """What `python -m module argv` runs, in this process (tests/run_helpers.run_in_process);
    its stderr's tail in the error where it fails."""
    from tests.run_helpers import run_in_process

    result = run_in_process(argv, module=module, cwd=cwd)
    if result.returncode != 0:
        raise RuntimeError(f"stand-in `{module} {' '.join(argv)}` exited {result.returncode}:\n"
                           f"{result.stderr[-3000:]}")


def _study_records(part):
    """data/debian/records128 or heldout128, as the study builds them (its vocabulary)."""
    def make(path):
        debian = os.path.dirname(path)
        if not os.path.exists(os.path.join(debian, "corpus")):
            _debian(debian)
        vocab = os.path.join(debian, "vocab.txt")
        commands = [] if os.path.exists(vocab) else [[
            "electra_tf.build_vocab", "--corpus", os.path.join(debian, "corpus", "*.txt"),
            "--vocab_size", "300", "--output", vocab]]
        commands.append(["electra_tf.build_pretraining_dataset", "--corpus",
                         os.path.join(debian, part, "*.txt"), "--vocab_file", vocab,
                         "--output_dir", path, "--max_seq_length", "128"])
        for module, *argv in commands:
            _run_entry(module, argv, os.getcwd())
    return make


def _study_without_pretraining(path):
    """A study directory whose no-pretraining trials another study reuses (--random_from): the
    study the docs' levers compare with, shrunk like every documented study."""
    workdir = path[:-len("runs/levers/base")]
    argv = ["--data_dir", "data/debian", "--output_dir", path, "--objectives", "electra"]
    _run_entry("electra_tf.study.__main__", shrunk("electra_tf.study", argv), workdir)


def _squad(path, version):
    """The official JSON layout: the answer is a word of the context."""
    rng = random.Random(3)
    paragraphs = []
    for i in range(12):
        words = [rng.choice(WORDS) for _ in range(rng.randint(10, 20))]
        answer = rng.choice(words)
        start = f" {' '.join(words)} ".index(f" {answer} ")
        qa = {"id": f"q{i}", "question": f"what {rng.choice(WORDS)}?",
              "answers": [{"text": answer, "answer_start": start}]}
        if version == "v2.0":
            qa["is_impossible"] = False
        paragraphs.append({"context": " ".join(words), "qas": [qa]})
    with open(path, "w") as f:
        json.dump({"version": version, "data": [{"title": "t", "paragraphs": paragraphs}]}, f)


def _conll(path):
    import pathlib

    from tests.tagging_helpers import topic_sentences, write_conll

    os.makedirs(path, exist_ok=True)
    for split, seed in (("train", 0), ("dev", 1), ("test", 2)):
        write_conll(pathlib.Path(path, f"{split}.txt"), topic_sentences(12, seed=seed))


def _hf_directory(kind):
    def make(path):
        shutil.copytree(os.path.join(OLD_LAYOUT, "converted_hf", kind), path)
    return make


def _google_release(path):
    """Google's TF1 release layout (electra_small/: the checkpoint and vocab.txt), written from
    the Hugging Face fixture with the release's variable names."""
    import numpy as np
    import tensorflow as tf
    from safetensors.numpy import load_file

    from tests.convert.test_google import _tf1_name

    arrays = {}
    for kind, scope in (("discriminator", "electra"), ("generator", "generator")):
        tensors = load_file(os.path.join(OLD_LAYOUT, "converted_hf", kind, "model.safetensors"))
        for key, value in tensors.items():
            if scope == "generator" and (key.startswith("electra.embeddings.")
                                         or key == "generator_lm_head.weight"):
                continue  # the release shares electra/embeddings
            name, transpose = _tf1_name(key, scope)
            arrays[name] = value.T if transpose else value
    # the release's 512 positions (the fixture has 16): the rows it lacks, small and random
    table = arrays["electra/embeddings/position_embeddings"]
    extra = np.random.default_rng(0).normal(0, 0.02, (512 - len(table), table.shape[1]))
    arrays["electra/embeddings/position_embeddings"] = np.concatenate(
        [table, extra.astype(table.dtype)])
    arrays["global_step"] = np.int64(1000000)
    os.makedirs(path, exist_ok=True)
    names = sorted(arrays)
    tf.raw_ops.SaveV2(prefix=os.path.join(path, "electra_small"), tensor_names=names,
                      shape_and_slices=[""] * len(names),
                      tensors=[tf.constant(arrays[n]) for n in names])
    with open(os.path.join(path, "checkpoint"), "w") as f:
        f.write('model_checkpoint_path: "electra_small"\n')
    shutil.copy(os.path.join(OLD_LAYOUT, "converted_hf", "discriminator", "vocab.txt"), path)


def _converted(path):
    shutil.copytree(os.path.join(OLD_LAYOUT, "converted_electra_tf"), path)


def _checkpoint_of_recipe(path):
    """ckpts/ckpt-1000: an untrained pretrainer of pretrain/electra_small, as run_pretraining
    saves it (what export_savedmodel --checkpoint --config reads)."""
    import tensorflow as tf

    from electra_tf.config import load_config
    from electra_tf.models import ElectraPretrainer
    from electra_tf.training.checkpointing import weights_by_path

    config = load_config("pretrain/electra_small")
    model = ElectraPretrainer(config.model, config.objective)  # built by its constructor
    checkpoint = tf.train.Checkpoint(weights=weights_by_path(model))
    tf.train.CheckpointManager(checkpoint, os.path.dirname(path), max_to_keep=1).save(
        checkpoint_number=int(path.rsplit("-", 1)[1]))


# path named by the docs -> maker(absolute path); the first whose key starts a token is made
INPUTS = {
    "text": _corpus,
    "glue_data": _glue,
    "reviews": _reviews,
    "pairs": _pairs,
    "sections_2000": lambda path: _sections(path, rows=40),
    "data/debian/records128": _study_records("corpus"),
    "data/debian/heldout128": _study_records("heldout"),
    "data/debian": _debian,
    "runs/levers/base": _study_without_pretraining,
    "train-v2.0.json": lambda path: _squad(path, "v2.0"),
    "dev-v2.0.json": lambda path: _squad(path, "v2.0"),
    "conll2000": _conll,
    "electra_small": _google_release,
    "disc": _hf_directory("discriminator"),
    "gen": _hf_directory("generator"),
    "electra-small-discriminator": _hf_directory("discriminator"),
    "electra-small-generator": _hf_directory("generator"),
    "converted/electra_small": _converted,
    "presets/small": lambda path: shutil.copytree(os.path.join(OLD_LAYOUT, "converted_keras_hub"),
                                                  path),
    "ckpts/ckpt-1000": _checkpoint_of_recipe,
}


def named_inputs(text: str) -> list[str]:
    """The INPUTS keys that `text` (a command's tokens, a block) names as a path."""
    found = []
    for key in INPUTS:
        if re.search(rf"(?<![\w/.-]){re.escape(key)}(?![\w-])", text):
            found.append(key)
    return found


def make_inputs(text: str, workdir: str) -> list[str]:
    """Makes, under `workdir`, every input `text` names that is not there yet; returns them."""
    made = []
    for key in named_inputs(text):
        path = os.path.join(workdir, key)
        exists = os.path.exists(path) or os.path.exists(path + ".index")
        if not exists:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            INPUTS[key](path)
            made.append(key)
    return made
