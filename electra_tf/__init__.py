"""electra_tf: ELECTRA pretraining, fine-tuning and serving in Keras 3 / TensorFlow 2.

    import electra_tf

    result = electra_tf.pretrain(model_dir="runs/demo", train_steps=300)   # demo corpus, CPU
    report = electra_tf.finetune("glue/rte", data_dir="glue_data/RTE",
                                 init_checkpoint="runs/demo", model_dir="runs/demo_rte")
    pretrainer = electra_tf.load("runs/demo")        # a run or a converted directory
    encoder = electra_tf.load("keras_hub_preset/")   # a keras-hub preset: the encoder

`ElectraPretrainer.from_preset(path)`, `ElectraEncoder.from_preset(path)` and the task models'
`from_preset(path, ...)` load the same directories keras-hub's way. `.keras` files of these
models load with `electra_tf.load`, or with plain `keras.models.load_model` after `import
electra_tf`: Keras' serialization registry learns the package's classes once Keras is
imported (`electra_tf.keras_objects`), as keras-hub's do.

Importing the package changes nothing else outside it: no environment variable, no TensorFlow
config, no logging. The commands tune TensorFlow for the CPU before it starts; in Python,
`electra_tf.tune_cpu()` before importing TensorFlow does the same (electra_tf/cpu_tuning.py).

Names are imported on first use, so `import electra_tf` and `python -m electra_tf.<command>
--help` stay fast and TensorFlow starts only when something needs it.
"""

from __future__ import annotations

from electra_tf import keras_objects as _keras_objects
from electra_tf import presets as _presets
from electra_tf.lazy_names import lazy_names as _lazy_names

__version__ = "0.1.0"

# The models' `from_preset` and `compile_for_finetuning` resolve through this registry; the
# functions are imported on first use.
_presets.register_preset_loader("electra_tf.loading:load_for_class")
_presets.register_finetuning_compiler("electra_tf.finetuning.keras_recipe:compile_for_finetuning")
# .keras files reload with plain Keras: the classes are registered once Keras is imported.
_keras_objects.register_when_keras_loads()

# public name -> module that defines it
_EXPORTS = {
    # models (Keras, registered for .keras serialization)
    "ElectraPretrainer": "electra_tf.models.pretrainer",
    "ElectraEncoder": "electra_tf.models.encoder",
    "ElectraEmbeddings": "electra_tf.models.embeddings",
    "ElectraClassifier": "electra_tf.models.classifier",
    "ElectraQuestionAnswerer": "electra_tf.models.question_answerer",
    "ElectraTagger": "electra_tf.models.tagger",
    "ElectraTextClassifierPreprocessor": "electra_tf.preprocessing.text_classifier",
    "ElectraTextClassifier": "electra_tf.keras_hub_tasks.text_classifier",
    "ElectraTaggerPreprocessor": "electra_tf.preprocessing.tagger",
    "ElectraQuestionAnswererPreprocessor": "electra_tf.preprocessing.question_answerer",
    "ElectraSentencePieceTokenizer": "electra_tf.preprocessing.sentencepiece_tokenizer",
    "ElectraMaskedLM": "electra_tf.keras_hub_tasks.masked_lm",
    "ElectraMaskedLMPreprocessor": "electra_tf.keras_hub_tasks.masked_lm",
    "ElectraTokenClassifier": "electra_tf.keras_hub_tasks.token_classifier",
    "DiscriminatorHead": "electra_tf.models.heads",
    # configuration
    "ElectraConfig": "electra_tf.config",
    "FinetuneConfig": "electra_tf.config",
    "ModelConfig": "electra_tf.config",
    "ObjectiveConfig": "electra_tf.config",
    "load_config": "electra_tf.config",
    # data
    "build_pretraining_data": "electra_tf.pretraining_data.builder",
    "learn_vocabulary": "electra_tf.text.vocab_learning",
    "make_tokenizer": "electra_tf.text.tokenization",
    "make_dataset": "electra_tf.pretraining_data.pipeline",
    "make_held_out_dataset": "electra_tf.pretraining_data.pipeline",
    "load_task": "electra_tf.finetuning.api",
    # training
    "pretrain": "electra_tf.training.pretrain",
    "PretrainResult": "electra_tf.training.pretrain",
    "PretrainJob": "electra_tf.training.pretrain_job",
    "resolve_pretrain_job": "electra_tf.training.pretrain_job",
    "read_scalars": "electra_tf.training.callbacks",
    "finetune": "electra_tf.finetuning.api",
    "finetune_tasks": "electra_tf.finetuning.api",
    "build_classifier": "electra_tf.finetuning.api",
    # loading, conversion, export
    "load": "electra_tf.loading",
    "load_pretrainer": "electra_tf.loading",
    "load_encoder": "electra_tf.loading",
    "load_task_model": "electra_tf.loading",
    "load_google_checkpoint": "electra_tf.convert.google",
    "load_hf_pretrainer": "electra_tf.convert.hf",
    "save_hf": "electra_tf.convert.hf",
    "to_keras_hub_backbone": "electra_tf.convert.keras_hub",
    "from_keras_hub_backbone": "electra_tf.convert.keras_hub",
    "export_discriminator": "electra_tf.export.savedmodel",
    "export_classifier": "electra_tf.export.classifier",
    "export_question_answerer": "electra_tf.export.question_answerer",
    "export_tagger": "electra_tf.export.tagger",
    "show_replaced_tokens": "electra_tf.evaluation.replaced_tokens",
    # the machine
    "tune_cpu": "electra_tf.cpu_tuning",
    # errors
    "UserError": "electra_tf.errors",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = _lazy_names(__name__, _EXPORTS)
