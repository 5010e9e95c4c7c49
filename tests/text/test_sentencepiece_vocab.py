"""SentencePiece vocabularies: learning unigram and BPE models with ELECTRA's special pieces, the
in-graph tokenizer against the `sentencepiece` library on Chinese, Korean, Hindi and English,
special ids read from the model file, and the build_vocab command."""

import io
import random

import pytest
import sentencepiece
import tensorflow as tf

from electra_tf.text.sentencepiece_vocab import (learn_sentencepiece, load_sentencepiece,
                                                 make_sentencepiece_tokenizer)
from electra_tf.text.tokenization import SPECIAL_TOKENS, VocabularyError
from tests.run_helpers import run_in_process

HANGUL, CJK = 0xAC00, 0x4E00
DEVANAGARI_CONSONANTS = [chr(c) for c in range(0x0915, 0x0939 + 1)]
DEVANAGARI_MARKS = ["", "\u093e", "\u093f", "\u0940", "\u0941", "\u094d", "\u0902"]


def multilingual_lines(count, seed):
    """Lines mixing English words, Chinese (no spaces inside a phrase), Korean syllables and
    Hindi consonant + vowel-sign clusters, with a few capitals, digits and punctuation."""
    rng = random.Random(seed)

    def phrase():
        kind = rng.choice("ezkhp")
        if kind == "e":
            word = "".join(rng.choice("etaoinshrdlucmfwyp") for _ in range(rng.randint(2, 9)))
            return word.capitalize() if rng.random() < 0.2 else word
        if kind == "z":
            return "".join(chr(CJK + rng.randint(0, 400)) for _ in range(rng.randint(2, 8)))
        if kind == "k":
            return "".join(chr(HANGUL + rng.randint(0, 500)) for _ in range(rng.randint(1, 4)))
        if kind == "h":
            return "".join(rng.choice(DEVANAGARI_CONSONANTS) + rng.choice(DEVANAGARI_MARKS)
                           for _ in range(rng.randint(1, 4)))
        return rng.choice([",", ".", "。", "、", "?", str(rng.randint(0, 2026))])

    return [" ".join(phrase() for _ in range(rng.randint(3, 14))) for _ in range(count)]


def learned_model(directory):
    """(path, size, `sentencepiece` processor) of a unigram model learned into `directory` from
    3,000 multilingual lines, every character covered."""
    path = str(directory / "spm.model")
    size = learn_sentencepiece(multilingual_lines(3000, seed=0), 1200, path,
                               character_coverage=1.0)
    return path, size, sentencepiece.SentencePieceProcessor(model_file=path)


@pytest.fixture(scope="module", params=["unigram", "bpe"])
def model_file(request, tmp_path_factory):
    path = tmp_path_factory.mktemp(request.param) / f"{request.param}.model"
    size = learn_sentencepiece(multilingual_lines(3000, seed=0), 1200, str(path),
                               algorithm=request.param, character_coverage=1.0)
    assert 1000 <= size <= 1200
    return path


def test_special_pieces_are_ids_0_to_4_and_come_from_the_model(model_file):
    model, ids = load_sentencepiece(str(model_file))
    processor = sentencepiece.SentencePieceProcessor(model_proto=model)
    assert [processor.id_to_piece(i) for i in range(5)] == list(SPECIAL_TOKENS)
    assert tuple(ids) == (0, 1, 2, 3, 4)
    assert processor.bos_id() == -1 and processor.eos_id() == -1
    # Control pieces are never produced from text: "[MASK]" in a text is spelled out.
    assert not {2, 3, 4} & set(processor.encode("a [CLS] b [SEP] c [MASK]"))


def test_in_graph_ids_equal_the_sentencepiece_library_on_four_scripts(model_file):
    model, _ = load_sentencepiece(str(model_file))
    processor = sentencepiece.SentencePieceProcessor(model_proto=model)
    lines = multilingual_lines(300, seed=1)  # not the training lines
    lines += ["Hello 你好世界 안녕하세요 नमस्ते", "ＦＵＬＬＷＩＤＴＨ ａｂｃ １２３", "", "   ", "ﬁne café"]
    tokenizer = make_sentencepiece_tokenizer(model)
    in_graph = tf.function(lambda texts: tokenizer.tokenize(texts))(tf.constant(lines))
    assert in_graph.to_list() == [processor.encode(line) for line in lines]
    scripts = {"zh": chr(CJK), "ko": chr(HANGUL), "hi": DEVANAGARI_CONSONANTS[0]}
    for script, char in scripts.items():
        pieces = {p for line in lines if char in line for p in processor.encode(line, out_type=str)}
        assert any(char in piece for piece in pieces), script  # the script has its own pieces
    # Case folded ("nmt_nfkc_cf") and NFKC: full-width letters and ligatures read as plain ones.
    assert processor.encode("Hello") == processor.encode("hello")
    assert processor.encode("ＦＵＬＬ") == processor.encode("full")
    text = "hello " + chr(CJK + 5) + chr(CJK + 9) + " " + chr(HANGUL + 7)  # characters it knows
    assert processor.decode(processor.encode(text)) == text


@pytest.mark.slow
def test_the_tokenizer_outlives_keras_seeding(model_file):
    """keras.utils.set_random_seed resets TensorFlow's kernel cache, which deletes
    tensorflow-text's model resource; the tokenizer makes it again."""
    import keras

    model, _ = load_sentencepiece(str(model_file))
    tokenizer = make_sentencepiece_tokenizer(model)
    lines = multilingual_lines(3, seed=2)
    before = tokenizer(lines).to_list()
    keras.utils.set_random_seed(1)
    assert tokenizer(lines).to_list() == before
    keras.backend.clear_session()
    assert tokenizer(lines).to_list() == before


def test_cased_model_keeps_case(tmp_path):
    path = tmp_path / "cased.model"
    learn_sentencepiece(multilingual_lines(1000, seed=2), 1500, str(path), lower_case=False,
                        character_coverage=1.0)
    processor = sentencepiece.SentencePieceProcessor(model_file=str(path))
    assert processor.encode("Hello") != processor.encode("hello")


def test_the_same_lines_give_the_same_file(tmp_path):
    lines = multilingual_lines(800, seed=3)
    paths = [tmp_path / f"{i}.model" for i in range(2)]
    for path in paths:
        learn_sentencepiece(lines, 1300, str(path), algorithm="bpe")
    assert paths[0].read_bytes() == paths[1].read_bytes()


def test_a_model_without_the_special_pieces_is_refused_naming_them(tmp_path):
    plain = io.BytesIO()
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter([f"the quick brown fox jumps over the lazy dog {i}"
                                for i in range(500)]), model_writer=plain,
        vocab_size=60, control_symbols=["[CLS]"], hard_vocab_limit=False, minloglevel=2)
    path = tmp_path / "plain.model"
    path.write_bytes(plain.getvalue())
    with pytest.raises(VocabularyError, match=r"lacks the pieces \[PAD\], \[UNK\], \[SEP\], "
                                              r"\[MASK\]"):
        load_sentencepiece(str(path))
    (tmp_path / "text.model").write_text("not a model")
    with pytest.raises(VocabularyError, match="is not a SentencePiece model"):
        load_sentencepiece(str(tmp_path / "text.model"))
    with pytest.raises(VocabularyError, match="not found"):
        load_sentencepiece(str(tmp_path / "missing.model"))


def test_learning_from_no_text_is_an_error(tmp_path):
    with pytest.raises(VocabularyError, match="SentencePiece training failed"):
        learn_sentencepiece(["", "  "], 100, str(tmp_path / "empty.model"))


def test_build_vocab_command_writes_a_sentencepiece_model(tmp_path):
    """...into a folder it creates, as it does for a vocab.txt."""
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(multilingual_lines(1500, seed=5)), encoding="utf-8")
    output = tmp_path / "new_folder" / "spm.model"
    result = run_in_process(["--corpus", corpus, "--vocab_size", 1300, "--model_type",
                             "sentencepiece", "--sentencepiece_algorithm", "bpe", "--output",
                             output], module="electra_tf.build_vocab")
    assert result.returncode == 0, result.stderr[-3000:]
    size = sentencepiece.SentencePieceProcessor(model_file=str(output)).get_piece_size()
    assert (f"wrote a SentencePiece bpe model of {size:,} pieces ([PAD] [UNK] [CLS] [SEP] "
            f"[MASK] = 0-4) to {output}") in result.stdout
    assert tuple(load_sentencepiece(str(output))[1]) == (0, 1, 2, 3, 4)
    for flags, message in (
            (["--strip_accents"], "--strip_accents is not available with --model_type "
                                  "sentencepiece"),
            (["--character_coverage", 0], "--character_coverage must be in (0, 1]"),
            (["--vocab_size", 600], "Increase vocab_size or decrease character_coverage")):
        result = run_in_process(["--corpus", corpus, "--model_type", "sentencepiece",
                                 "--output", tmp_path / "x.model", *flags],
                                module="electra_tf.build_vocab")
        errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
        assert result.returncode != 0 and "Traceback" not in result.stderr
        assert len(errors) == 1 and message in errors[0], result.stderr[-2000:]
