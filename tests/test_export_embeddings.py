"""Feature extraction: the encoder's sequence_output and [CLS] vector, in Python and exported."""

import json
import shutil

import numpy as np
import pytest
import tensorflow as tf

from electra_tf.export.savedmodel import export_discriminator
from electra_tf.models import ElectraPretrainer
from electra_tf.preprocessing.text_classifier import ElectraTextClassifierPreprocessor
from tests.models.helpers import objective, tiny_model_config
from tests.test_export import (CLS, SEP, TOKENS, assert_one_line_error, export_main,  # noqa: F401
                               padded_inputs, run_dir, vocab_file)


@pytest.fixture(scope="module")
def pretrainer():
    return ElectraPretrainer(tiny_model_config(),
                             objective(cls_token_id=CLS, sep_token_id=SEP, mask_token_id=4))


def test_embed_returns_the_sequence_and_its_cls_vector(pretrainer):
    ids, mask, segments = padded_inputs([10, 7], 12, seed=0)
    out = pretrainer.encoder.embed(ids, mask, segments)
    sequence = pretrainer.encoder(tf.constant(ids), tf.constant(mask), tf.constant(segments),
                                  training=False)
    assert out["sequence_output"].shape == (2, 12, tiny_model_config().hidden_size)
    np.testing.assert_array_equal(out["sequence_output"], sequence)
    np.testing.assert_array_equal(out["pooled_output"], sequence[:, 0])


def test_embed_from_text_through_the_preprocessor(pretrainer):
    preprocessor = ElectraTextClassifierPreprocessor.from_vocabulary(TOKENS, sequence_length=16)
    out = pretrainer.encoder.embed(**preprocessor(["the cat sat", "hello world"]))
    assert out["pooled_output"].shape == (2, tiny_model_config().hidden_size)


@pytest.mark.slow
def test_exported_embeddings_match_the_encoder(pretrainer, vocab_file, tmp_path):
    path = export_discriminator(pretrainer, str(tmp_path / "1"), with_embeddings=True,
                                with_tokenizer=True, vocab_file=vocab_file, max_seq_length=16)
    loaded = tf.saved_model.load(path)
    assert {"serve_embeddings", "serve_text_embeddings", "serving_default"} <= set(
        loaded.signatures)
    ids, mask, segments = padded_inputs([10, 7], 12, seed=1)
    out = loaded.signatures["serve_embeddings"](input_ids=tf.constant(ids),
                                                input_mask=tf.constant(mask),
                                                segment_ids=tf.constant(segments))
    want = pretrainer.encoder.embed(ids, mask, segments)
    for name in ("sequence_output", "pooled_output"):
        np.testing.assert_allclose(out[name], want[name], atol=1e-5, rtol=0)
    text = loaded.signatures["serve_text_embeddings"](text=tf.constant(["the cat sat"]))
    again = pretrainer.encoder.embed(text["input_ids"], text["input_mask"],
                                     tf.zeros_like(text["input_ids"]))
    np.testing.assert_allclose(text["pooled_output"], again["pooled_output"], atol=1e-5, rtol=0)
    with pytest.raises(tf.errors.InvalidArgumentError):  # the same input checks as serving_default
        loaded.signatures["serve_embeddings"](input_ids=tf.constant([[1, 999]]),
                                              input_mask=tf.constant([[1, 1]]),
                                              segment_ids=tf.constant([[0, 0]]))


@pytest.mark.slow
def test_cli_with_embeddings(run_dir, tmp_path):  # noqa: F811
    run = run_dir[0]
    result = export_main("--model_dir", str(run), "--output_dir", str(tmp_path / "served"),
                         "--with_embeddings", "--nowith_examples")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "(signatures: serving_default, serve_embeddings)" in result.stdout
    assert "serve_embeddings" in tf.saved_model.load(str(tmp_path / "served" / "5")).signatures


def test_cli_refuses_embeddings_of_a_fine_tuned_run(run_dir, tmp_path):  # noqa: F811
    run = tmp_path / "finetuned"
    shutil.copytree(run_dir[0], run)
    (run / "task.json").write_text(json.dumps({"kind": "classification", "task": "csv"}))
    result = export_main("--model_dir", str(run), "--output_dir", str(tmp_path / "served"),
                         "--with_embeddings")
    assert_one_line_error(result, "--with_embeddings exports a pretrained encoder's features")
