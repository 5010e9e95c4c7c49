"""Pretraining-data building: corpus reading, the original's packing rules, shards, metadata.

The fixture corpus gives every document words of its own ("d17w3" only occurs in document 17),
so the document a token came from can be read off its id.
"""

import filecmp
import glob
import hashlib
import json
import os
import random
from collections import Counter

import numpy as np
import pytest

from electra_tf.pretraining_data import corpus as corpus_lib
from electra_tf.pretraining_data import build_plan
from electra_tf.pretraining_data import example_packing as packing
from electra_tf.pretraining_data import builder as pd
from electra_tf.pretraining_data import pretraining_records as records
from electra_tf.pretraining_data.corpus import CorpusError

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
PAD, CLS, SEP = 0, 2, 3
MAX_LEN = 32


# ---------------------------------------------------------------------------------------------
# Fixtures


def write_fixture_corpus(directory, num_files=4, docs_per_file=25, seed=0):
    """Text files of documents with private words; returns (vocab tokens, documents)."""
    rng = random.Random(seed)
    os.makedirs(directory, exist_ok=True)
    documents = []
    for f in range(num_files):
        chunks = []
        for _ in range(docs_per_file):
            doc = len(documents)
            lines = [" ".join(f"D{doc}w{rng.randrange(6)}" for _ in range(rng.randint(1, 14)))
                     for _ in range(rng.randint(1, 15))]
            documents.append(lines)
            # Separators vary: blank lines, runs of them, whitespace-only lines.
            chunks.append("\n".join(lines) + rng.choice(["\n\n", "\n\n\n", "\n  \t\n"]))
        with open(os.path.join(directory, f"part-{f}.txt"), "w", encoding="utf-8") as out:
            out.write("".join(chunks))
    vocab = SPECIALS + [f"d{d}w{k}" for d in range(len(documents)) for k in range(6)]
    return vocab, documents


@pytest.fixture(scope="module")
def fixture(tmp_path_factory):
    root = tmp_path_factory.mktemp("pretraining_data")
    vocab, documents = write_fixture_corpus(str(root / "corpus"))
    vocab_file = root / "vocab.txt"
    vocab_file.write_text("".join(t + "\n" for t in vocab), encoding="utf-8")
    return {"root": root, "corpus": str(root / "corpus"), "vocab_file": str(vocab_file),
            "vocab": vocab, "documents": documents}


def build(fixture, output_dir, **kwargs):
    settings = dict(vocab_file=fixture["vocab_file"], corpus=fixture["corpus"],
                    max_seq_length=MAX_LEN, num_processes=1, seed=0)
    settings.update(kwargs)
    return pd.build_pretraining_data(output_dir=str(output_dir), **settings)


def read_all(shards, max_len=MAX_LEN):
    return [{k: v for k, v in example.items()}
            for example in records.read_examples(shards, max_len).as_numpy_iterator()]


def document_of(token_id, vocab):
    return int(vocab[token_id][1:].split("w")[0])


@pytest.fixture(scope="module")
def built(fixture):
    out = fixture["root"] / "built"
    summary = build(fixture, out)
    return summary, read_all(summary.shards)


class ScriptedRng:
    """random.Random stand-in returning scripted values, failing if asked for more."""

    def __init__(self, randoms, randints=()):
        self.randoms, self.randints = list(randoms), list(randints)

    def random(self):
        return self.randoms.pop(0)

    def randint(self, low, high):
        value = self.randints.pop(0)
        assert low <= value <= high
        return value


def line(start, length):
    return list(range(start, start + length))


# ---------------------------------------------------------------------------------------------
# The packing rules, step by step (reference notes 4.1)


def test_segment_split_follows_the_original_rule():
    # target 32 -> A's target (32 - 3) // 2 = 14. Random draws in order: single-segment coin
    # (0.5: no), coin for line 3 (0.4 < 0.5: A), short-target coin after the example (0.9: no).
    rng = ScriptedRng([0.5, 0.4, 0.9])
    packer = packing.ExamplePacker(32, cls_id=2, sep_id=3, rng=rng)
    lines = [line(100, 5), line(200, 5), line(300, 5), line(400, 5), line(500, 20)]
    [(ids, segments)] = packer.add_document(lines)
    a = line(100, 5) + line(200, 5) + line(300, 5)  # 5, 5 fit under 14; 5 more on the coin
    b = (line(400, 5) + line(500, 20))[:32 - len(a) - 3]  # B cut to max - len(A) - 3 = 14
    assert ids == [2] + a + [3] + b + [3]
    assert segments == [0] * (len(a) + 2) + [1] * (len(b) + 1)
    assert len(ids) == 32 and rng.randoms == []
    assert packer.stats.discarded_tokens == 40 - 29
    assert packer.target_length == 32


def test_a_later_short_line_still_goes_to_segment_a():
    # The original's quirk: once B has started, a line that fits under A's target joins A.
    rng = ScriptedRng([0.5, 0.7, 0.9])  # not single; coin for line 3 says B; no short target
    packer = packing.ExamplePacker(32, cls_id=2, sep_id=3, rng=rng)
    [(ids, segments)] = packer.add_document([line(100, 5), line(200, 5), line(300, 8),
                                             line(400, 1)])
    assert ids == [2] + line(100, 5) + line(200, 5) + line(400, 1) + [3] + line(300, 8) + [3]
    assert segments == [0] * 13 + [1] * 9


def test_single_segment_example_takes_everything_into_a():
    rng = ScriptedRng([0.05, 0.9])  # single-segment coin < 0.1
    packer = packing.ExamplePacker(16, cls_id=2, sep_id=3, rng=rng)
    [(ids, segments)] = packer.add_document([line(100, 6), line(200, 6), line(300, 6)])
    assert ids == [2] + (line(100, 6) + line(200, 6) + line(300, 6))[:14] + [3]  # A cut to 14
    assert segments == [0] * 16
    assert packer.stats.single_segment_examples == 1 and packer.stats.discarded_tokens == 4


def test_overflow_is_discarded_not_carried_over():
    packer = packing.ExamplePacker(16, cls_id=2, sep_id=3, rng=random.Random(0))
    examples = packer.add_document([line(100, 40)])
    # The 40-token line fills one example (A cut to 16 - 2); the rest does not start another.
    assert [ids for ids, _ in examples] == [[2] + line(100, 14) + [3]]
    assert packer.stats.discarded_tokens == 26
    assert packer.add_document([line(500, 3)])[0][0] == [2, 500, 501, 502, 3]


def test_examples_are_emitted_at_the_target_and_at_document_ends():
    rng = ScriptedRng([0.5, 0.9, 0.5, 0.9, 0.5, 0.9])
    packer = packing.ExamplePacker(16, cls_id=2, sep_id=3, rng=rng)
    # 10 + 10 tokens reach the target 16 after line 2; line 3 is left for the document end.
    examples = packer.add_document([line(100, 10), line(200, 10), line(300, 3)])
    assert [ids[1] for ids, _ in examples] == [100, 300]
    # The next document starts a fresh example even though the last one was short.
    examples = packer.add_document([line(400, 2)])
    assert [ids for ids, _ in examples] == [[2, 400, 401, 3]]


def test_short_target_after_an_example():
    # Example 1 (lines 1-2, 34 tokens: A = 30 cut to 30, B cut to 0) is followed by a short
    # target 7; example 2 is emitted once 4 + 4 >= 7; line 5 is flushed at the document end.
    rng = ScriptedRng([0.5, 0.01, 0.5, 0.9, 0.5, 0.9], randints=[7])
    packer = packing.ExamplePacker(32, cls_id=2, sep_id=3, rng=rng)
    examples = packer.add_document([line(100, 30), line(200, 4), line(300, 4), line(400, 4),
                                    line(500, 4)])
    assert [len(ids) for ids, _ in examples] == [32, 1 + 4 + 1 + 4 + 1, 1 + 4 + 1]
    assert examples[1][0] == [2] + line(300, 4) + [3] + line(400, 4) + [3]
    assert packer.stats.short_target_examples == 1
    assert rng.randoms == [] and rng.randints == []


# ---------------------------------------------------------------------------------------------
# Statistics over many examples


def pack_one_token_lines(seed, num_lines=200_000, max_len=MAX_LEN):
    """One long document of 1-token lines, so an example holds exactly its target's tokens."""
    packer = packing.ExamplePacker(max_len, cls_id=2, sep_id=3, rng=random.Random(seed))
    examples = packer.add_document([[10 + i % 50] for i in range(num_lines)])
    return packer, examples


def test_single_segment_share_is_near_ten_percent():
    packer, examples = pack_one_token_lines(seed=1)
    # With 1-token lines every example has >= 5 lines and A's target is at most 14, so B is
    # non-empty unless the 10% coin made the example single-segment: the share is Binomial.
    n = len(examples)
    single = sum(1 for _, segments in examples if max(segments) == 0)
    assert n > 6000
    # sd = sqrt(0.1 * 0.9 / n) < 0.0039; the bound [0.08, 0.12] is more than 5 sd wide.
    assert 0.08 <= single / n <= 0.12
    assert single == packer.stats.single_segment_examples


def test_random_short_targets_appear_about_five_percent_of_the_time():
    packer, examples = pack_one_token_lines(seed=2)
    n = len(examples)
    lengths = [len(ids) for ids, _ in examples[:-1]]  # the last one ends with the document
    # A target t drawn from randint(5, 32) (prob. 0.05) gives an example of t + 3 positions
    # (t + 2 if single-segment), shorter than 32 when t <= 28: 24 of the 28 values.
    # Expected share 0.05 * 24 / 28 = 0.043, sd < 0.0026; the bound is about 5 sd each side.
    short = [length for length in lengths if length < MAX_LEN]
    assert 0.030 <= len(short) / n <= 0.056
    assert min(short) <= 10 and len(set(short)) >= 15  # spread over the range, not one value
    assert all(8 - 1 <= length <= MAX_LEN for length in lengths)
    assert 0.035 <= packer.stats.short_target_examples / n <= 0.065


# ---------------------------------------------------------------------------------------------
# Built shards


def test_examples_never_cross_documents_and_have_the_original_layout(fixture, built):
    summary, examples = built
    vocab = fixture["vocab"]
    assert len(examples) == summary.stats.examples > 100
    two_segment = 0
    for example in examples:
        ids, mask, segments = example["input_ids"], example["input_mask"], example["segment_ids"]
        assert ids.shape == mask.shape == segments.shape == (MAX_LEN,)
        assert ids.dtype == np.int64
        n = int(mask.sum())
        assert 3 <= n <= MAX_LEN and mask[:n].all() and not mask[n:].any()
        assert (ids[n:] == PAD).all() and (segments[n:] == 0).all()
        assert ids[0] == CLS and ids[n - 1] == SEP
        a_end = int((segments[:n] == 0).sum())  # segment 0 first, then segment 1
        assert (segments[:a_end] == 0).all() and (segments[a_end:n] == 1).all()
        assert ids[a_end - 1] == SEP
        sep_positions = set(np.flatnonzero(ids == SEP).tolist())
        assert sep_positions == {a_end - 1, n - 1}
        two_segment += a_end < n
        words = [int(t) for t in ids[:n] if t not in (CLS, SEP)]
        assert words and min(words) >= len(SPECIALS)
        assert len({document_of(t, vocab) for t in words}) == 1, "example crosses documents"
    assert 0 < two_segment < len(examples)


def test_every_corpus_token_is_written_or_counted_as_discarded(fixture, built):
    summary, examples = built
    vocab = fixture["vocab"]
    written = Counter()
    for example in examples:
        for t in example["input_ids"][example["input_mask"] == 1]:
            if t not in (CLS, SEP):
                written[document_of(int(t), vocab)] += 1
    expected = {d: sum(len(l.split()) for l in lines)
                for d, lines in enumerate(fixture["documents"])}
    stats = summary.stats
    assert stats.documents == len(fixture["documents"])
    assert stats.tokens == sum(expected.values())
    assert sum(written.values()) + stats.discarded_tokens == stats.tokens
    assert all(written[d] <= expected[d] for d in expected) and set(written) == set(expected)


def test_same_seed_same_bytes_other_seed_other_examples(fixture, tmp_path):
    first = build(fixture, tmp_path / "a", num_shards=2)
    second = build(fixture, tmp_path / "b", num_shards=2)
    other = build(fixture, tmp_path / "c", num_shards=2, seed=1)
    names = [os.path.basename(p) for p in first.shards]
    assert names == ["pretrain_data.tfrecord-0-of-2", "pretrain_data.tfrecord-1-of-2"]
    _, mismatch, errors = filecmp.cmpfiles(tmp_path / "a", tmp_path / "b",
                                           names + [records.METADATA_FILE], shallow=False)
    assert mismatch == [] and errors == []
    assert all(open(p, "rb").read() != open(q, "rb").read()
               for p, q in zip(first.shards, other.shards))
    assert first.stats.tokens == other.stats.tokens  # same text, packed differently


def test_refuses_to_overwrite_without_the_flag(fixture, tmp_path):
    out = tmp_path / "out"
    build(fixture, out, num_shards=3)
    before = {p: open(p, "rb").read() for p in glob.glob(str(out / "*"))}
    with pytest.raises(pd.DatasetBuildError, match="already holds.*--overwrite"):
        build(fixture, out, num_shards=2)
    assert {p: open(p, "rb").read() for p in glob.glob(str(out / "*"))} == before
    (out / "notes.txt").write_text("mine")
    build(fixture, out, num_shards=2, overwrite=True)
    # The old 3-shard files are gone (no mix of builds), a foreign file is left alone.
    assert sorted(os.listdir(out)) == sorted(["notes.txt", records.METADATA_FILE,
                                              "pretrain_data.tfrecord-0-of-2",
                                              "pretrain_data.tfrecord-1-of-2"])


def test_metadata_describes_the_build(fixture, built):
    summary, examples = built
    metadata = pd.load_metadata(summary.output_dir)
    with open(fixture["vocab_file"], "rb") as f:
        vocab_hash = hashlib.sha256(f.read()).hexdigest()
    assert metadata["max_seq_length"] == MAX_LEN
    assert metadata["vocab_size"] == len(fixture["vocab"])
    assert metadata["vocab_sha256"] == vocab_hash
    assert metadata["lower_case"] is True and metadata["strip_accents"] is True
    assert metadata["normalization"] == "bert"
    assert metadata["special_token_ids"] == {"pad": 0, "unk": 1, "cls": 2, "sep": 3, "mask": 4}
    assert metadata["features"] == {k: ["int64", MAX_LEN] for k in records.FEATURES}
    assert metadata["num_shards"] == len(metadata["shards"]) == len(summary.shards)
    assert sum(s["examples"] for s in metadata["shards"]) == metadata["examples"] == len(examples)
    assert metadata["documents"] == len(fixture["documents"])
    assert metadata["single_segment_examples"] == sum(
        1 for e in examples if e["segment_ids"].max() == 0)
    assert metadata["tokens"] == summary.stats.tokens
    with pytest.raises(pd.DatasetBuildError, match="no metadata.json"):
        pd.load_metadata(str(fixture["root"]))


def test_cased_build_is_recorded(fixture, tmp_path):
    summary = build(fixture, tmp_path / "cased", lower_case=False)
    metadata = pd.load_metadata(summary.output_dir)
    assert metadata["lower_case"] is False and metadata["strip_accents"] is False
    # The fixture's words are capitalised ("D3w1") and the vocabulary is lower-case.
    ids = np.concatenate([e["input_ids"] for e in read_all(summary.shards)])
    assert set(ids.tolist()) <= {PAD, 1, CLS, SEP}


@pytest.mark.slow
def test_several_processes_write_the_same_examples(fixture, tmp_path):
    # 1 KiB work units and 32 shards: 2 shard groups, so 2 processes have work.
    parallel = build(fixture, tmp_path / "p2", num_processes=2, num_shards=32, block_bytes=1024)
    serial = build(fixture, tmp_path / "p1", num_processes=1, num_shards=32, block_bytes=1024)
    one_shard = build(fixture, tmp_path / "p1s", num_processes=1, num_shards=1, block_bytes=1024)
    assert parallel.num_processes == 2 and len(parallel.shards) == 32
    assert pd.load_metadata(parallel.output_dir)["shard_groups"] == 2
    for p, q in zip(parallel.shards, serial.shards):
        assert filecmp.cmp(p, q, shallow=False)
    # Different shard counts distribute the same examples differently.
    key = lambda e: tuple(e["input_ids"].tolist()) + tuple(e["segment_ids"].tolist())
    assert sorted(map(key, read_all(parallel.shards))) == sorted(map(key, read_all(
        one_shard.shards)))


def test_small_corpus_gets_one_process_and_few_shards_by_default(fixture, tmp_path):
    # Starting a worker costs seconds: a corpus of a few KB is built in this process, into as
    # many shards as give each about 100 examples.
    summary = build(fixture, tmp_path / "auto", num_processes=None)
    assert summary.num_processes == 1
    corpus_bytes = pd.load_metadata(summary.output_dir)["corpus"]["bytes"]
    assert len(summary.shards) == build_plan.choose_num_shards(corpus_bytes, MAX_LEN) == 2
    assert summary.stats.examples / len(summary.shards) >= 50


def test_bad_settings_are_refused(fixture, tmp_path):
    with pytest.raises(pd.DatasetBuildError, match="max_seq_length"):
        build(fixture, tmp_path / "x", max_seq_length=4)
    with pytest.raises(pd.DatasetBuildError, match="max_seq_length"):
        build(fixture, tmp_path / "x", max_seq_length=513)
    with pytest.raises(CorpusError, match="matches no files"):
        build(fixture, tmp_path / "x", corpus=str(tmp_path / "*.nothing"))
    assert not (tmp_path / "x").exists()


# ---------------------------------------------------------------------------------------------
# Shards and work units


def test_shard_count_heuristic():
    mib = 1 << 20
    # 64 shards once the corpus gives each about 100 examples, then one per 16 MiB, at most 1000.
    assert build_plan.choose_num_shards(5 * mib, 128) == 64
    assert build_plan.choose_num_shards(mib, 128) == 16  # 1 MiB: ~1,600 examples
    assert build_plan.choose_num_shards(10 * 1024 * mib, 128) == 640
    assert build_plan.choose_num_shards(1024 * 1024 * mib, 128) == 1000
    assert build_plan.choose_num_shards(0, 128) == 1
    assert build_plan.choose_num_shards(5 * mib, 128, requested=7) == 7
    with pytest.raises(ValueError):
        build_plan.choose_num_shards(5 * mib, 128, requested=0)


def test_units_are_shuffled_and_dealt_to_groups_of_interleaved_shards():
    units = list(range(200))
    groups = build_plan.plan_shard_groups(units, num_shards=64, seed=0)
    assert len(groups) == 4  # at least 16 shards per group
    assert [g.shards for g in groups] == [tuple(range(g, 64, 4)) for g in range(4)]
    assert sorted(u for g in groups for u in g.units) == units
    assert [len(g.units) for g in groups] == [50] * 4
    for group in groups:  # each group samples the whole corpus, in random order
        assert min(group.units) < 20 and max(group.units) >= 180
        assert list(group.units) != sorted(group.units)
    assert build_plan.plan_shard_groups(units, 64, seed=0) == groups  # deterministic
    assert build_plan.plan_shard_groups(units, 64, seed=1) != groups
    assert len(build_plan.plan_shard_groups(units, 10_000, 0)) == build_plan.MAX_GROUPS
    assert len(build_plan.plan_shard_groups(units[:3], 1000, 0)) == 3  # no group without a unit
    assert len(build_plan.plan_shard_groups(units, 8, 0)) == 1


def test_shards_sample_the_whole_corpus_round_robin(fixture, tmp_path):
    summary = build(fixture, tmp_path / "rr", num_shards=4, block_bytes=512)
    vocab = fixture["vocab"]
    documents_per_shard = [
        [document_of(int(e["input_ids"][1]), vocab) for e in read_all([path])]
        for path in summary.shards]
    counts = [len(d) for d in documents_per_shard]
    assert max(counts) - min(counts) <= 1  # round-robin
    num_documents = len(fixture["documents"])
    for documents in documents_per_shard:
        # Every shard holds documents from every quarter of the corpus.
        assert {4 * d // num_documents for d in documents} == {0, 1, 2, 3}


# ---------------------------------------------------------------------------------------------
# Reading corpora


def test_read_documents_accepts_directories_globs_and_lists(tmp_path):
    (tmp_path / "a.txt").write_text("one\ntwo\n\n\nthree\n", encoding="utf-8")
    (tmp_path / "b.txt").write_text("  four  \r\n \t \r\nfive", encoding="utf-8")  # no final \n
    (tmp_path / ".hidden").write_text("secret\n")
    expected = [["one", "two"], ["three"], ["four"], ["five"]]
    assert list(corpus_lib.read_documents(str(tmp_path))) == expected
    assert list(corpus_lib.read_documents(str(tmp_path / "*.txt"))) == expected
    listed = f"{tmp_path / 'b.txt'}, {tmp_path / 'a.txt'}"
    assert list(corpus_lib.read_documents(listed)) == expected[2:] + expected[:2]


def test_read_documents_errors_are_clear(tmp_path):
    with pytest.raises(CorpusError, match="matches no files"):
        list(corpus_lib.read_documents(str(tmp_path / "*.txt")))
    with pytest.raises(CorpusError, match="not found"):
        list(corpus_lib.read_documents(str(tmp_path / "missing.txt")))
    with pytest.raises(CorpusError, match="holds no files"):
        list(corpus_lib.read_documents(str(tmp_path)))
    (tmp_path / "blank.txt").write_text("\n  \n\n")
    with pytest.raises(CorpusError, match="holds no text"):
        list(corpus_lib.read_documents(str(tmp_path)))
    with pytest.raises(CorpusError, match="holds no text"):
        corpus_lib.check_has_text([str(tmp_path / "blank.txt")])


def test_byte_blocks_read_every_document_exactly_once(tmp_path):
    rng = random.Random(3)
    parts = []
    for d in range(60):
        lines = [f"doc{d} line{i} " + "x" * rng.randrange(0, 40) for i in range(rng.randint(1, 9))]
        parts.append("\n".join(lines) + rng.choice(["\n\n", "\n\n\n", "\n \t\n", "\r\n\r\n"]))
    path = tmp_path / "corpus.txt"
    path.write_text("\n\n" + "".join(parts) + "last document without newline", encoding="utf-8")
    whole = list(corpus_lib.read_documents(str(path)))
    assert len(whole) == 61
    for block_bytes in (1, 2, 7, 64, 333, 4096, 1 << 20):
        blocks = corpus_lib.split_into_blocks([str(path)], block_bytes)
        assert len(blocks) == -(-os.path.getsize(path) // block_bytes)
        pieces = [doc for block in blocks for doc in corpus_lib.read_block_documents(block)]
        assert pieces == whole, block_bytes


@pytest.mark.slow
def test_embedded_corpus_is_substantial_and_deterministic(tmp_path):
    first = corpus_lib.write_embedded_corpus(str(tmp_path / "a"))
    second = corpus_lib.write_embedded_corpus(str(tmp_path / "b"))
    assert len(first) == 4
    assert all(filecmp.cmp(p, q, shallow=False) for p, q in zip(first, second))
    documents = list(corpus_lib.read_documents(str(tmp_path / "a")))
    lines = [line for doc in documents for line in doc]
    words = sum(len(line.split()) for line in lines)
    # CPython 3.11: 601 documents (522 module docstrings + 79 pydoc topics), 13,327 lines,
    # 98,167 words. The bounds leave room for the modules later versions removed; the pydoc
    # topics alone are about 8,700 lines and 65,000 words.
    assert len(documents) >= 400 and len(lines) >= 8000 and words >= 60000
    text = "\n".join(lines)
    assert "JSON (JavaScript Object Notation)" in text  # json's module docstring
    assert "Supporting definitions for the Python regression tests" not in text  # test/ skipped


MODULE_SOURCES = [
    '"""Doc."""\nx = 1\n',
    '#!/usr/bin/env python\n# -*- coding: latin-1 -*-\n# a comment\n\n"""After comments."""\n',
    "r'''Raw \\d\n    indented\n      more'''\n",
    '"Adjacent " "literals"\n"""not the docstring"""\n',
    '("Parenthesised "\n "across lines")\n',
    '(("Twice"))\n',
    '("a")("b")\n',        # a call
    'import os\n"""Not first."""\n',
    '"a" + b\n',            # an expression, not a lone literal
    'b"bytes"\n',           # not a str: no docstring
    'f"{x} string"\n',      # a JoinedStr: no docstring
    '"""Doc.""" ; x = 1\n',
    '',
    '"unterminated\n',
]


def test_module_docstring_is_what_ast_reads():
    """The token-level read of a module docstring agrees with ast.get_docstring on the odd
    cases and on every standard-library module the embedded corpus reads."""
    import ast
    import sysconfig

    def by_ast(source):
        try:
            return ast.get_docstring(ast.parse(source))
        except SyntaxError:
            return None

    for source in MODULE_SOURCES:
        data = source.encode("latin-1")
        assert corpus_lib.module_docstring(data) == by_ast(data), source
    root, checked = sysconfig.get_paths()["stdlib"], 0
    for directory, subdirs, names in os.walk(root):
        subdirs[:] = [d for d in subdirs if d not in corpus_lib.EMBEDDED_SKIP_DIRS]
        for name in (n for n in names if n.endswith(".py")):
            with open(os.path.join(directory, name), "rb") as f:
                data = f.read()
            assert corpus_lib.module_docstring(data) == by_ast(data), name
            checked += 1
    assert checked > 300


# ---------------------------------------------------------------------------------------------
# TFDS


def fake_tfds_dataset(texts):
    import tensorflow as tf

    def as_dataset(builder, split, **kwargs):
        del builder, split, kwargs
        return tf.data.Dataset.from_tensor_slices({"text": texts, "label": [0] * len(texts)})

    return as_dataset


def test_tfds_documents_and_build_with_mock_data(fixture, tmp_path):
    import tensorflow_datasets as tfds

    texts = ["\n".join(doc) for doc in fixture["documents"][:40]]
    texts[0] = texts[0] + "\n\n  \n" + "D0w1 D0w2"  # a blank line inside an example
    with tfds.testing.mock_data(num_examples=len(texts), as_dataset_fn=fake_tfds_dataset(texts)):
        documents = list(corpus_lib.tfds_documents("imdb_reviews", "train"))
        assert documents[0] == fixture["documents"][0] + ["D0w1 D0w2"]
        assert documents[1:] == fixture["documents"][1:40]
        with pytest.raises(CorpusError, match="no feature 'content'"):
            list(corpus_lib.tfds_documents("imdb_reviews", "train", text_key="content"))
        summary = pd.build_pretraining_data(
            output_dir=str(tmp_path / "tfds"), vocab_file=fixture["vocab_file"],
            tfds_name="imdb_reviews", tfds_split="train", max_seq_length=MAX_LEN,
            num_processes=1)
    assert summary.stats.documents == 40
    examples = read_all(summary.shards)
    assert len(examples) == summary.stats.examples
    metadata = pd.load_metadata(summary.output_dir)
    assert metadata["corpus"]["tfds"] == {"name": "imdb_reviews", "split": "train",
                                          "text_key": "text"}
    for example in examples:
        words = [int(t) for t in example["input_ids"] if t not in (PAD, CLS, SEP)]
        assert len({document_of(t, fixture["vocab"]) for t in words}) == 1
    assert json.dumps(metadata)  # plain JSON types only
