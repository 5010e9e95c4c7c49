"""Tests for electra_tf.config: paper sizes, original defaults, strict loading and overrides."""

import dataclasses
import glob
import os
import re

import pytest

from electra_tf.config import (
    CONFIG_DIR,
    OBJECTIVE_VARIANTS,
    ConfigError,
    ElectraConfig,
    FinetuneConfig,
    ModelConfig,
    ObjectiveConfig,
    OptimizerConfig,
    apply_overrides,
    load_config,
)


def _sizes(model):
    return dict(hidden=model.hidden_size, embedding=model.embedding_size, layers=model.num_layers,
                heads=model.num_heads, ffn=model.intermediate_size)


# ----------------------------------------------------------------------------------------------
# Paper Table 6 sizes and the generator sizing rule (reference sections 2.2 and 2.5).
# ----------------------------------------------------------------------------------------------

def test_small_matches_table6():
    config = load_config("model/small")
    assert _sizes(config.model) == dict(hidden=256, embedding=128, layers=12, heads=4, ffn=1024)
    assert config.model.vocab_size == 30522
    assert config.model.generator_fraction == pytest.approx(0.25)
    assert config.objective.mask_prob == pytest.approx(0.15)
    gen = config.model.generator_config()
    assert _sizes(gen) == dict(hidden=64, embedding=128, layers=12, heads=1, ffn=256)
    # The discriminator's config is not changed by deriving the generator's.
    assert config.model.hidden_size == 256 and config.model.num_heads == 4


def test_base_matches_table6():
    config = load_config("model/base")
    assert _sizes(config.model) == dict(hidden=768, embedding=768, layers=12, heads=12, ffn=3072)
    assert config.objective.mask_prob == pytest.approx(0.15)
    gen = config.model.generator_config()
    assert _sizes(gen) == dict(hidden=256, embedding=768, layers=12, heads=4, ffn=1024)


def test_large_matches_table6():
    config = load_config("model/large")
    assert _sizes(config.model) == dict(hidden=1024, embedding=1024, layers=24, heads=16, ffn=4096)
    assert config.objective.mask_prob == pytest.approx(0.25)
    gen = config.model.generator_config()
    assert _sizes(gen) == dict(hidden=256, embedding=1024, layers=24, heads=4, ffn=1024)


def test_tiny_loads_and_validates():
    config = load_config("model/tiny")
    assert isinstance(config, ElectraConfig)
    assert _sizes(config.model) == dict(hidden=64, embedding=32, layers=2, heads=1, ffn=256)
    assert config.model.vocab_size == 1000
    config.validate()  # no error
    gen = config.model.generator_config()
    assert gen.hidden_size == 32 and gen.num_heads == 1 and gen.intermediate_size == 128
    gen.validate()


@pytest.mark.parametrize("name", ["demo", "mini"])
def test_cpu_recipes_stay_electra_and_evaluate_held_out(name):
    """The CPU recipes' measured settings (docs/small_models.md)."""
    config = load_config(f"pretrain/{name}").validate()
    generator = config.model.generator_config()
    assert config.objective.electra_objective and config.objective.disc_weight == 50.0
    assert generator.hidden_size < config.model.hidden_size
    assert generator.num_layers == config.model.num_layers
    assert config.objective.temperature == 2.0
    assert config.optimizer.bias_correction is True
    assert config.run.eval_every_steps > 0 and config.run.eval_batches > 0
    assert config.optimizer.train_steps % config.run.eval_every_steps == 0


def test_the_small_budget_recipe_is_the_study_recipe_with_its_levers_on():
    """pretrain/efficient: pretrain/study's model and objective but for the levers it
    names (pre-LN, no dropout, whole words at 25%, a one-cycle schedule to 2e-3)."""
    study = load_config("pretrain/study").validate()
    efficient = load_config("pretrain/efficient").validate()
    assert efficient.model.pre_layer_norm and not study.model.pre_layer_norm
    assert efficient.model.hidden_dropout == efficient.model.attention_dropout == 0.0
    assert (efficient.objective.masking, efficient.objective.mask_prob) == ("whole_word", 0.25)
    assert (efficient.optimizer.schedule, efficient.optimizer.learning_rate) == ("one_cycle", 2e-3)
    assert efficient.optimizer.clip_norm == 1.0
    levers = {"pre_layer_norm", "hidden_dropout", "attention_dropout"}
    assert {k: v for k, v in dataclasses.asdict(efficient.model).items() if k not in levers} == {
        k: v for k, v in dataclasses.asdict(study.model).items() if k not in levers}
    assert efficient.objective.temperature == study.objective.temperature


def test_mini_is_wider_than_tiny_with_a_quarter_width_generator():
    tiny, mini = load_config("model/tiny").model, load_config("model/mini").model
    assert mini.hidden_size == 2 * tiny.hidden_size and mini.num_layers == tiny.num_layers
    assert mini.generator_config().hidden_size == mini.hidden_size // 4


def test_head_size_is_64_for_paper_sizes():
    for name in ("small", "base", "large"):
        model = load_config(f"model/{name}").model
        assert model.hidden_size // model.num_heads == 64, name
        assert model.intermediate_size == 4 * model.hidden_size, name


# ----------------------------------------------------------------------------------------------
# Defaults of the original implementation.
# ----------------------------------------------------------------------------------------------

def test_model_defaults_match_original():
    m = ModelConfig()
    assert m.layer_norm_epsilon == 1e-12
    assert m.activation == "gelu"
    assert m.initializer_range == 0.02
    assert m.hidden_dropout == 0.1
    assert m.attention_dropout == 0.1
    assert m.max_position_embeddings == 512
    assert m.type_vocab_size == 2
    assert m.vocab_size == 30522
    assert m.untied_generator_embeddings is False


def test_objective_defaults_match_original():
    o = ObjectiveConfig()
    assert o.mask_prob == 0.15
    assert o.mask_token_rate == 0.85
    assert o.disc_weight == 50.0
    assert o.gen_weight == 1.0
    assert o.temperature == 1.0
    assert o.electra_objective is True
    assert o.variant == "electra"
    assert o.disallow_correct is False
    assert o.uniform_generator is False


def test_optimizer_defaults_match_original():
    opt = OptimizerConfig()
    assert opt.epsilon == 1e-6
    assert opt.weight_decay == 0.01
    assert opt.clip_norm == 1.0
    assert opt.warmup_steps == 10000
    assert opt.learning_rate == 5e-4
    # None: the optimizer's own default, for AdamW the original's Adam without bias correction
    assert opt.name == "adamw" and opt.bias_correction is None
    assert opt.beta_1 == 0.9 and opt.beta_2 == 0.999
    assert opt.lr_decay_power == 1.0


def test_default_config_validates():
    ElectraConfig().validate()


# ----------------------------------------------------------------------------------------------
# Strict loading.
# ----------------------------------------------------------------------------------------------

def test_unknown_key_in_yaml_names_the_key(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("model:\n  hidden_size: 64\n  hiden_layers_typo: 3\n")
    with pytest.raises(ConfigError, match="hiden_layers_typo"):
        load_config(str(path))


def test_unknown_section_in_yaml_names_the_section(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("modle:\n  hidden_size: 64\n")
    with pytest.raises(ConfigError, match="modle"):
        load_config(str(path))


def test_later_files_win(tmp_path):
    path = tmp_path / "more.yaml"
    path.write_text("model:\n  num_layers: 3\noptimizer:\n  learning_rate: 2e-4\n")
    config = load_config("model/small", str(path))
    assert config.model.num_layers == 3
    assert config.model.hidden_size == 256  # from small.yaml, untouched
    # "2e-4" is a string to YAML 1.1; it must still be coerced to a float.
    assert isinstance(config.optimizer.learning_rate, float)
    assert config.optimizer.learning_rate == pytest.approx(2e-4)


def test_missing_file_is_config_error():
    with pytest.raises(ConfigError, match="no_such_config"):
        load_config("model/no_such_config")


# ----------------------------------------------------------------------------------------------
# Overrides.
# ----------------------------------------------------------------------------------------------

def test_apply_overrides_with_types():
    config = apply_overrides(ElectraConfig(), [
        "model.num_layers=4", "optimizer.learning_rate=1e-3", "objective.disallow_correct=true"])
    assert config.model.num_layers == 4 and type(config.model.num_layers) is int
    assert config.optimizer.learning_rate == pytest.approx(1e-3)
    assert type(config.optimizer.learning_rate) is float
    assert config.objective.disallow_correct is True
    # Untouched fields keep their defaults; the input config is not mutated.
    assert config.model.hidden_size == 256
    assert ElectraConfig().model.num_layers == 12


def test_apply_overrides_optional_int_and_none():
    config = apply_overrides(ElectraConfig(), ["model.generator_hidden_size=128"])
    assert config.model.generator_hidden_size == 128
    config = apply_overrides(config, ["model.generator_hidden_size=null"])
    assert config.model.generator_hidden_size is None


@pytest.mark.parametrize("override", ["model.num_layers", "num_layers=3"])
def test_malformed_override(override):
    with pytest.raises(ConfigError):
        apply_overrides(ElectraConfig(), [override])


def test_override_unknown_key_and_section():
    with pytest.raises(ConfigError, match="num_layer"):
        apply_overrides(ElectraConfig(), ["model.num_layer=3"])
    with pytest.raises(ConfigError, match="modl"):
        apply_overrides(ElectraConfig(), ["modl.num_layers=3"])


@pytest.mark.parametrize("override, key", [
    ("model.num_layers=abc", "model.num_layers"),
    ("model.num_layers=2.5", "model.num_layers"),
    ("optimizer.learning_rate=fast", "optimizer.learning_rate"),
    ("objective.disallow_correct=maybe", "objective.disallow_correct"),
])
def test_override_wrong_type_names_key(override, key):
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        apply_overrides(ElectraConfig(), [override])


def test_load_config_applies_overrides_after_files():
    config = load_config("model/small", overrides=["model.num_layers=2"])
    assert config.model.num_layers == 2
    assert config.model.generator_config().num_layers == 2


# ----------------------------------------------------------------------------------------------
# Validation.
# ----------------------------------------------------------------------------------------------

def test_hidden_not_divisible_by_heads():
    with pytest.raises(ConfigError, match="divisible"):
        load_config("model/small", overrides=["model.num_heads=3"])


@pytest.mark.parametrize("value", ["1.5", "0", "1.0", "-0.1"])
def test_mask_prob_out_of_range(value):
    with pytest.raises(ConfigError, match="mask_prob"):
        load_config("model/tiny", overrides=[f"objective.mask_prob={value}"])


def test_other_validation_errors():
    with pytest.raises(ConfigError, match="num_layers"):
        load_config("model/tiny", overrides=["model.num_layers=0"])
    with pytest.raises(ConfigError, match="activation"):
        load_config("model/tiny", overrides=["model.activation=swish"])
    with pytest.raises(ConfigError, match="temperature"):
        load_config("model/tiny", overrides=["objective.temperature=0"])
    with pytest.raises(ConfigError, match="train_steps"):
        load_config("model/tiny", overrides=["optimizer.train_steps=0"])


def test_objective_variant_must_be_known():
    for variant in OBJECTIVE_VARIANTS:
        config = load_config("model/tiny", overrides=[f"objective.variant={variant}"])
        assert config.objective.variant == variant
    with pytest.raises(ConfigError, match=r"objective\.variant .*replace_mlm.*'replace'"):
        load_config("model/tiny", overrides=["objective.variant=replace"])


@pytest.mark.parametrize("override", ["objective.variant=electra_15",
                                      "objective.variant=replace_mlm",
                                      "objective.uniform_generator=true"])
def test_mlm_baseline_takes_no_variant_and_no_uniform_generator(override):
    with pytest.raises(ConfigError, match=r"electra_objective.*false|electra_objective: the MLM"):
        load_config("model/tiny", overrides=["objective.electra_objective=false", override])


def test_uniform_generator_combines_with_every_variant():
    for variant in OBJECTIVE_VARIANTS:
        load_config("model/tiny", overrides=[f"objective.variant={variant}",
                                             "objective.uniform_generator=true"])


# Paper Table 5's columns: recipe -> (electra_objective, variant, disc_weight).
TABLE5_RECIPES = {
    "electra": (True, "electra", 50.0),
    "all_tokens_mlm": (True, "all_tokens_mlm", 1.0),
    "replace_mlm": (True, "replace_mlm", 1.0),
    "electra_15": (True, "electra_15", 50.0),
    "mlm": (False, "electra", 50.0),
}


def test_every_ablation_recipe_is_a_table5_column():
    found = {os.path.splitext(os.path.basename(path))[0]
             for path in glob.glob(os.path.join(CONFIG_DIR, "pretrain", "ablations", "*.yaml"))}
    assert found == set(TABLE5_RECIPES)


@pytest.mark.parametrize("name", sorted(TABLE5_RECIPES))
def test_ablation_recipe_is_electra_small_with_one_objective_change(name):
    config = load_config(f"pretrain/ablations/{name}")
    small = load_config("pretrain/electra_small")
    electra_objective, variant, disc_weight = TABLE5_RECIPES[name]
    assert (config.objective.electra_objective, config.objective.variant,
            config.objective.disc_weight) == (electra_objective, variant, disc_weight)
    objective = dataclasses.replace(small.objective, electra_objective=electra_objective,
                                    variant=variant, disc_weight=disc_weight)
    assert config == dataclasses.replace(small, objective=objective)


# ----------------------------------------------------------------------------------------------
# YAML round trip.
# ----------------------------------------------------------------------------------------------

def test_to_yaml_round_trip(tmp_path):
    config = load_config("model/base", overrides=[
        "model.generator_num_layers=6", "model.activation=gelu_approximate",
        "objective.disallow_correct=true", "objective.temperature=0.5",
        "optimizer.learning_rate=2e-4", "optimizer.bias_correction=true"])
    path = tmp_path / "dumped.yaml"
    path.write_text(config.to_yaml())
    reloaded = load_config(str(path))
    assert reloaded == config
    assert reloaded.model.generator_hidden_size is None
    assert reloaded.model.generator_num_layers == 6
    assert reloaded.optimizer.learning_rate == 2e-4


def test_default_config_yaml_round_trip(tmp_path):
    path = tmp_path / "default.yaml"
    path.write_text(ElectraConfig().to_yaml())
    assert load_config(str(path)) == ElectraConfig()


# ----------------------------------------------------------------------------------------------
# Explicit generator sizes and untied embeddings.
# ----------------------------------------------------------------------------------------------

def test_explicit_generator_sizes_win_over_fraction():
    model = dataclasses.replace(
        load_config("model/small").model, generator_hidden_size=128, generator_num_heads=8,
        generator_intermediate_size=300, generator_num_layers=3)
    gen = model.generator_config()
    assert gen.hidden_size == 128
    assert gen.num_heads == 8
    assert gen.intermediate_size == 300
    assert gen.num_layers == 3
    assert gen.embedding_size == 128  # tied: the discriminator's E


def test_explicit_generator_width_drives_derived_sizes():
    model = load_config("model/small", overrides=["model.generator_hidden_size=128"]).model
    gen = model.generator_config()
    assert gen.hidden_size == 128
    assert gen.num_heads == 2       # 128 // 64
    assert gen.intermediate_size == 512  # 4 * 128
    assert gen.num_layers == 12


def test_untied_generator_embeddings_use_generator_width():
    model = load_config("model/small", overrides=["model.untied_generator_embeddings=true"]).model
    gen = model.generator_config()
    assert gen.hidden_size == 64
    assert gen.embedding_size == 64
    assert model.embedding_size == 128  # discriminator unchanged
    tied = load_config("model/small").model.generator_config()
    assert tied.embedding_size == 128


def test_gradient_accumulation_steps_must_divide_the_batch():
    from electra_tf.config import ConfigError, ElectraConfig, apply_overrides

    config = apply_overrides(ElectraConfig(), ["run.train_batch_size=64",
                                               "run.gradient_accumulation_steps=8"]).validate()
    assert config.run.gradient_accumulation_steps == 8
    assert ElectraConfig().run.gradient_accumulation_steps == 1
    with pytest.raises(ConfigError, match="run.gradient_accumulation_steps 5 does not divide the "
                                          "batch: run.train_batch_size 64 must be a multiple of 5"):
        apply_overrides(ElectraConfig(), ["run.train_batch_size=64",
                                          "run.gradient_accumulation_steps=5"]).validate()
    with pytest.raises(ConfigError, match="run.gradient_accumulation_steps must be positive"):
        apply_overrides(ElectraConfig(), ["run.gradient_accumulation_steps=0"]).validate()


def test_fine_tuning_gradient_accumulation_steps_must_divide_the_batch():
    from electra_tf.config import ConfigError, FinetuneConfig, apply_overrides

    assert apply_overrides(FinetuneConfig(), ["finetune.gradient_accumulation_steps=4"]
                           ).validate().finetune.gradient_accumulation_steps == 4
    with pytest.raises(ConfigError, match="finetune.gradient_accumulation_steps 3 does not divide "
                                          "the batch: finetune.train_batch_size 32"):
        apply_overrides(FinetuneConfig(), ["finetune.gradient_accumulation_steps=3"]).validate()


def test_cpu_chains_must_divide_each_micro_batch():
    from electra_tf.config import ConfigError, check_accumulation

    check_accumulation(32, 2, "run", replicas=2, chains=2)  # 8 rows a micro-batch, 4 a chain
    with pytest.raises(ConfigError, match=r"--cpu_chains 3 does not divide each micro-batch: "
                                          r"finetune.train_batch_size 32 \(gradient_accumulation_"
                                          r"steps 2\) must be a multiple of 6"):
        check_accumulation(32, 2, "finetune", chains=3)
    with pytest.raises(ConfigError, match="micro-batch on each of 2 replicas: run.train_batch_size "
                                          "8 .* must be a multiple of 16"):
        check_accumulation(8, 2, "run", replicas=2, chains=4)
    with pytest.raises(ConfigError, match="gradient_accumulation_steps 3 does not divide"):
        check_accumulation(8, 3, "run", chains=2)  # accumulation's own message comes first


@pytest.mark.parametrize("name, paper, changed", [
    ("electra_small_plus", "electra_small", {"model.generator_fraction": 1.0,
                                             "optimizer.train_steps": 4000000,
                                             "run.max_seq_length": 512}),
    ("electra_base_plus", "electra_base", {"optimizer.train_steps": 4000000}),
])
def test_plus_recipes_are_the_papers_with_the_released_models_differences(name, paper, changed):
    plus, base = load_config(f"pretrain/{name}"), load_config(f"pretrain/{paper}")
    expected = base
    for key, value in changed.items():
        section, field = key.split(".")
        expected = dataclasses.replace(expected, **{section: dataclasses.replace(
            getattr(expected, section), **{field: value})})
    assert plus == expected


# Values whose sign or size means nothing: refused with the key, in overrides and files alike.
OUT_OF_RANGE = [
    ("optimizer.learning_rate=-1", "optimizer.learning_rate must be positive, got -1.0"),
    ("optimizer.learning_rate=0", "optimizer.learning_rate must be positive, got 0.0"),
    ("optimizer.warmup_steps=-5", "optimizer.warmup_steps must be >= 0, got -5"),
    ("optimizer.weight_decay=-0.01", "optimizer.weight_decay must be >= 0, got -0.01"),
    ("optimizer.lr_decay_power=-1", "optimizer.lr_decay_power must be >= 0, got -1.0"),
    ("optimizer.clip_norm=-1", "optimizer.clip_norm must be >= 0, got -1.0"),
    ("optimizer.epsilon=0", "optimizer.epsilon must be positive, got 0.0"),
    ("optimizer.epsilon=.nan", "optimizer.epsilon must be positive, got nan"),
    ("optimizer.beta_1=1", "optimizer.beta_1 must be in [0, 1), got 1.0"),
    ("optimizer.beta_2=-0.5", "optimizer.beta_2 must be in [0, 1), got -0.5"),
    ("optimizer.train_steps=-3", "optimizer.train_steps must be positive, got -3"),
    ("objective.mask_prob=0", "objective.mask_prob must be in (0, 1), got 0.0"),
    ("objective.mask_token_rate=1.5", "objective.mask_token_rate must be in [0, 1], got 1.5"),
    ("objective.temperature=-1", "objective.temperature must be positive, got -1.0"),
    ("objective.disc_weight=-50", "objective.disc_weight must be >= 0, got -50.0"),
    ("objective.gen_weight=-1", "objective.gen_weight must be >= 0, got -1.0"),
    ("objective.mask_token_id=-1", "objective.mask_token_id must be >= 0, got -1"),
    ("model.hidden_dropout=1", "model.hidden_dropout must be in [0, 1), got 1.0"),
    ("model.attention_dropout=-0.1", "model.attention_dropout must be in [0, 1), got -0.1"),
    ("model.layer_norm_epsilon=0", "model.layer_norm_epsilon must be positive, got 0.0"),
    ("model.initializer_range=-0.02", "model.initializer_range must be positive, got -0.02"),
    ("model.generator_fraction=0", "model.generator_fraction must be positive, got 0.0"),
    ("model.generator_num_layers=0", "model.generator_num_layers must be positive, got 0"),
    ("run.train_batch_size=-8", "run.train_batch_size must be positive, got -8"),
]


@pytest.mark.parametrize("override, message", OUT_OF_RANGE)
def test_pretraining_values_out_of_range_are_refused(override, message, tmp_path):
    with pytest.raises(ConfigError) as raised:
        load_config("pretrain/demo", overrides=[override])
    assert str(raised.value) == message
    # the same value in a recipe file
    section, _, rest = override.partition(".")
    key, _, value = rest.partition("=")
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text(f"include: pretrain/demo\n{section}:\n  {key}: {value}\n")
    with pytest.raises(ConfigError, match=re.escape(message)):
        load_config(str(recipe))


@pytest.mark.parametrize("override, message", [
    ("optimizer.learning_rate=-3e-4", "optimizer.learning_rate must be positive"),
    ("finetune.head_dropout=1.5", "finetune.head_dropout must be in [0, 1), got 1.5"),
    ("finetune.warmup_proportion=-0.1", "finetune.warmup_proportion must be in [0, 1]"),
    ("finetune.num_train_epochs=0", "finetune.num_train_epochs must be positive"),
    ("finetune.eval_batch_size=0", "finetune.eval_batch_size must be positive"),
])
def test_fine_tuning_values_out_of_range_are_refused(override, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        load_config("finetune/default", base=FinetuneConfig(), overrides=[override])


def test_the_edges_of_each_range_are_accepted():
    config = load_config("pretrain/demo", overrides=[
        "optimizer.weight_decay=0", "optimizer.clip_norm=0", "optimizer.warmup_steps=0",
        "optimizer.beta_1=0", "optimizer.lr_decay_power=0", "model.hidden_dropout=0",
        "model.attention_dropout=0", "objective.gen_weight=0", "objective.mask_token_rate=1"])
    assert config.optimizer.clip_norm == 0.0 and config.model.hidden_dropout == 0.0
