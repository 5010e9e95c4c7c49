"""One call from a directory (or file) to the model it holds, weights loaded.

    import electra_tf

    pretrainer = electra_tf.load("runs/small")        # run_pretraining or convert_checkpoint output
    classifier = electra_tf.load("runs/small_rte")    # a fine-tuning run (one trial)
    encoder = electra_tf.load("presets/small")        # a keras-hub ElectraBackbone preset
    model = electra_tf.load("model.keras")            # model.save() of any electra_tf model

What `load` recognises, and what it returns:

    pretraining run directory of `run_pretraining`, or      config.yaml + checkpoints/
      an output of `convert_checkpoint --to electra_tf`       -> ElectraPretrainer (newest checkpoint)
    a checkpoint prefix inside its checkpoints/             -> the same, from that checkpoint
    fine-tuning run directory of `run_finetuning` (one      config.yaml + task.json + checkpoints/
      trial; with several, each trial_<k>/)                   -> ElectraClassifier, ElectraQuestionAnswerer
                                                                 or ElectraTagger, head included
    keras-hub preset (`convert_checkpoint --to keras_hub`,  config.json + model.weights.h5
      `ElectraBackbone.save_to_preset`)                       -> ElectraEncoder: keras-hub has no
                                                                 ELECTRA heads, only the encoder
    a `.keras` file                                         -> keras.saving.load_model

The models' `from_preset` classmethods ask for a given kind of model from any of these:
`ElectraPretrainer.from_preset` (`load_pretrainer`), `ElectraEncoder.from_preset`
(`load_encoder`: the encoder to fine-tune) and `ElectraClassifier.from_preset(path,
num_labels=3)` and the other task models (`load_task_model`: a pretrained encoder under a fresh
head, or a fine-tuned model). A keras-hub preset's tokenizer, if it has one, is not read here.
"""

from __future__ import annotations

import os

import keras
import keras_hub

from electra_tf import run_directory
from electra_tf.config import (ConfigError, FinetuneConfig, ObjectiveConfig, load_config,
                               with_fine_tuning_dropout)
from electra_tf.convert.keras_hub import assign_from_keras_hub, model_config_from_keras_hub
from electra_tf.finetuning import kinds
from electra_tf.finetuning.source import resolve_source, restore_encoder
# Importing electra_tf.models registers every class a .keras file can name.
from electra_tf.models import (ElectraEncoder, ElectraPretrainer, build_pretrainer,
                               make_embeddings)
from electra_tf.models.task_model import TaskModel
from electra_tf.preprocessing.question_answerer import ElectraQuestionAnswererPreprocessor
from electra_tf.run_directory import FINETUNING, KERAS_FILE, KERAS_HUB, TASK_CARD, TRIALS
from electra_tf.training.checkpointing import CheckpointError, restore_weights


def _locate(path: str) -> run_directory.RunDirectory:
    """What `path` holds (`run_directory.locate`: CheckpointError naming what was expected),
    one model: a fine-tuning run of several trials is refused."""
    located = run_directory.locate(path)
    if located.kind == TRIALS:
        raise CheckpointError(f"{path} is a fine-tuning run of {len(located.trials)} trials: load "
                              f"one of them, e.g. {located.trials[0]}")
    return located


def _keras_hub_preset(directory: str):
    """(keras-hub ElectraBackbone, our ModelConfig of its sizes) of a preset directory."""
    backbone = keras_hub.models.ElectraBackbone.from_preset(directory)
    return backbone, model_config_from_keras_hub(backbone.get_config())


def _load_keras_file(path: str, model_class: type, what: str):
    return _require(keras.saving.load_model(path), model_class, path, what)


def _a(name: str) -> str:
    return f"{'an' if name[0] in 'AEIOU' else 'a'} {name}"


def _require(model, model_class: type | None, path: str, what: str):
    if model_class is not None and not isinstance(model, model_class):
        raise CheckpointError(f"{path} holds {_a(type(model).__name__)}, not {what}")
    return model


def load_pretrainer(path: str, model_class: type | None = None, **kwargs) -> ElectraPretrainer:
    """The pretrainer a directory holds, its weights loaded.

    Args:
      path: a run directory of `run_pretraining` or an output directory of `convert_checkpoint
        --to electra_tf` (config.yaml + checkpoints/: the newest checkpoint), a checkpoint
        prefix inside its checkpoints/ (`runs/small/checkpoints/ckpt-1000`), a keras-hub
        `ElectraBackbone` preset (its weights go to the discriminator; the generator and the
        heads are freshly initialised, activation "gelu_approximate" as keras-hub's) or a
        `.keras` file.
      model_class: the class the result must be an instance of (`from_preset` passes its own).
      **kwargs: to the constructor (`name`, `dtype`); not for a `.keras` file.
    Returns:
      an `ElectraPretrainer` (a `CorruptedInputMlmPretrainer` for the replace_mlm and
      all_tokens_mlm objectives), built.
    Raises:
      CheckpointError: `path` holds no pretrainer, or its checkpoint does not fit its config.
      ConfigError: its config.yaml is not a valid config.
    """
    path = os.fspath(path)
    model_class = model_class or ElectraPretrainer
    what = _a(model_class.__name__)
    located = _locate(path)
    if located.kind == KERAS_FILE:
        return _load_keras_file(located.path, model_class, what)
    if located.kind == FINETUNING:
        raise CheckpointError(f"{path} is a fine-tuning run directory (it has {TASK_CARD}), which "
                              "holds a task model, not a pretrainer: use electra_tf.load(path)")
    if located.kind == KERAS_HUB:
        backbone, model_config = _keras_hub_preset(located.path)
        model = build_pretrainer(model_config, ObjectiveConfig(), **kwargs)
        assign_from_keras_hub(model.encoder, backbone)
        return _require(model, model_class, path, what)
    # resolve_source checks config.yaml's model section and finds the newest checkpoint.
    source = resolve_source(located.checkpoint or located.path)
    config = load_config(run_directory.config_file(source.directory))
    model = _require(build_pretrainer(config.model, config.objective, **kwargs), model_class,
                     path, what)
    restore_weights(model, source.checkpoint)
    return model


def load_encoder(path: str) -> ElectraEncoder:
    """The pretrained encoder to fine-tune (the discriminator's; for the MLM baseline its one
    network), with its own embeddings, built and its weights loaded.

    Args:
      path: a pretraining run or converted directory (or a checkpoint prefix in it), a keras-hub
        `ElectraBackbone` preset, a fine-tuning run directory (its fine-tuned encoder) or a
        `.keras` file of a pretrainer or task model.
    Returns:
      an `ElectraEncoder` named `discriminator` over embeddings named `embeddings`, so its
      variables have the paths of a pretrainer's checkpoint.
    Raises:
      CheckpointError: `path` holds no encoder, or its checkpoint does not fit its config.
      ConfigError: its config is not a valid config.
    """
    path = os.fspath(path)
    located = _locate(path)
    if located.kind == KERAS_FILE:
        model = keras.saving.load_model(located.path)
        if not isinstance(model, (ElectraPretrainer, TaskModel)):
            raise CheckpointError(f"{path} holds {_a(type(model).__name__)}, which has no "
                                  "ELECTRA encoder")
        return model.encoder
    if located.kind == FINETUNING:
        return load_task_model(TaskModel, path).encoder
    if located.kind == KERAS_HUB:
        backbone, model_config = _keras_hub_preset(located.path)
        encoder = _standalone_encoder(model_config)
        assign_from_keras_hub(encoder, backbone)
        return encoder
    source = resolve_source(located.checkpoint or located.path)
    encoder = _standalone_encoder(source.model_config)
    restore_encoder(encoder, source)
    return encoder


def _standalone_encoder(model_config) -> ElectraEncoder:
    """An encoder built outside any model, its embeddings first, so the variable paths are
    `embeddings/...` and `discriminator/...` as in a pretrainer's checkpoints."""
    embeddings = make_embeddings(model_config, name="embeddings")
    embeddings.build()
    encoder = ElectraEncoder.from_model_config(model_config, embeddings, name="discriminator")
    encoder.build()
    return encoder


def load_task_model(model_class: type, path: str, **kwargs) -> TaskModel:
    """A task model (`ElectraClassifier`, `ElectraQuestionAnswerer`, `ElectraTagger`) from a
    directory, its weights loaded.

    Args:
      model_class: the task model's class; `TaskModel` accepts any fine-tuned model.
      path: a pretraining run or converted directory (or a checkpoint prefix in it) or a
        keras-hub `ElectraBackbone` preset: its pretrained encoder under a fresh head, the
        model built as `model_class(model_config, **kwargs)`. Or a fine-tuning run directory
        (one trial: task.json + config.yaml + checkpoints/): the fine-tuned model, head
        included, built as the run built it (`kwargs` override its constructor arguments,
        e.g. `beam_size`). Or a `.keras` file.
      **kwargs: constructor arguments: `num_labels`, `regression`, `dropout` (classifier),
        `head`, `beam_size`, `answerable_weight` (question answerer), `num_tags` (tagger),
        `loss_reduction`, `name`, `dtype`.
    Raises:
      CheckpointError: `path` holds no such model, or a checkpoint that does not fit it.
      ConfigError: its config is not a valid config.
    """
    path = os.fspath(path)
    what = "a task model" if model_class is TaskModel else _a(model_class.__name__)
    located = _locate(path)
    if located.kind == KERAS_FILE:
        return _load_keras_file(located.path, model_class, what)
    if located.kind == FINETUNING:
        model = _fine_tuned_model(located, model_class, path, kwargs)
        restore_weights(model, located.newest_checkpoint())
        return model
    if model_class is TaskModel:
        raise CheckpointError(f"{path} holds a pretrained encoder and no task head: build the "
                              "task model with ElectraClassifier.from_preset(path, num_labels=...),"
                              " ElectraQuestionAnswerer.from_preset or ElectraTagger.from_preset")
    if located.kind == KERAS_HUB:
        backbone, model_config = _keras_hub_preset(located.path)
        if run_directory.keras_hub_has_tokenizer(located.path):
            kwargs = _with_preprocessor(
                model_class, kwargs, model_config,
                tokenizer=keras_hub.models.ElectraTokenizer.from_preset(located.path))
        model = model_class(model_config, **kwargs)
        assign_from_keras_hub(model.encoder, backbone)
        return model
    source = resolve_source(located.checkpoint or located.path)
    if source.vocab_file:
        kwargs = _with_preprocessor(model_class, kwargs, source.model_config,
                                    vocab_file=source.vocab_file)
    model = model_class(with_fine_tuning_dropout(source.model_config), **kwargs)
    restore_encoder(model.encoder, source)
    return model


def _with_preprocessor(model_class: type, kwargs: dict, model_config, *, tokenizer=None,
                       vocab_file: str | None = None, config: FinetuneConfig | None = None):
    """`kwargs` with the preprocessor (`model_class.preprocessor_cls`) of `tokenizer` (a
    keras-hub `ElectraTokenizer`) or `vocab_file`, unless the caller gave one (or None). A
    fine-tuning run's `config` gives its own lengths and case; an encoder gets the task's
    recipe, within its positions."""
    preprocessor_cls = getattr(model_class, "preprocessor_cls", None)
    if preprocessor_cls is None or "preprocessor" in kwargs:
        return kwargs
    settings = _preprocessor_settings(model_class, preprocessor_cls, model_config, config)
    config = config or FinetuneConfig()
    preprocessor = (preprocessor_cls(tokenizer, **settings) if tokenizer is not None else
                    preprocessor_cls.from_vocabulary(
                        vocab_file, lower_case=config.finetune.lower_case, **settings))
    return {**kwargs, "preprocessor": preprocessor}


def _preprocessor_settings(model_class: type, preprocessor_cls: type, model_config,
                           config: FinetuneConfig | None) -> dict:
    if config is not None:  # a fine-tuning run: as it featurized
        length, query, stride = (config.finetune.max_seq_length, config.qa.max_query_length,
                                 config.qa.doc_stride)
    else:
        kind = next((k for k in kinds.KINDS.values() if issubclass(model_class, k.model_class)),
                    None)
        recipe = FinetuneConfig()
        length = min(getattr(kind, "default_max_seq_length", None)
                     or recipe.finetune.max_seq_length, model_config.max_position_embeddings)
        query = min(recipe.qa.max_query_length, max(1, length // 4))
        stride = min(recipe.qa.doc_stride, length - query - 3)
    if issubclass(preprocessor_cls, ElectraQuestionAnswererPreprocessor):
        return {"sequence_length": length, "max_query_length": query, "doc_stride": stride}
    return {"sequence_length": length}


def _fine_tuned_model(located: run_directory.RunDirectory, model_class: type, path: str,
                      overrides: dict) -> TaskModel:
    """The task model a fine-tuning run built (see each task's `build_model`), before restoring."""
    card = located.task_card()
    config = load_config(located.config_path, base=FinetuneConfig())
    kind = kinds.kind_named(card.get("kind", "classification"))  # old classifier cards: no kind
    if kind is None:
        raise ConfigError(f"{located.task_card_path}: unknown kind {card.get('kind')!r} (known: "
                          f"{', '.join(kinds.KINDS)})")
    if not issubclass(kind.model_class, model_class):
        raise CheckpointError(f"{path} holds a fine-tuned {kind.model_class.__name__} (task "
                              f"{card.get('task')}), not {_a(model_class.__name__)}")
    arguments = {**kind.model_arguments(card, config), **overrides}
    if config.finetune.vocab_file and os.path.exists(config.finetune.vocab_file):
        # the run's own tokenization: its vocabulary, case and lengths
        arguments = _with_preprocessor(kind.model_class, arguments, config.model,
                                       vocab_file=config.finetune.vocab_file, config=config)
    return kind.model_class(config.model, **arguments)


def load(path: str):
    """Whatever model `path` holds, in one call, its weights loaded.

    Args:
      path: a pretraining run directory of `run_pretraining` or an output directory of
        `convert_checkpoint --to electra_tf` (config.yaml + checkpoints/), or a checkpoint
        prefix inside its checkpoints/; a fine-tuning run directory of `run_finetuning` (one
        trial); a keras-hub `ElectraBackbone` preset directory (`convert_checkpoint --to
        keras_hub`); or a `.keras` file.
    Returns:
      respectively an `ElectraPretrainer` (newest checkpoint); the fine-tuned
      `ElectraClassifier`, `ElectraQuestionAnswerer` or `ElectraTagger`; the `ElectraEncoder`
      (keras-hub has no ELECTRA heads: the preset is the encoder; `ElectraPretrainer.from_preset`
      and the task models' `from_preset` put it under fresh heads); what the file holds.
    Raises:
      CheckpointError: `path` is none of these (the message says what was expected), or its
        checkpoint does not fit its config.
      ConfigError: its config is not a valid config.

    Example:

    ```python
    pretrainer = electra_tf.load("runs/small")
    scores = pretrainer.discriminator_logits(ids, mask, segments)  # [batch, seq]
    ```
    """
    path = os.fspath(path)
    located = _locate(path)
    if located.kind == KERAS_FILE:
        return keras.saving.load_model(located.path)
    if located.kind == FINETUNING:
        return load_task_model(TaskModel, path)
    if located.kind == KERAS_HUB:
        return load_encoder(path)
    return load_pretrainer(path)


__all__ = ["load", "load_encoder", "load_pretrainer", "load_task_model"]


def load_for_class(model_class: type, path: str, **kwargs):
    """The loader behind every `from_preset` (registered in `electra_tf.presets`): the model
    of `model_class`'s kind that `path` holds, as `load_pretrainer`, `load_encoder` or
    `load_task_model` load it."""
    if issubclass(model_class, ElectraPretrainer):
        return load_pretrainer(path, model_class=model_class, **kwargs)
    if issubclass(model_class, ElectraEncoder):
        if kwargs:
            raise TypeError(f"ElectraEncoder.from_preset takes no keyword arguments, got "
                            f"{sorted(kwargs)}")
        return load_encoder(path)
    if issubclass(model_class, TaskModel):
        return load_task_model(model_class, path, **kwargs)
    raise TypeError(f"no preset loading for {model_class.__name__}")
