"""Configuration as plain data: dataclasses, strict YAML loading and `key=value` overrides.

A config file is YAML with one mapping per section (`model`, `objective`, `optimizer`, `run`),
and optionally `include:` naming config files to read first (e.g. `include: model/small`). Every
key must name a field of its section; an unknown key is an error that names it. Values are
coerced to the field's type, so `learning_rate: 5e-4` (a string to YAML 1.1) reads as a float.
"""

from __future__ import annotations

import dataclasses
import math
import os
import typing
from typing import Any, Iterable, Mapping

import yaml

from electra_tf.errors import UserError


class ConfigError(UserError):
    """A config file or override that does not fit the schema."""


EMBEDDING_SHARINGS = ("tied", "untied", "gdes")


@dataclasses.dataclass
class ModelConfig:
    """Sizes of the discriminator and generator encoders (paper Table 6, original code).

    The generator's width is round(hidden_size * generator_fraction); its heads, feed-forward
    width and depth follow the original's rule (width // 64 heads, 4 * width, full depth)
    unless given explicitly, which checkpoints from other tools sometimes need.
    """

    vocab_size: int = 30522
    embedding_size: int = 128
    hidden_size: int = 256
    num_layers: int = 12
    num_heads: int = 4
    intermediate_size: int = 1024
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    hidden_dropout: float = 0.1
    attention_dropout: float = 0.1
    activation: str = "gelu"  # exact erf GELU; "gelu_approximate" is the tanh form
    layer_norm_epsilon: float = 1e-12
    initializer_range: float = 0.02
    generator_fraction: float = 0.25
    generator_hidden_size: int | None = None
    generator_num_heads: int | None = None
    generator_intermediate_size: int | None = None
    generator_num_layers: int | None = None
    untied_generator_embeddings: bool = False
    # tied (the original's one embedding block), untied (the generator's own, of its width), or
    # gdes: DeBERTa-v3's gradient-disentangled sharing (electra_tf/models/embeddings.py)
    embedding_sharing: str = "tied"
    # True: pre-LayerNorm blocks, LayerNorm before each sublayer and once after the last block
    # (a small-budget lever: it takes higher learning rates). No Google or Hugging Face
    # ELECTRA checkpoint has this layout, so such a model converts to neither.
    pre_layer_norm: bool = False

    @property
    def generator_embeddings_untied(self) -> bool:
        return self.untied_generator_embeddings or self.embedding_sharing == "untied"

    def generator_config(self) -> "ModelConfig":
        """The generator's sizes as a ModelConfig of their own."""
        width = self.generator_hidden_size or max(1, round(self.hidden_size * self.generator_fraction))
        return dataclasses.replace(
            self,
            hidden_size=width,
            num_heads=self.generator_num_heads or max(1, width // 64),
            intermediate_size=self.generator_intermediate_size or 4 * width,
            num_layers=self.generator_num_layers or self.num_layers,
            embedding_size=width if self.generator_embeddings_untied else self.embedding_size,
        )

    def validate(self) -> None:
        require_positive(self, "model", (
            "vocab_size", "embedding_size", "hidden_size", "num_layers", "num_heads",
            "intermediate_size", "max_position_embeddings", "type_vocab_size"))
        if self.hidden_size % self.num_heads:
            raise ConfigError(f"model.hidden_size {self.hidden_size} is not divisible by "
                              f"model.num_heads {self.num_heads}")
        if self.embedding_sharing not in EMBEDDING_SHARINGS:
            raise ConfigError(f"model.embedding_sharing must be one of "
                              f"{', '.join(EMBEDDING_SHARINGS)}, got {self.embedding_sharing!r}")
        if self.embedding_sharing == "gdes" and self.untied_generator_embeddings:
            raise ConfigError("model.embedding_sharing gdes shares the generator's word table "
                              "with the discriminator: it cannot go with "
                              "model.untied_generator_embeddings true")
        for name in ("hidden_dropout", "attention_dropout"):
            require_range(self, "model", name, 0.0, 1.0, below_high=True)
        for name in ("layer_norm_epsilon", "initializer_range", "generator_fraction"):
            require_range(self, "model", name, 0.0, above_low=True)
        require_positive(self, "model", [name for name in (
            "generator_hidden_size", "generator_num_heads", "generator_intermediate_size",
            "generator_num_layers") if getattr(self, name) is not None])
        if self.activation not in ("gelu", "gelu_approximate", "relu"):
            raise ConfigError(f"model.activation must be gelu, gelu_approximate or relu, "
                              f"got {self.activation!r}")


OBJECTIVE_VARIANTS = ("electra", "electra_15", "replace_mlm", "all_tokens_mlm")
MASKINGS = ("token", "whole_word", "span")  # what is chosen to mask: pieces, words, spans


def with_fine_tuning_dropout(model_config: ModelConfig) -> ModelConfig:
    """A pretrained model's config as fine-tuning starts from it: its sizes, and dropout at the
    model's defaults (0.1, the original's): a pretraining recipe that turned dropout off (a
    lever for small budgets) does not carry that into fine-tuning."""
    defaults = ModelConfig()
    return dataclasses.replace(model_config, hidden_dropout=defaults.hidden_dropout,
                               attention_dropout=defaults.attention_dropout)


@dataclasses.dataclass
class ObjectiveConfig:
    """The pretraining objective: masking, sampling and loss weights (original defaults).

    `variant` picks among the objectives the paper compares in Table 5, all trained on the same
    masked data with a small generator whose samples fill the chosen positions:
    - "electra": replaced-token detection over every non-pad token (the paper's ELECTRA);
    - "electra_15": the same detection loss over the chosen (masked) positions only;
    - "replace_mlm": a full-size masked LM that reads the generator's samples instead of
      [MASK] and predicts the originals at the chosen positions;
    - "all_tokens_mlm": as replace_mlm, but predicts every non-pad token through a copy
      mechanism: p = D * onehot(input token) + (1 - D) * softmax, D a sigmoid per token.
    `disc_weight` weighs the loss of the full-size network (RTD, or the two MLMs above, whose
    recipes set it to 1). `electra_objective: false` is the fifth column, BERT: one full-size
    masked LM on [MASK]ed input, no generator; it takes no variant.
    """

    electra_objective: bool = True  # False: MLM only, the BERT baseline of the paper
    variant: str = "electra"  # one of OBJECTIVE_VARIANTS (with electra_objective)
    mask_prob: float = 0.15
    mask_token_rate: float = 0.85  # of the chosen positions; the rest stay unchanged
    masking: str = "token"  # one of MASKINGS; "token" is the original's
    span_p: float = 0.2  # "span": lengths in words ~ geometric(p) truncated at span_max_words
    span_max_words: int = 10
    gen_weight: float = 1.0
    disc_weight: float = 50.0
    temperature: float = 1.0
    disallow_correct: bool = False
    uniform_generator: bool = False  # no generator network: samples uniform over the vocabulary
    seed: int = 0
    pad_token_id: int = 0
    cls_token_id: int = 101
    sep_token_id: int = 102
    mask_token_id: int = 103

    def validate(self) -> None:
        if not 0.0 < self.mask_prob < 1.0:
            raise ConfigError(f"objective.mask_prob must be in (0, 1), got {self.mask_prob}")
        if not 0.0 <= self.mask_token_rate <= 1.0:
            raise ConfigError(f"objective.mask_token_rate must be in [0, 1], got {self.mask_token_rate}")
        if self.masking not in MASKINGS:
            raise ConfigError(f"objective.masking must be one of {', '.join(MASKINGS)}, got "
                              f"{self.masking!r}")
        if not 0.0 < self.span_p < 1.0 or self.span_max_words < 1:
            raise ConfigError(f"objective.span_p must be in (0, 1) and span_max_words at least "
                              f"1, got {self.span_p} and {self.span_max_words}")
        require_range(self, "objective", "temperature", 0.0, above_low=True)
        for name in ("gen_weight", "disc_weight"):
            require_range(self, "objective", name, 0.0)
        for name in ("pad_token_id", "cls_token_id", "sep_token_id", "mask_token_id"):
            require_range(self, "objective", name, 0)
        if self.variant not in OBJECTIVE_VARIANTS:
            raise ConfigError(f"objective.variant must be one of {', '.join(OBJECTIVE_VARIANTS)}, "
                              f"got {self.variant!r}")
        if not self.electra_objective:
            if self.variant != "electra":
                raise ConfigError(f"objective.variant {self.variant} needs a generator, but "
                                  "objective.electra_objective is false (the MLM baseline): drop "
                                  "one of the two")
            if self.uniform_generator:
                raise ConfigError("objective.uniform_generator needs objective.electra_objective: "
                                  "the MLM baseline samples nothing")


OPTIMIZER_NAMES = ("adamw", "lamb")
# "original": linear warmup times linear decay from step 0 (`WarmupLinearDecay`, the original's);
# "one_cycle": a triangle, up to learning_rate at warmup_steps and down to 0 at train_steps
# (`OneCycle`, the schedule Cramming found best at small budgets)
SCHEDULES = ("original", "one_cycle")


@dataclasses.dataclass
class OptimizerConfig:
    """AdamW and the learning-rate schedule of the original (`model/optimization.py`), or LAMB
    (`name: lamb`) for large batches."""

    name: str = "adamw"  # "adamw" (the original's) or "lamb" (You et al. 2019)
    learning_rate: float = 5e-4
    warmup_steps: int = 10000
    train_steps: int = 1000000
    lr_decay_power: float = 1.0
    weight_decay: float = 0.01
    beta_1: float = 0.9
    beta_2: float = 0.999
    epsilon: float = 1e-6
    clip_norm: float = 1.0  # global-norm clipping; 0 turns it off
    schedule: str = "original"  # one of SCHEDULES
    bias_correction: bool | None = None  # None: the optimizer's default (AdamW off, LAMB on)
    layerwise_lr_decay: float = 0.0  # fine-tuning: 0.8 (0.9 for large); 0 turns it off
    layerwise_lr_decay_fix_off_by_one: bool = False  # True: top layer at decay^1 (issue #51)

    def validate(self) -> None:
        if self.name not in OPTIMIZER_NAMES:
            raise ConfigError(f"optimizer.name must be one of {', '.join(OPTIMIZER_NAMES)}, got "
                              f"{self.name!r}")
        if not 0.0 <= self.layerwise_lr_decay <= 1.0:
            raise ConfigError(f"optimizer.layerwise_lr_decay must be in [0, 1], got "
                              f"{self.layerwise_lr_decay}")
        if self.train_steps < 1:
            raise ConfigError(f"optimizer.train_steps must be positive, got {self.train_steps}")
        if self.warmup_steps < 0:
            raise ConfigError(f"optimizer.warmup_steps must be >= 0, got {self.warmup_steps}")
        if self.schedule not in SCHEDULES:
            raise ConfigError(f"optimizer.schedule must be one of {', '.join(SCHEDULES)}, got "
                              f"{self.schedule!r}")
        if self.schedule == "one_cycle" and not 0 < self.warmup_steps < self.train_steps:
            raise ConfigError(
                f"optimizer.schedule one_cycle peaks at optimizer.warmup_steps, which must be "
                f"between 0 and optimizer.train_steps ({self.train_steps}), got "
                f"{self.warmup_steps}")
        for name in ("learning_rate", "epsilon"):
            require_range(self, "optimizer", name, 0.0, above_low=True)
        for name in ("weight_decay", "lr_decay_power", "clip_norm"):  # clip_norm 0: no clipping
            require_range(self, "optimizer", name, 0.0)
        for name in ("beta_1", "beta_2"):
            require_range(self, "optimizer", name, 0.0, 1.0, below_high=True)


@dataclasses.dataclass
class RunConfig:
    """How a pretraining run is fed and driven: shapes, batch, vocabulary, checkpoints, logs."""

    max_seq_length: int = 128
    train_batch_size: int = 128  # global, over all replicas: the sequences of one update
    gradient_accumulation_steps: int = 1  # micro-batches per update (same update, less memory)
    shuffle_buffer: int = 1000
    vocab_file: str = ""  # when set, vocab_size and special token ids are taken from it
    save_checkpoints_steps: int = 1000
    keep_checkpoint_max: int = 5
    log_every_steps: int = 100
    steps_per_execution: int = 1
    eval_every_steps: int = 0  # with --eval_data: held-out metrics every N steps (0: at the end)
    eval_batches: int = 8  # held-out micro-batches (train_batch_size / accumulation) per evaluation
    # A batch that grows (pretraining_data/batch_growth.py): from initial_train_batch_size at the
    # first update to train_batch_size at update batch_growth_steps, one micro-batch at a time
    # (0 and 0: the batch is train_batch_size throughout)
    initial_train_batch_size: int = 0
    batch_growth_steps: int = 0

    def validate(self) -> None:
        require_positive(self, "run", (
            "max_seq_length", "train_batch_size", "gradient_accumulation_steps",
            "shuffle_buffer", "save_checkpoints_steps", "keep_checkpoint_max",
            "log_every_steps", "steps_per_execution", "eval_batches"))
        check_accumulation(self.train_batch_size, self.gradient_accumulation_steps, "run")
        self._check_batch_growth()
        if self.eval_every_steps < 0:
            raise ConfigError(f"run.eval_every_steps must be >= 0, got {self.eval_every_steps}")

    def _check_batch_growth(self) -> None:
        initial, steps = self.initial_train_batch_size, self.batch_growth_steps
        if not initial and not steps:
            return
        if initial < 1 or steps < 1:
            raise ConfigError(
                "run.initial_train_batch_size and run.batch_growth_steps set a growing batch "
                f"together, both positive: got {initial} and {steps}")
        micro = self.train_batch_size // self.gradient_accumulation_steps
        if initial % micro or initial >= self.train_batch_size:
            raise ConfigError(
                f"run.initial_train_batch_size {initial} must be a multiple of the micro-batch "
                f"({micro}: run.train_batch_size {self.train_batch_size} / "
                f"run.gradient_accumulation_steps {self.gradient_accumulation_steps}) below "
                f"run.train_batch_size: the batch grows one micro-batch at a time")


def check_accumulation(batch_size: int, accumulation_steps: int, prefix: str,
                       replicas: int = 1, chains: int = 1) -> None:
    """ConfigError unless the batch splits into `replicas` x `accumulation_steps` equal parts,
    each of which splits again into `chains` (--cpu_chains) equal slices."""
    across = f" on each of {replicas} replicas" if replicas > 1 else ""
    if batch_size % (replicas * accumulation_steps):
        raise ConfigError(
            f"{prefix}.gradient_accumulation_steps {accumulation_steps} does not divide the "
            f"batch{across}: {prefix}.train_batch_size {batch_size} must be a multiple of "
            f"{replicas * accumulation_steps}")
    if batch_size % (replicas * accumulation_steps * chains):
        raise ConfigError(
            f"--cpu_chains {chains} does not divide each micro-batch{across}: "
            f"{prefix}.train_batch_size {batch_size} (gradient_accumulation_steps "
            f"{accumulation_steps}) must be a multiple of {replicas * accumulation_steps * chains}")


def require_positive(section, prefix: str, names) -> None:
    """ConfigError naming the first of `names` (fields of `section`) that is below 1."""
    for name in names:
        if getattr(section, name) < 1:
            raise ConfigError(f"{prefix}.{name} must be positive, got {getattr(section, name)}")


def require_range(section, prefix: str, name: str, low: float, high: float | None = None, *,
                  above_low: bool = False, below_high: bool = False) -> None:
    """ConfigError unless `section.name` is at least `low` (above it with `above_low`) and at
    most `high` (below it with `below_high`; no upper bound when `high` is None): a wrong sign
    or zero where it means nothing is refused, not trained with."""
    value = getattr(section, name)
    too_low = value <= low if above_low else value < low
    too_high = high is not None and (value >= high if below_high else value > high)
    if too_low or too_high or math.isnan(value):
        if high is None:
            wanted = ("positive" if low == 0 else f"above {low:g}") if above_low else f">= {low:g}"
        else:
            wanted = (f"in {'(' if above_low else '['}{low:g}, {high:g}"
                      f"{')' if below_high else ']'}")
        raise ConfigError(f"{prefix}.{name} must be {wanted}, got {value}")


def validate_sections(config, sequence_section: str):
    """Validates every section, then that `<sequence_section>.max_seq_length` fits the model's
    position table; returns `config`."""
    for section in dataclasses.fields(config):
        getattr(config, section.name).validate()
    max_seq_length = getattr(config, sequence_section).max_seq_length
    if max_seq_length > config.model.max_position_embeddings:
        raise ConfigError(f"{sequence_section}.max_seq_length {max_seq_length} is above "
                          f"model.max_position_embeddings {config.model.max_position_embeddings}")
    return config


@dataclasses.dataclass
class ElectraConfig:
    """Everything a pretraining run needs to build its model, objective and optimizer."""

    model: ModelConfig = dataclasses.field(default_factory=ModelConfig)
    objective: ObjectiveConfig = dataclasses.field(default_factory=ObjectiveConfig)
    optimizer: OptimizerConfig = dataclasses.field(default_factory=OptimizerConfig)
    run: RunConfig = dataclasses.field(default_factory=RunConfig)

    def validate(self) -> "ElectraConfig":
        validate_sections(self, "run")
        if self.run.batch_growth_steps > self.optimizer.train_steps:
            raise ConfigError(f"run.batch_growth_steps {self.run.batch_growth_steps} is beyond "
                              f"optimizer.train_steps {self.optimizer.train_steps}: the batch "
                              "would still be growing when the run ends")
        return self

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.to_dict(), sort_keys=False)


@dataclasses.dataclass
class FinetuneRunConfig:
    """How a fine-tuning run is fed and driven (original `configure_finetuning.py` defaults).

    The optimizer's train_steps and warmup_steps are derived from the data: steps =
    ceil(train examples / batch) * epochs, warmup = warmup_proportion * steps.
    """

    max_seq_length: int = 128
    train_batch_size: int = 32
    gradient_accumulation_steps: int = 1  # micro-batches per update (same update, less memory)
    eval_batch_size: int = 32
    num_train_epochs: float | None = None  # None: the task's (10 for RTE and STS-B, 3 otherwise)
    warmup_proportion: float = 0.1
    loss_reduction: str = "sum"  # the original sums the per-example losses; "mean" is an option
    double_unordered: bool = True  # MRPC and STS-B training pairs again with a and b swapped
    head_dropout: float = 0.1
    seed: int = 0  # trial k uses seed + k
    eval_every_steps: int = 0  # dev metrics every N steps (0: after every epoch) and at the end
    log_every_steps: int = 50
    save_checkpoints_steps: int = 1000
    keep_checkpoint_max: int = 1
    vocab_file: str = ""  # default: the vocabulary that came with the init checkpoint
    lower_case: bool = True
    # Without num_train_epochs: at least this many steps, small training sets getting more than
    # the task's epochs (0: the task's epochs as they are).
    min_train_steps: int = 0
    # The top k transformer blocks start from a fresh initialisation instead of the pretrained
    # weights (Zhang et al. 2021: steadier few-label fine-tuning); 0, the original's, keeps all.
    reinit_top_layers: int = 0

    def validate(self) -> None:
        if self.min_train_steps < 0:
            raise ConfigError(f"finetune.min_train_steps must be >= 0, got {self.min_train_steps}")
        if self.reinit_top_layers < 0:
            raise ConfigError(f"finetune.reinit_top_layers must be >= 0, got "
                              f"{self.reinit_top_layers}")
        require_positive(self, "finetune", (
            "max_seq_length", "train_batch_size", "gradient_accumulation_steps",
            "eval_batch_size", "log_every_steps", "save_checkpoints_steps", "keep_checkpoint_max"))
        check_accumulation(self.train_batch_size, self.gradient_accumulation_steps, "finetune")
        if self.max_seq_length < 3:
            raise ConfigError("finetune.max_seq_length must be at least 3 ([CLS] a [SEP])")
        if self.num_train_epochs is not None and self.num_train_epochs <= 0:
            raise ConfigError(f"finetune.num_train_epochs must be positive, got {self.num_train_epochs}")
        if not 0.0 <= self.warmup_proportion <= 1.0:
            raise ConfigError(f"finetune.warmup_proportion must be in [0, 1], got {self.warmup_proportion}")
        if self.loss_reduction not in ("sum", "mean"):
            raise ConfigError(f"finetune.loss_reduction must be sum or mean, got {self.loss_reduction!r}")
        if self.eval_every_steps < 0:
            raise ConfigError(f"finetune.eval_every_steps must be >= 0, got {self.eval_every_steps}")
        require_range(self, "finetune", "head_dropout", 0.0, 1.0, below_high=True)


@dataclasses.dataclass
class QAConfig:
    """Question answering (SQuAD), the original's defaults (finetune.max_seq_length 512 for
    SQuAD tasks unless overridden; 384 also works)."""

    doc_stride: int = 128  # tokens between the starts of consecutive context windows
    max_query_length: int = 64  # question tokens kept
    n_best_size: int = 20
    max_answer_length: int = 30  # tokens
    beam_size: int = 20  # top-k starts, and top-k ends for each start, in the graph
    answerable_weight: float = 0.5
    null_threshold: float = -2.75  # SQuAD 2.0: "no answer" when the null logit is above this
    head: str = "joint"  # the original's joint (XLNet-style) head, or "independent" (BERT's)
    featurize_workers: int = 1  # processes featurizing the training set (>1: multiprocessing)
    predict_chunk_examples: int = 2000  # examples featurized, predicted and decoded at a time

    def validate(self) -> None:
        require_positive(self, "qa", (
            "doc_stride", "max_query_length", "n_best_size", "max_answer_length", "beam_size",
            "featurize_workers", "predict_chunk_examples"))
        if self.head not in ("joint", "independent"):
            raise ConfigError(f"qa.head must be joint or independent, got {self.head!r}")
        if self.answerable_weight < 0:
            raise ConfigError(f"qa.answerable_weight must be >= 0, got {self.answerable_weight}")


# The paper's fine-tuning learning rates (Table 7) by hidden size: Small, Base, Large.
PAPER_LEARNING_RATES = ((256, 3e-4), (768, 1e-4), (1024, 5e-5))


def learning_rate_for_width(hidden_size: int) -> float:
    """The fine-tuning learning rate of a recipe that names none: the paper's Table 7 rates at
    its three widths, log-log interpolated between them and extended as 1 / width on either side
    (the Small-to-Base slope is exactly 1 / width). Width 128 -> 6e-4, 64 -> 1.2e-3; the study
    on the Debian corpus (docs/pretraining_value.md) found 1e-3 at width 128 and 1e-4 stuck at
    chance with a few hundred labels."""
    points = PAPER_LEARNING_RATES
    if hidden_size <= points[0][0]:
        rate = points[0][1] * points[0][0] / hidden_size
    elif hidden_size >= points[-1][0]:
        rate = points[-1][1] * points[-1][0] / hidden_size
    else:
        (w0, lr0), (w1, lr1) = next((a, b) for a, b in zip(points, points[1:])
                                    if a[0] <= hidden_size <= b[0])
        t = math.log(hidden_size / w0) / math.log(w1 / w0)
        rate = math.exp(math.log(lr0) + t * math.log(lr1 / lr0))
    return float(f"{rate:.3g}")


LARGE_WIDTH = 1024  # ELECTRA-Large's hidden size


def layerwise_decay_for_width(hidden_size: int) -> float:
    """The layer-wise learning-rate decay of a recipe that names none, as the original's
    `configure_finetuning.py` switches it: 0.9 for Large (width 1024 and up), 0.8 below."""
    return 0.9 if hidden_size >= LARGE_WIDTH else 0.8


def _finetune_optimizer() -> OptimizerConfig:
    return OptimizerConfig(learning_rate=1e-4, warmup_steps=0, train_steps=1,
                           layerwise_lr_decay=0.8)


@dataclasses.dataclass
class FinetuneConfig:
    """A fine-tuning run: the encoder's sizes (from the init checkpoint), optimizer, run."""

    model: ModelConfig = dataclasses.field(default_factory=ModelConfig)
    optimizer: OptimizerConfig = dataclasses.field(default_factory=_finetune_optimizer)
    finetune: FinetuneRunConfig = dataclasses.field(default_factory=FinetuneRunConfig)
    qa: QAConfig = dataclasses.field(default_factory=QAConfig)

    def validate(self) -> "FinetuneConfig":
        return validate_sections(self, "finetune")

    to_dict = ElectraConfig.to_dict
    to_yaml = ElectraConfig.to_yaml


def _config_dir() -> str:
    """The YAML recipes: electra_tf/configs/ when installed from a wheel or sdist (setup.py
    packages them there), else the repository's configs/ (checkout, editable install, Bazel)."""
    package_dir = os.path.dirname(os.path.abspath(__file__))
    packaged = os.path.join(package_dir, "configs")
    return packaged if os.path.isdir(packaged) else os.path.join(os.path.dirname(package_dir),
                                                                 "configs")


CONFIG_DIR = _config_dir()


def _coerce(value: Any, field_type: Any, where: str) -> Any:
    """Converts a YAML or command-line value to the field's declared type."""
    optional = False
    if typing.get_origin(field_type) in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        args = [a for a in typing.get_args(field_type) if a is not type(None)]
        optional, field_type = True, args[0]
    if value is None or (optional and isinstance(value, str) and value.lower() in ("none", "null")):
        if optional:
            return None
        raise ConfigError(f"{where} must not be empty")
    try:
        if field_type is bool:
            if isinstance(value, bool):
                return value
            if isinstance(value, str) and value.lower() in ("true", "false", "1", "0", "yes", "no"):
                return value.lower() in ("true", "1", "yes")
            raise ValueError(value)
        if field_type is int:
            if isinstance(value, float) and not value.is_integer():
                raise ValueError(value)
            return int(float(value)) if isinstance(value, str) else int(value)
        if field_type is float:
            return float(value)
        if field_type is str:
            return str(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{where} expects {field_type.__name__}, got {value!r}") from None
    return value


def _update_section(section: Any, values: Mapping[str, Any], prefix: str, source: str) -> Any:
    hints = typing.get_type_hints(type(section))
    names = {f.name for f in dataclasses.fields(section)}
    updates = {}
    for key, value in values.items():
        if key not in names:
            raise ConfigError(f"unknown config key '{prefix}.{key}' in {source} (known keys in "
                              f"'{prefix}': {', '.join(sorted(names))})")
        updates[key] = _coerce(value, hints[key], f"{prefix}.{key}")
    return dataclasses.replace(section, **updates)


def apply_dict(config, values: Mapping[str, Any], source: str = "config") -> ElectraConfig:
    """Returns `config` updated from a nested mapping {section: {key: value}}."""
    sections = {f.name for f in dataclasses.fields(config)}
    for name, section_values in (values or {}).items():
        if name not in sections:
            raise ConfigError(f"unknown config section '{name}' in {source} "
                              f"(known sections: {', '.join(sorted(sections))})")
        if not isinstance(section_values, Mapping):
            raise ConfigError(f"config section '{name}' in {source} must be a mapping")
        config = dataclasses.replace(
            config, **{name: _update_section(getattr(config, name), section_values, name, source)})
    return config


def apply_overrides(config, overrides: Iterable[str]):
    """Applies `section.key=value` strings, e.g. `model.num_layers=4`."""
    for item in overrides:
        key, sep, value = item.partition("=")
        section, dot, name = key.strip().partition(".")
        if not sep or not dot:
            raise ConfigError(f"override {item!r} is not of the form section.key=value")
        config = apply_dict(config, {section: {name: yaml.safe_load(value)}}, f"override {item!r}")
    return config


def resolve_config_path(path: str) -> str:
    """Finds a config by path, or by short name under configs/ (e.g. 'model/small')."""
    candidates = [path, os.path.join(CONFIG_DIR, path), os.path.join(CONFIG_DIR, path + ".yaml")]
    for candidate in candidates:
        if os.path.isfile(candidate):
            return candidate
    raise ConfigError(f"config file not found: {path}")


def _read_file(path: str, including: tuple[str, ...]) -> tuple[str, dict, list[str]]:
    """(resolved path, its mapping without `include:`, the files that `include:` names)."""
    resolved = resolve_config_path(path)
    if resolved in including:
        raise ConfigError(f"{resolved} includes itself")
    with open(resolved) as f:
        try:
            values = yaml.safe_load(f) or {}
        except yaml.YAMLError as e:
            raise ConfigError(f"{resolved} is not valid YAML: {e}") from None
    if not isinstance(values, Mapping):
        raise ConfigError(f"{resolved} must hold a mapping of sections")
    values = dict(values)
    includes = values.pop("include", [])
    return resolved, values, [includes] if isinstance(includes, str) else list(includes)


PHASES_KEY = "phases"


@dataclasses.dataclass(frozen=True)
class Recipe:
    """A recipe read once from disk: the mapping of each of its files, in the order they apply
    (a file's `include:`s before the file itself), and the user's `section.key=value`
    overrides. `build` turns it into a config object without reading a file again.

    `phases` is a pretraining recipe's `phases:` value and the file that gave it (the last one
    in include order wins), or None; `training.phases` checks it.
    """

    name: str
    layers: tuple[tuple[str, Mapping[str, Any]], ...]  # (file, its sections), in applying order
    overrides: tuple[str, ...] = ()
    phases: tuple[str, Any] | None = None

    def build(self, base=None, defaults: Iterable[str] = (), validate: bool = True):
        """The config: `base` (default `ElectraConfig()`), every file, then `defaults` (what the
        use of the recipe sets: a phase's values, a task's sequence length), then the user's
        overrides, which have the last word; validated unless `validate` is False.
        ConfigError names the file or the override of a key outside the schema."""
        config = ElectraConfig() if base is None else base
        for source, values in self.layers:
            if isinstance(config, ElectraConfig):  # phases: is not a section
                values = {k: v for k, v in values.items() if k != PHASES_KEY}
            config = apply_dict(config, values, source)
        config = apply_overrides(config, [*defaults, *self.overrides])
        return config.validate() if validate else config

    def sets(self, key: str, defaults: Iterable[str] = ()) -> bool:
        """Whether a file of the recipe, `defaults` or the user's overrides name "section.key"."""
        section, _, name = key.partition(".")
        for _, values in self.layers:
            section_values = values.get(section)
            if isinstance(section_values, Mapping) and name in section_values:
                return True
        return key in {item.partition("=")[0].strip() for item in [*defaults, *self.overrides]}


def read_recipe(path: str, overrides: Iterable[str] = ()) -> Recipe:
    """Reads a recipe (path or name under configs/) and the files its `include:`s name,
    each once. ConfigError for a missing file, invalid YAML or an include cycle."""
    layers: list[tuple[str, Mapping[str, Any]]] = []
    phases = None

    def read(file: str, including: tuple[str, ...]) -> None:
        nonlocal phases
        resolved, values, includes = _read_file(file, including)
        for include in includes:
            read(include, including + (resolved,))
        if PHASES_KEY in values:
            phases = (resolved, values[PHASES_KEY])
        layers.append((resolved, values))

    read(path, ())
    return Recipe(path, tuple(layers), tuple(overrides), phases)


def load_config(*paths: str, overrides: Iterable[str] = (), base=None, validate: bool = True):
    """Reads YAML files in order (later ones win), then overrides, then validates (unless
    `validate` is False).

    `base` is the starting config (default `ElectraConfig()`; `FinetuneConfig()` for fine-tuning).
    """
    layers = tuple(layer for path in paths for layer in read_recipe(path).layers)
    recipe = Recipe(", ".join(paths), layers, tuple(overrides))
    return recipe.build(base, validate=validate)
