"""TaskModel.get_config / from_config: the encoder's sizes plus each task's own arguments."""

from electra_tf.config import ModelConfig
from electra_tf.models.classifier import ElectraClassifier

TINY = ModelConfig(vocab_size=40, embedding_size=16, hidden_size=32, num_layers=1, num_heads=2,
                   intermediate_size=64, max_position_embeddings=32)


def test_classifier_config_round_trip():
    model = ElectraClassifier(TINY, num_labels=3, dropout=0.2, loss_reduction="mean")
    config = model.get_config()
    assert config["model_config"]["hidden_size"] == 32 and config["num_labels"] == 3
    clone = ElectraClassifier.from_config(config)
    assert clone.get_config() == config
    regressor = ElectraClassifier.from_config(ElectraClassifier(TINY, regression=True).get_config())
    assert regressor.regression and regressor.num_labels == 1
