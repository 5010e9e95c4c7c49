"""electra_tf's models -> keras-hub tasks, for whole presets: a fine-tuned classifier ->
`ElectraTextClassifier`, a fine-tuned tagger -> `ElectraTokenClassifier`, a pretrainer's
generator -> `ElectraMaskedLM`.

    classifier = electra_tf.load("runs/small_sst2")            # a fine-tuning run (one trial)
    to_keras_hub_text_classifier(classifier).save_to_preset("presets/small_sst2")
    # anywhere electra_tf.keras_hub_tasks is imported:
    keras_hub.models.TextClassifier.from_preset("presets/small_sst2").predict(["what a ride"])

    pretrainer = ElectraPretrainer.from_preset("runs/small")
    to_keras_hub_masked_lm(pretrainer, "runs/small/vocab.txt").save_to_preset("presets/gen")
    keras_hub.models.MaskedLM.from_preset("presets/gen").fill_mask(["the [MASK] sat"])

A preset holds keras-hub's `ElectraBackbone` and `ElectraTokenizer` (loadable by keras-hub
alone), the head and the preprocessor. The tasks' outputs match ours where keras-hub's backbone
can represent the encoder exactly: activation "gelu_approximate" (`to_keras_hub_backbone`).
"""

from __future__ import annotations

from electra_tf import run_directory
from electra_tf.convert.keras_hub import is_cased, to_keras_hub_backbone
from electra_tf.keras_hub_tasks.masked_lm import ElectraMaskedLM, ElectraMaskedLMPreprocessor
from electra_tf.keras_hub_tasks.text_classifier import ElectraTextClassifier
from electra_tf.keras_hub_tasks.token_classifier import ElectraTokenClassifier
from electra_tf.models import ElectraPretrainer
from electra_tf.preprocessing.tagger import ElectraTaggerPreprocessor
from electra_tf.text.tokenization import load_vocabulary


def to_keras_hub_text_classifier(classifier, preprocessor=None) -> ElectraTextClassifier:
    """An `ElectraTextClassifier` with the weights of our `ElectraClassifier` (encoder and
    head) and its preprocessor (or `preprocessor`). Its outputs match ours where keras-hub's
    backbone can represent the encoder exactly (the tanh GELU; `to_keras_hub_backbone`)."""
    if classifier.regression:
        raise ValueError("keras-hub's TextClassifier predicts classes; a regression head (STS-B) "
                         "has no keras-hub task to become")
    preprocessor = preprocessor or classifier.preprocessor
    if preprocessor is None:
        raise ValueError("the classifier has no preprocessor: give one "
                         "(ElectraTextClassifierPreprocessor.from_vocabulary('vocab.txt')), so "
                         "the preset holds its tokenizer")
    task = ElectraTextClassifier(to_keras_hub_backbone(classifier.encoder),
                                 classifier.num_labels, preprocessor=preprocessor,
                                 dropout=classifier.dropout)
    task.output_dense.set_weights(classifier.head.output_dense.get_weights())
    return task


def to_keras_hub_token_classifier(tagger, preprocessor=None) -> ElectraTokenClassifier:
    """An `ElectraTokenClassifier` with the weights of our `ElectraTagger` (encoder and head)
    and its preprocessor (or `preprocessor`, an `ElectraTaggerPreprocessor`)."""
    preprocessor = preprocessor or tagger.preprocessor
    if not isinstance(preprocessor, ElectraTaggerPreprocessor):
        raise ValueError("the tagger needs an ElectraTaggerPreprocessor, so the preset holds its "
                         "tokenizer: give one (ElectraTaggerPreprocessor.from_vocabulary("
                         f"'vocab.txt')); got {type(preprocessor).__name__}")
    task = ElectraTokenClassifier(to_keras_hub_backbone(tagger.encoder), tagger.num_tags,
                                  preprocessor=preprocessor)
    task.output_dense.set_weights(tagger.head.output_dense.get_weights())
    return task


def to_keras_hub_masked_lm(pretrainer, preprocessor=None) -> ElectraMaskedLM:
    """An `ElectraMaskedLM` holding `pretrainer`'s generator: its encoder (with the embedding
    table it shares with the discriminator, and its projection when the generator is narrower)
    as the backbone, and its masked-LM head's dense layer, LayerNorm and output bias; the head's
    activation is the model config's. `preprocessor`: an `ElectraMaskedLMPreprocessor`, a
    vocab.txt or a list of tokens (lower-cased unless the vocabulary is cased: `is_cased`), or
    None for a model on features only. For the MLM
    baseline the generator is the one full-size network.

    `pretrainer` may be a pretraining run's (or a converted release's) directory: its
    pretrainer, and without a `preprocessor` its vocabulary, found where `electra_tf.load`
    finds them (the demo keeps it under data/)."""
    if isinstance(pretrainer, str):
        directory = pretrainer
        pretrainer = ElectraPretrainer.from_preset(directory)
        if preprocessor is None:
            preprocessor = run_directory.vocab_file(directory, run_directory.PRETRAINING)
            if preprocessor is None:
                raise ValueError(f"{directory} has no vocabulary beside it: pass the vocab.txt "
                                 "the data was built with as `preprocessor`")
    if pretrainer.generator is None:
        raise ValueError("the pretrainer has no generator network (uniform_generator): there "
                         "is no masked LM to convert")
    if preprocessor is not None and not isinstance(preprocessor, ElectraMaskedLMPreprocessor):
        vocabulary = (load_vocabulary(preprocessor) if isinstance(preprocessor, str)
                      else list(preprocessor))
        preprocessor = ElectraMaskedLMPreprocessor.from_vocabulary(
            vocabulary, lower_case=not is_cased(vocabulary))
    task = ElectraMaskedLM(to_keras_hub_backbone(pretrainer.generator), preprocessor=preprocessor,
                           intermediate_activation=pretrainer.model_config.activation,
                           head_trained=True)
    ours = _own_weights(pretrainer.generator_head)
    for name, variable in _own_weights(task.masked_lm_head).items():
        variable.assign(ours[name])
    return task


def _own_weights(head) -> dict:
    """A `MaskedLMHead`'s weights but the tied token table, by name: the dense layer's kernel
    and bias, the LayerNorm's gamma and beta, output_bias."""
    table = head.token_embedding.embeddings
    return {variable.name: variable for variable in head.weights if variable is not table}
