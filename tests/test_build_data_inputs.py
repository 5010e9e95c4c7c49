"""Bad corpora and output directories as a new user meets them: one `error:` line, nothing
written; and the opt-in replacement of bytes that are not UTF-8, counted."""

import json

from tests.test_build_commands import SPECIALS, WORDS, run_main

BUILD = "electra_tf.build_pretraining_dataset"


def write_corpus(directory, latin1_line=False):
    directory.mkdir()
    good = "The cat sat on the mat.\nA dog ran far.\n\n" * 20
    (directory / "a.txt").write_text(good, encoding="utf-8")
    bad = good.encode("utf-8")
    if latin1_line:  # "café" in Latin-1: 0xE9 cannot start a UTF-8 sequence here
        bad = bad[:100] + "The café sat.\n".encode("latin-1") + bad[100:]
    (directory / "b.txt").write_bytes(bad)
    return bad.index(b"\xe9") if latin1_line else None


def test_bad_inputs_end_in_one_error_line(tmp_path):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("".join(t + "\n" for t in SPECIALS + WORDS), encoding="utf-8")
    latin1 = tmp_path / "latin1"
    offset = write_corpus(latin1, latin1_line=True)
    good = tmp_path / "good"
    write_corpus(good)
    a_file = tmp_path / "a_file"
    a_file.write_text("mine")
    duplicated = tmp_path / "duplicated.txt"
    duplicated.write_text("".join(t + "\n" for t in SPECIALS + WORDS + ["cat"]), encoding="utf-8")
    cases = {  # name: (arguments, texts the message must contain)
        "not UTF-8": ([latin1, vocab, tmp_path / "o1"],
                      [f"{latin1 / 'b.txt'}: byte {offset}", "not UTF-8",
                       "--replace_invalid_utf8"]),
        "output is a file": ([good, vocab, a_file], [str(a_file), "is an existing file"]),
        "duplicated token": ([good, duplicated, tmp_path / "o3"],
                             ["'cat' on lines 7, 17"]),
    }
    for name, ((corpus, vocab_file, output), fragments) in cases.items():
        code, _, stderr = run_main(BUILD, "--corpus", corpus, "--vocab_file", vocab_file,
                                   "--output_dir", output, "--max_seq_length", 16,
                                   "--num_processes", 1)
        assert code != 0, name
        assert "Traceback" not in stderr, (name, stderr[-3000:])
        errors = [line for line in stderr.splitlines() if line.startswith("error:")]
        assert len(errors) == 1, (name, stderr[-3000:])
        for expected in fragments:
            assert expected in errors[0], (name, errors[0])
    assert not (tmp_path / "o1").exists() and not (tmp_path / "o3").exists()
    assert a_file.read_text() == "mine"


def test_invalid_utf8_is_replaced_and_counted_when_asked(tmp_path):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("".join(t + "\n" for t in SPECIALS + WORDS), encoding="utf-8")
    write_corpus(tmp_path / "latin1", latin1_line=True)
    out = tmp_path / "out"
    code, _, stderr = run_main(BUILD, "--corpus", tmp_path / "latin1", "--vocab_file", vocab,
                               "--output_dir", out, "--max_seq_length", 16,
                               "--num_processes", 1, "--replace_invalid_utf8")
    assert code == 0, stderr[-3000:]
    assert "1 lines held bytes that are not UTF-8" in stderr
    assert json.loads((out / "metadata.json").read_text())["invalid_utf8_lines"] == 1
