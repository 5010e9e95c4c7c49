"""Numerical parity with Hugging Face's PyTorch ELECTRA on shared random weights."""

import numpy as np
import pytest

from electra_tf.convert import ConversionError, load_hf_pretrainer
from tests.conftest import require

VOCAB, EMBEDDING, HIDDEN, GEN_HIDDEN = 211, 24, 64, 32


def _randomise(model, torch, seed):
    """Random values everywhere (LayerNorm scales near 1), so a swapped tensor cannot hide."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, param in model.named_parameters():
            noise = torch.randn(param.shape, generator=generator)
            param.copy_(1.0 + 0.1 * noise if "LayerNorm.weight" in name else 0.05 * noise)


@pytest.fixture(scope="module")
def hf_models(tmp_path_factory):
    torch = require("torch")
    transformers = require("transformers")
    common = dict(vocab_size=VOCAB, embedding_size=EMBEDDING, num_hidden_layers=2,
                  max_position_embeddings=64, layer_norm_eps=1e-12, hidden_act="gelu",
                  attn_implementation="eager")
    disc = transformers.ElectraForPreTraining(transformers.ElectraConfig(
        hidden_size=HIDDEN, num_attention_heads=4, intermediate_size=128, **common))
    gen = transformers.ElectraForMaskedLM(transformers.ElectraConfig(
        hidden_size=GEN_HIDDEN, num_attention_heads=2, intermediate_size=64, **common))
    _randomise(disc, torch, 0)
    _randomise(gen, torch, 1)
    gen.electra.embeddings.load_state_dict(disc.electra.embeddings.state_dict())  # shared in ELECTRA
    gen.tie_weights()
    root = tmp_path_factory.mktemp("hf")
    disc.save_pretrained(root / "disc")
    gen.save_pretrained(root / "gen")
    return torch, disc.eval(), gen.eval(), str(root / "disc"), str(root / "gen")


def _inputs():
    rng = np.random.default_rng(3)
    ids = rng.integers(5, VOCAB, size=(3, 20)).astype(np.int32)
    mask = np.ones_like(ids)
    mask[1, 14:] = 0
    mask[2, 7:] = 0
    segments = np.zeros_like(ids)
    segments[:, 10:] = 1
    positions = np.array([[1, 4, 9, 19], [2, 3, 13, 0], [1, 5, 6, 0]], np.int32)
    return ids * mask, mask, segments * mask, positions


def test_discriminator_and_generator_logits_match_torch(hf_models):
    torch, disc, gen, disc_dir, gen_dir = hf_models
    pretrainer = load_hf_pretrainer(disc_dir, gen_dir)
    assert pretrainer.model_config.embedding_size == EMBEDDING
    assert pretrainer.generator.hidden_size == GEN_HIDDEN < pretrainer.discriminator.hidden_size
    ids, mask, segments, positions = _inputs()

    ours = pretrainer.discriminator_logits(ids, mask, segments).numpy()
    with torch.no_grad():
        theirs = disc(input_ids=torch.tensor(ids, dtype=torch.long),
                      attention_mask=torch.tensor(mask, dtype=torch.long),
                      token_type_ids=torch.tensor(segments, dtype=torch.long)).logits.numpy()
    real = mask.astype(bool)
    disc_diff = np.max(np.abs(ours[real] - theirs[real]))
    print(f"discriminator max |diff| {disc_diff:.2e}")
    assert disc_diff < 1e-4, disc_diff
    assert np.std(theirs[real]) > 0.1  # the comparison is not between near-constant outputs

    ours = pretrainer.generator_logits(ids, mask, segments, positions).numpy()
    with torch.no_grad():
        full = gen(input_ids=torch.tensor(ids, dtype=torch.long),
                   attention_mask=torch.tensor(mask, dtype=torch.long),
                   token_type_ids=torch.tensor(segments, dtype=torch.long)).logits.numpy()
    theirs = np.take_along_axis(full, positions[:, :, None], axis=1)
    gen_diff = np.max(np.abs(ours - theirs))
    print(f"generator max |diff| {gen_diff:.2e}")
    assert gen_diff < 1e-4, gen_diff
    assert ours.shape == (3, 4, VOCAB)


def test_discriminator_only_directory_loads_with_a_fresh_generator(hf_models):
    torch, disc, _, disc_dir, _ = hf_models
    pretrainer = load_hf_pretrainer(disc_dir, generator_fraction=0.25)
    assert pretrainer.generator.hidden_size == 16
    ids, mask, segments, _ = _inputs()
    with torch.no_grad():
        theirs = disc(input_ids=torch.tensor(ids, dtype=torch.long),
                      attention_mask=torch.tensor(mask, dtype=torch.long),
                      token_type_ids=torch.tensor(segments, dtype=torch.long)).logits.numpy()
    ours = pretrainer.discriminator_logits(ids, mask, segments).numpy()
    assert np.max(np.abs(ours - theirs)[mask.astype(bool)]) < 1e-4


def test_shape_mismatch_names_the_tensor(hf_models, tmp_path):
    _, _, _, disc_dir, gen_dir = hf_models
    import json
    import shutil
    bad = tmp_path / "gen"
    shutil.copytree(gen_dir, bad)
    config = json.loads((bad / "config.json").read_text())
    config["intermediate_size"] = 96  # the stored tensors are 64 wide
    (bad / "config.json").write_text(json.dumps(config))
    with pytest.raises(ConversionError, match="intermediate.dense.weight"):
        load_hf_pretrainer(disc_dir, str(bad))


def test_electra_model_directory_and_pytorch_bin_load(hf_models, tmp_path):
    torch, disc, _, _, _ = hf_models
    transformers = require("transformers")
    encoder = transformers.ElectraModel(disc.config)
    encoder.load_state_dict(disc.electra.state_dict())
    encoder.save_pretrained(tmp_path / "model")  # keys without the "electra." prefix, no head
    torch.save(disc.state_dict(), tmp_path / "pytorch_model.bin")
    (tmp_path / "bin").mkdir()
    (tmp_path / "pytorch_model.bin").rename(tmp_path / "bin" / "pytorch_model.bin")
    disc.config.save_pretrained(tmp_path / "bin")
    ids, mask, segments, _ = _inputs()
    with torch.no_grad():
        hidden = encoder.eval()(input_ids=torch.tensor(ids, dtype=torch.long),
                                attention_mask=torch.tensor(mask, dtype=torch.long),
                                token_type_ids=torch.tensor(segments, dtype=torch.long)
                                ).last_hidden_state.numpy()
    from_model = load_hf_pretrainer(str(tmp_path / "model"))
    ours = from_model.discriminator(ids, mask, segments).numpy()
    assert np.max(np.abs(ours - hidden)[mask.astype(bool)]) < 1e-4
    from_bin = load_hf_pretrainer(str(tmp_path / "bin"))
    for a, b in zip(from_bin.discriminator.weights, from_model.discriminator.weights):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_generator_directory_given_as_the_discriminator_is_refused(hf_models):
    _, _, _, _, gen_dir = hf_models
    with pytest.raises(ConversionError, match="holds a generator"):
        load_hf_pretrainer(gen_dir)
