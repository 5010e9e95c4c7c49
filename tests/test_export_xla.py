"""Exports with `jit_compile=True`: every exporter's forward pass XLA-compiled inside the
signatures, the same outputs as the plain export within float32 rounding at several shapes,
and the compile marker a model server checks present (it is absent from the default export,
tests/test_export.py)."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from electra_tf.export.classifier import export_classifier
from electra_tf.export.precision import serving_copy
from electra_tf.export.question_answerer import export_question_answerer
from electra_tf.export.savedmodel import export_discriminator
from electra_tf.export.tagger import export_tagger
from electra_tf.models import ElectraPretrainer
from electra_tf.models.classifier import ElectraClassifier
from electra_tf.models.question_answerer import ElectraQuestionAnswerer
from electra_tf.models.tagger import ElectraTagger
from tests.models.helpers import objective, tiny_model_config
from tests.test_export import CLS, SEP, op_report, padded_inputs

# The outputs of the compiled forward pass against the plain one: XLA fuses and reorders
# float32 arithmetic, nothing more.
ATOL = 1e-5

# (batch lengths, padded length): each new [batch, seq] shape compiles anew
SHAPES = (([12, 7, 3], 12), ([5], 9))


def exporter_of(name):
    """export(directory, jit, dtype="float32", transposed_feedforward=False) -> directory: the
    SavedModel of one fresh tiny model of kind `name` (its `serving_copy` in `dtype`, with
    `transposed_feedforward`), compiled with XLA if `jit`."""
    keras.utils.set_random_seed(11)
    config = tiny_model_config()
    if name == "discriminator":
        model = ElectraPretrainer(config, objective(cls_token_id=CLS, sep_token_id=SEP,
                                                    mask_token_id=4))
        write = lambda m, d, jit: export_discriminator(m, d, with_examples=False,
                                                       jit_compile=jit)
    elif name == "classifier":
        model = ElectraClassifier(config, num_labels=3)
        write = lambda m, d, jit: export_classifier(m, d, task="glue/mnli",
                                                    label_names=("a", "b", "c"), jit_compile=jit)
    elif name == "regressor":
        model = ElectraClassifier(config, regression=True)
        write = lambda m, d, jit: export_classifier(m, d, task="glue/stsb",
                                                    label_range=(0.0, 5.0), jit_compile=jit)
    elif name == "tagger":
        model = ElectraTagger(config, num_tags=4)
        write = lambda m, d, jit: export_tagger(m, d, task="conll/ner",
                                                tag_names=("B", "I", "O", "S"), jit_compile=jit)
    else:
        model = ElectraQuestionAnswerer(config, beam_size=3)
        write = lambda m, d, jit: export_question_answerer(m, d, task="squad/v1.1",
                                                           jit_compile=jit)
    return lambda d, jit, dtype="float32", transposed_feedforward=False: write(
        serving_copy(model, dtype, transposed_feedforward), d, jit)


def _loaded(name, root, plain_export):
    """{jit_compile: the loaded SavedModel} of exporter `name`, plain and compiled."""
    return {False: tf.saved_model.load(plain_export(name)),
            True: tf.saved_model.load(exporter_of(name)(str(root / f"{name}_compiled"), True))}


# The fast tier keeps one pretraining and one fine-tuning export (about 3 s each to write).
@pytest.mark.parametrize("name", ["discriminator", "classifier", *(
    pytest.param(name, marks=pytest.mark.slow)
    for name in ("regressor", "tagger", "question_answerer"))])
@pytest.mark.slow
def test_compiled_export_matches_the_plain_one(name, tmp_path, plain_export):
    plain, compiled = (model.signatures["serving_default"]
                       for model in _loaded(name, tmp_path, plain_export).values())
    assert op_report(plain)[1] == []
    assert any(marker.endswith(":_XlaMustCompile") for marker in op_report(compiled)[1])
    for key, value, got in paired_outputs(plain, compiled):
        if value.dtype.is_floating:
            np.testing.assert_allclose(got.numpy(), value.numpy(), atol=ATOL, rtol=0, err_msg=key)
        else:  # argmax ids and beam positions: equal where the scores are not near-tied
            assert np.mean(got.numpy() == value.numpy()) > 0.9, key


def paired_outputs(plain, other):
    """(output name, `plain`'s value, `other`'s value) of two serving_default signatures on the
    padded batches of SHAPES, after checking that both return the same outputs."""
    for seed, (lengths, seq) in enumerate(SHAPES):
        ids, mask, segments = (tf.constant(t) for t in padded_inputs(lengths, seq, seed))
        expected = plain(input_ids=ids, input_mask=mask, segment_ids=segments)
        got = other(input_ids=ids, input_mask=mask, segment_ids=segments)
        assert sorted(got) == sorted(expected)
        for key, value in expected.items():
            yield key, value, got[key]


@pytest.mark.slow
def test_compiled_export_still_checks_its_inputs(tmp_path):
    compiled = tf.saved_model.load(exporter_of("classifier")(
        str(tmp_path / "compiled"), True)).signatures["serving_default"]
    ids, mask, segments = (tf.constant(t) for t in padded_inputs([4], 4, 0))
    with pytest.raises(tf.errors.InvalidArgumentError, match="input_ids must be below"):
        compiled(input_ids=ids + 1000, input_mask=mask, segment_ids=segments)
