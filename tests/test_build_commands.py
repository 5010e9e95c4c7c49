"""The data-building commands as a user runs them: exit codes, outputs, one-line errors."""

import os
import subprocess
import sys

import pytest

from tests.text.test_vocab_learning import random_word_lines
from tests.run_helpers import run_in_process

TIMEOUT_S = 240
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
WORDS = ["the", "cat", "sat", "on", "mat", "a", "dog", "ran", "far", ".", ","]


def start(module, *args):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    return subprocess.Popen([sys.executable, "-m", module, *map(str, args)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(process):
    stdout, stderr = process.communicate(timeout=TIMEOUT_S)
    return process.returncode, stdout, stderr


def run(module, *args):
    return finish(start(module, *args))


def run_main(module, *args):
    """The command's main in this process: (exit status, stdout, stderr) as `run` gives them."""
    result = run_in_process(args, module=module)
    return result.returncode, result.stdout, result.stderr


@pytest.fixture()
def corpus(tmp_path):
    directory = tmp_path / "corpus"
    directory.mkdir()
    docs = ["The cat sat on the mat.\nA dog ran far.\n", "The dog sat.\nThe cat ran, far.\n"]
    for i in range(3):
        (directory / f"part{i}.txt").write_text("\n".join(docs * 10), encoding="utf-8")
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("".join(t + "\n" for t in SPECIALS + WORDS), encoding="utf-8")
    return directory, vocab


@pytest.mark.slow
def test_build_pretraining_dataset_command(corpus, tmp_path):
    directory, vocab = corpus
    out = tmp_path / "out"
    code, stdout, stderr = run("electra_tf.build_pretraining_dataset", "--corpus",
                               f"{directory}/*.txt", "--vocab_file", vocab, "--output_dir", out,
                               "--max_seq_length", 16, "--num_processes", 1)
    assert code == 0, stderr[-3000:]
    assert (out / "pretrain_data.tfrecord-0-of-1").stat().st_size > 0
    assert (out / "metadata.json").exists()
    assert "60 documents" in stdout and "examples" in stdout and "1 shards in" in stdout
    assert "single-segment share" in stdout
    assert "Traceback" not in stderr


@pytest.mark.slow
def test_build_vocab_command(corpus, tmp_path):
    directory, _ = corpus
    output = tmp_path / "learned" / "vocab.txt"
    code, stdout, stderr = run("electra_tf.build_vocab", "--corpus", directory,
                               "--vocab_size", 40, "--output", output)
    assert code == 0, stderr[-3000:]
    tokens = output.read_text(encoding="utf-8").splitlines()
    assert tokens[:5] == SPECIALS and {"cat", "dog", "."} <= set(tokens)
    assert len(tokens) == len(set(tokens)) == 40
    assert stdout.strip() == f"wrote a vocabulary of 40 tokens to {output}"


def test_build_vocab_says_when_the_corpus_is_too_small_and_is_deterministic(tmp_path):
    directory = tmp_path / "corpus"
    directory.mkdir()
    (directory / "words.txt").write_text("\n".join(random_word_lines(50)), encoding="utf-8")
    outputs = {name: tmp_path / f"{name}.txt" for name in ("first", "again", "min2", "min0")}
    min_frequency = {"first": [], "again": [], "min2": ["--min_frequency", 2],
                     "min0": ["--min_frequency", 0]}
    results = {name: run_main("electra_tf.build_vocab", "--corpus", directory, "--vocab_size", 1000,
                              "--output", output, *min_frequency[name])
               for name, output in outputs.items()}
    for name in ("first", "again", "min2"):
        assert results[name][0] == 0, results[name][2][-3000:]
    sizes = {name: len(outputs[name].read_text(encoding="utf-8").splitlines())
             for name in ("first", "min2")}
    assert sizes["first"] < sizes["min2"] < 1000
    assert (f"wrote a vocabulary of {sizes['first']} tokens to {outputs['first']} (fewer than the "
            "1,000 asked: no pair of pieces is seen --min_frequency=10 times any more") in \
        results["first"][1]
    assert "fewer than the 1000 asked" in results["first"][2]  # the library's warning, logged
    assert "--min_frequency=2 times" in results["min2"][1]
    assert outputs["first"].read_bytes() == outputs["again"].read_bytes()
    code, _, stderr = results["min0"]
    assert code != 0 and "Traceback" not in stderr and not outputs["min0"].exists()
    assert stderr.strip().splitlines()[-1] == "error: --min_frequency must be at least 1, got 0"


def test_bad_inputs_get_one_clear_message(corpus, tmp_path):
    directory, vocab = corpus
    no_mask = tmp_path / "no_mask.txt"
    no_mask.write_text("".join(t + "\n" for t in SPECIALS + WORDS if t != "[MASK]"))
    existing = tmp_path / "existing"
    existing.mkdir()
    (existing / "pretrain_data.tfrecord-0-of-1").write_bytes(b"earlier data")
    build = "electra_tf.build_pretraining_dataset"
    cases = {  # name: (command, text the message must contain)
        "glob matching nothing": (
            [build, "--corpus", tmp_path / "nothing*.txt", "--vocab_file", vocab,
             "--output_dir", tmp_path / "o1"], "matches no files"),
        "vocab lacking [MASK]": (
            [build, "--corpus", directory, "--vocab_file", no_mask, "--output_dir",
             tmp_path / "o2"], "lacks [MASK]"),
        "existing output": (
            [build, "--corpus", directory, "--vocab_file", vocab, "--output_dir", existing],
            "--overwrite"),
        "sequence too short": (
            [build, "--corpus", directory, "--vocab_file", vocab, "--output_dir",
             tmp_path / "o3", "--max_seq_length", 4], "max_seq_length"),
        "vocab corpus missing": (
            ["electra_tf.build_vocab", "--corpus", tmp_path / "missing.txt", "--output",
             tmp_path / "v.txt"], "not found"),
    }
    for name, (command, expected) in cases.items():
        code, stdout, stderr = run_main(*command)
        assert code != 0, name
        assert "Traceback" not in stderr, (name, stderr[-3000:])
        errors = [l for l in stderr.splitlines() if l.startswith("error:")]
        assert len(errors) == 1 and expected in errors[0], (name, stderr[-3000:])
    assert (existing / "pretrain_data.tfrecord-0-of-1").read_bytes() == b"earlier data"
    assert not (tmp_path / "o1").exists() and not (tmp_path / "o2").exists()


def test_build_vocab_help_documents_every_flag():
    from electra_tf.text.vocab_learning import DEFAULT_MIN_FREQUENCY

    code, stdout, stderr = run("electra_tf.build_vocab", "--help")
    assert code == 0 and "Traceback" not in stderr and "tokenizers" in stdout
    for flag in ("--corpus", "--tfds_name", "--tfds_split", "--tfds_text_key", "--tfds_data_dir",
                 "--vocab_size", "--min_frequency", "--output", "--[no]lower_case",
                 "--[no]strip_accents", "--[no]overwrite", "--model_type",
                 "--sentencepiece_algorithm", "--character_coverage"):
        assert flag in stdout, flag
    assert f"(default: '{DEFAULT_MIN_FREQUENCY}')" in stdout.split("--min_frequency: ")[1]


def test_help_documents_every_flag():
    code, stdout, stderr = run("electra_tf.build_pretraining_dataset", "--help")
    assert code == 0 and "Traceback" not in stderr  # absl's own app.run exits 1 here
    for flag in ("--corpus", "--tfds_name", "--tfds_split", "--tfds_text_key", "--tfds_data_dir",
                 "--vocab_file", "--output_dir", "--max_seq_length", "--num_processes",
                 "--num_shards", "--[no]lower_case", "--[no]strip_accents", "--seed",
                 "--[no]overwrite"):
        assert flag in stdout, flag
