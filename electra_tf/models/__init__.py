"""Keras layers and models of ELECTRA. Pure Keras: no file I/O, no imports from the rest of the package."""

from electra_tf.models.embeddings import ElectraEmbeddings
from electra_tf.models.encoder import ElectraEncoder
from electra_tf.models.heads import DiscriminatorHead, make_generator_head
from electra_tf.models.pretrainer import ElectraPretrainer
from electra_tf.models.sampling import sample_token_ids

__all__ = [
    "DiscriminatorHead",
    "ElectraEmbeddings",
    "ElectraEncoder",
    "ElectraPretrainer",
    "make_generator_head",
    "sample_token_ids",
]
