"""Keras layers and models of ELECTRA. Pure Keras: no file I/O. They use the package's
configuration (`electra_tf.config`) and resolve `from_preset` through `electra_tf.presets`,
and nothing above them.

Importing this package registers every model and layer class for Keras serialization, so
`keras.saving.load_model("model.keras")` finds them (package "electra_tf").
"""

from electra_tf.models.ablation_objectives import CorruptedInputMlmPretrainer
from electra_tf.models.classifier import ElectraClassifier
from electra_tf.models.embeddings import ElectraEmbeddings
from electra_tf.models.encoder import ElectraEncoder, make_embeddings
from electra_tf.models.heads import DiscriminatorHead, make_generator_head
from electra_tf.models.pretrainer import ElectraPretrainer
from electra_tf.models.pretrainer_factory import build_pretrainer, pretrainer_class
from electra_tf.models.question_answerer import ElectraQuestionAnswerer
from electra_tf.models.sampling import sample_token_ids
from electra_tf.models.tagger import ElectraTagger

__all__ = [
    "CorruptedInputMlmPretrainer",
    "DiscriminatorHead",
    "ElectraClassifier",
    "ElectraEmbeddings",
    "ElectraEncoder",
    "ElectraPretrainer",
    "ElectraQuestionAnswerer",
    "ElectraTagger",
    "build_pretrainer",
    "make_embeddings",
    "make_generator_head",
    "pretrainer_class",
    "sample_token_ids",
]
