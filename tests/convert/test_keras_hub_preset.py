"""keras-hub presets with the tokenizer: what keras-hub loads from them, and the command that
writes them from a run directory (random weights, no network)."""

import os

import keras
import keras_hub
import numpy as np
import pytest
import yaml

from electra_tf.convert.hf import ConversionError
from electra_tf.convert.keras_hub import is_cased, save_keras_hub_preset, to_keras_hub_tokenizer
from electra_tf.text.tokenization import make_tokenizer
from electra_tf.models import ElectraPretrainer
from tests.convert.test_keras_hub import _randomise
from tests.models.helpers import VOCAB, tiny_model_config
from tests.run_helpers import SPECIALS, run_cli, write_vocab

WORDS = ["the", "quick", "brown", "fox", "jump", "##ed", "##s", "over", "lazy", "dog", ".", ",",
         "a", "cafe"]
SENTENCES = ["the quick brown fox jumped over the lazy dog.",
             "The Quick, Brown Fox Jumps over a lazy Café dog",  # upper case and accents fold
             "a brown dog jumps over zebras."]                  # zebras: [UNK]
PRESET_FILES = ("config.json", "model.weights.h5", "metadata.json", "tokenizer.json",
                os.path.join("assets", "tokenizer", "vocabulary.txt"))


def _vocab(path, words=WORDS):
    return write_vocab(path, SPECIALS + words + [f"w{i}" for i in range(VOCAB - 5 - len(words))])


def _pretrainer(seed=0):
    pretrainer = ElectraPretrainer(tiny_model_config(activation="gelu_approximate"))
    _randomise(pretrainer.discriminator.weights, seed=seed)
    return pretrainer


def _ids(tokenizer, texts):
    """Id lists of keras-hub's or our tokenizer (both give Python lists when called eagerly)."""
    return [[int(i) for i in ids] for ids in tokenizer(texts)]


def test_preset_loads_as_keras_hub_tokenizer_and_backbone_with_our_ids_and_outputs(tmp_path):
    vocab_file = _vocab(tmp_path / "vocab.txt")
    pretrainer = _pretrainer()
    preset = str(tmp_path / "preset")
    save_keras_hub_preset(pretrainer.discriminator, preset, vocab_file)
    for name in PRESET_FILES:
        assert os.path.isfile(os.path.join(preset, name)), name

    tokenizer = keras_hub.models.ElectraTokenizer.from_preset(preset)
    assert isinstance(keras_hub.models.Tokenizer.from_preset(preset),
                      keras_hub.models.ElectraTokenizer)
    assert tokenizer.lowercase and tokenizer.strip_accents
    ours = _ids(make_tokenizer(vocab_file), SENTENCES)
    assert _ids(tokenizer, SENTENCES) == ours
    assert ours[0] == [5, 6, 7, 8, 9, 10, 12, 5, 13, 14, 15]
    assert ours[1][-2:] == [18, 14] and ours[2][-2:] == [1, 15]  # cafe dog; [UNK] .

    # keras-hub end to end: its tokenizer, its packer, its backbone, as loaded from the preset.
    backbone = keras_hub.models.ElectraBackbone.from_preset(preset)
    packer = keras_hub.layers.MultiSegmentPacker(
        sequence_length=20, start_value=tokenizer.cls_token_id, end_value=tokenizer.sep_token_id,
        pad_value=tokenizer.pad_token_id)
    token_ids, segment_ids = packer(tokenizer(SENTENCES[:2]))
    token_ids, segment_ids = np.asarray(token_ids), np.asarray(segment_ids)
    mask = (token_ids != tokenizer.pad_token_id).astype(np.int32)
    assert list(token_ids[0][:13]) == [2] + ours[0] + [3]
    theirs = backbone({"token_ids": token_ids, "segment_ids": segment_ids,
                       "padding_mask": mask})["sequence_output"]
    expected = pretrainer.discriminator(token_ids, mask, segment_ids)
    real = mask.astype(bool)
    diff = np.max(np.abs(keras.ops.convert_to_numpy(theirs)[real]
                         - keras.ops.convert_to_numpy(expected)[real]))
    assert diff < 1e-5, diff


def test_casing_follows_the_vocabulary_unless_given(tmp_path):
    cased = _vocab(tmp_path / "cased.txt", ["The", "the", "Fox", "fox"])
    uncased = _vocab(tmp_path / "uncased.txt")
    assert is_cased(["[PAD]", "The"]) and not is_cased(SPECIALS + ["the", "##s", "café"])

    tokenizer = to_keras_hub_tokenizer(cased)
    assert not tokenizer.lowercase and not tokenizer.strip_accents
    assert _ids(tokenizer, ["The fox Fox"]) == [[5, 8, 7]]
    assert _ids(make_tokenizer(cased, lower_case=False), ["The fox Fox"]) == [[5, 8, 7]]
    assert to_keras_hub_tokenizer(cased, lower_case=True).lowercase
    assert not to_keras_hub_tokenizer(uncased, lower_case=False).lowercase


def test_a_vocabulary_the_model_cannot_hold_writes_nothing(tmp_path):
    too_long = write_vocab(tmp_path / "vocab.txt", SPECIALS + [f"w{i}" for i in range(VOCAB)])
    preset = tmp_path / "preset"
    with pytest.raises(ConversionError, match=f"{VOCAB + 5} tokens, more than the model's "
                                              f"vocabulary of {VOCAB}"):
        save_keras_hub_preset(_pretrainer().discriminator, str(preset), too_long)
    assert not preset.exists()


def test_without_a_vocabulary_the_preset_is_the_backbone_and_the_command_says_so(tmp_path):
    from electra_tf.convert_checkpoint import _tokenizer_line

    preset = tmp_path / "preset"
    assert save_keras_hub_preset(_pretrainer().discriminator, str(preset)) is None
    assert not (preset / "tokenizer.json").exists() and not (preset / "assets").exists()
    assert keras_hub.models.ElectraBackbone.from_preset(str(preset)).num_layers == 2
    assert _tokenizer_line(None, None) == (
        "tokenizer: not written (no vocabulary known); give --vocab_file vocab.txt to add "
        "keras-hub's ElectraTokenizer to the preset")


def _run_directory(path, vocab_file):
    """A run directory as run_pretraining leaves it: config.yaml naming its vocabulary (kept
    elsewhere, here) and checkpoints/."""
    from electra_tf.convert_checkpoint import write_electra_tf

    write_electra_tf(_pretrainer(seed=1), str(path), None)
    config = yaml.safe_load((path / "config.yaml").read_text())
    config["run"]["vocab_file"] = vocab_file
    (path / "config.yaml").write_text(yaml.safe_dump(config))
    return path


def _convert(*args):
    return run_cli(list(args), module="electra_tf.convert_checkpoint")


@pytest.mark.slow
def test_command_writes_the_runs_tokenizer_and_reads_the_preset_back(tmp_path):
    vocab_file = _vocab(tmp_path / "vocab.txt")
    run = _run_directory(tmp_path / "run", vocab_file)
    preset = tmp_path / "preset"
    result = _convert("--from", "electra_tf", "--input", str(run), "--to", "keras_hub",
                      "--output_dir", str(preset))
    assert result.returncode == 0, result.stderr[-3000:]
    assert (f"tokenizer: ElectraTokenizer, {VOCAB} tokens from {vocab_file}, lower-cased, "
            "accents stripped") in result.stdout
    tokenizer = keras_hub.models.ElectraTokenizer.from_preset(str(preset))
    assert _ids(tokenizer, SENTENCES) == _ids(make_tokenizer(vocab_file), SENTENCES)

    # Read back as keras-hub's own presets come: the vocabulary only in the tokenizer's assets.
    (preset / "vocab.txt").unlink()
    back = tmp_path / "back"
    result = _convert("--from", "keras_hub", "--input", str(preset), "--output_dir", str(back))
    assert result.returncode == 0, result.stderr[-3000:]
    assert (back / "vocab.txt").read_text() == (tmp_path / "vocab.txt").read_text()
    saved = yaml.safe_load((back / "config.yaml").read_text())
    assert saved["model"]["activation"] == "gelu_approximate"
    assert saved["objective"]["cls_token_id"] == 2
    assert saved["run"]["vocab_file"] == str(back / "vocab.txt")
