"""A SentencePiece vocabulary through convert_checkpoint: the Hugging Face output's fast
tokenizer has the `sentencepiece` library's ids (both algorithms, four scripts, pairs), the
electra_tf output carries the model under its own name, and --to keras_hub refuses it."""

import dataclasses

import pytest
import yaml

from electra_tf.config import ElectraConfig
from electra_tf.convert.hf_sentencepiece import write_hf_sentencepiece_tokenizer
from electra_tf.models import ElectraPretrainer
from electra_tf.text.sentencepiece_vocab import learn_sentencepiece
from electra_tf.training.checkpointing import RunCheckpoint
from electra_tf.training.optimizer import create_optimizer
from tests.conftest import require
from tests.models.helpers import fast_optimizer_config, objective, tiny_model_config
from tests.run_helpers import run_in_process
from tests.text.test_sentencepiece_vocab import learned_model, multilingual_lines

CLS, SEP = 2, 3
LINES = multilingual_lines(300, seed=41) + [
    "Hello 你好世界 안녕하세요 नमस्ते", "ＦＵＬＬＷＩＤＴＨ ａｂｃ １２３", "", "   ", "ﬁne café",
    "  lead  and  trail  "]


@pytest.mark.parametrize("algorithm", ["unigram", "bpe"])
def test_the_fast_tokenizer_has_the_librarys_ids(algorithm, tmp_path):
    transformers = require("transformers")
    sentencepiece = require("sentencepiece")
    path = str(tmp_path / f"{algorithm}.model")
    output = tmp_path / "hf"
    output.mkdir()
    learn_sentencepiece(multilingual_lines(3000, seed=0), 1200, path, algorithm=algorithm,
                        character_coverage=1.0)
    processor = sentencepiece.SentencePieceProcessor(model_file=path)
    write_hf_sentencepiece_tokenizer(path, str(output), model_max_length=512)
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(output))
    assert tokenizer.is_fast and (output / f"{algorithm}.model").exists()
    assert [tokenizer(line)["input_ids"] for line in LINES] == [
        [CLS] + processor.encode(line) + [SEP] for line in LINES]
    assert (tokenizer.pad_token_id, tokenizer.mask_token_id, tokenizer.model_max_length) == (
        0, 4, 512)
    a, b = LINES[:2]
    pair = tokenizer(a, b)
    n_a, n_b = len(processor.encode(a)), len(processor.encode(b))
    assert pair["input_ids"] == [CLS] + processor.encode(a) + [SEP] + processor.encode(b) + [SEP]
    assert pair["token_type_ids"] == [0] * (n_a + 2) + [1] * (n_b + 1)


def _run_directory(directory, size):
    """config.yaml and checkpoints/ckpt-1 of a tiny pretrainer over `size` pieces."""
    config = ElectraConfig(model=tiny_model_config(vocab_size=size),
                           objective=objective(cls_token_id=CLS, sep_token_id=SEP,
                                               mask_token_id=4),
                           optimizer=fast_optimizer_config())
    config = dataclasses.replace(config, run=dataclasses.replace(config.run, max_seq_length=32))
    config.validate()
    model = ElectraPretrainer(config.model, config.objective)
    model.compile(optimizer=create_optimizer(config.optimizer))
    RunCheckpoint(model, str(directory / "checkpoints")).save(1)
    (directory / "config.yaml").write_text(config.to_yaml())
    return directory


@pytest.mark.slow
def test_convert_command_carries_the_sentencepiece_model(tmp_path):
    transformers = require("transformers")
    path, size, processor = learned_model(tmp_path)
    run = _run_directory(tmp_path / "run", size)
    common = ["--from", "electra_tf", "--input", str(run), "--vocab_file", path]

    to_hf = run_in_process([*common, "--to", "hf", "--output_dir", str(tmp_path / "hf")],
                           module="electra_tf.convert_checkpoint")
    assert to_hf.returncode == 0, to_hf.stderr[-3000:]
    for side in ("discriminator", "generator"):
        directory = tmp_path / "hf" / side
        assert not (directory / "vocab.txt").exists() and (directory / "spm.model").exists()
        tokenizer = transformers.AutoTokenizer.from_pretrained(str(directory))
        assert tokenizer(LINES[0])["input_ids"] == [CLS] + processor.encode(LINES[0]) + [SEP]
    transformers.ElectraForPreTraining.from_pretrained(str(tmp_path / "hf" / "discriminator"))

    to_ours = run_in_process([*common, "--output_dir", str(tmp_path / "ours")],
                             module="electra_tf.convert_checkpoint")
    assert to_ours.returncode == 0, to_ours.stderr[-3000:]
    config = yaml.safe_load((tmp_path / "ours" / "config.yaml").read_text())
    assert config["run"]["vocab_file"] == str(tmp_path / "ours" / "spm.model")
    assert (tmp_path / "ours" / "spm.model").read_bytes() == open(path, "rb").read()

    refused = run_in_process([*common, "--to", "keras_hub", "--output_dir",
                              str(tmp_path / "preset")], module="electra_tf.convert_checkpoint")
    errors = [line for line in refused.stderr.splitlines() if line.startswith("error:")]
    assert refused.returncode != 0 and "Traceback" not in refused.stderr
    assert errors == [f"error: {path} is a SentencePiece model, and keras-hub's ElectraTokenizer "
                      "is WordPiece only: convert --to hf or electra_tf, or give a vocab.txt"]
    assert not (tmp_path / "preset").exists() or not list((tmp_path / "preset").iterdir())
