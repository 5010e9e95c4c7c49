"""Google's TF1 checkpoint layout: converted weights give Hugging Face PyTorch's logits."""

import re

import numpy as np
import pytest
import tensorflow as tf

from electra_tf.convert import ConversionError
from electra_tf.convert.google import load_google_checkpoint
from tests.conftest import require
from tests.convert.test_hf_parity import GEN_HIDDEN, _inputs, hf_models  # noqa: F401 (fixture)


def _tf1_name(hf_key, scope):
    """The release's variable name for an HF key (written here independently of the library)."""
    name = hf_key.replace("electra.", "", 1) if hf_key.startswith("electra.") else hf_key
    transpose = name.endswith(".weight") and not name.startswith("embeddings.") and "LayerNorm" not in name
    name = re.sub(r"layer\.(\d+)", r"layer_\1", name)
    name = name.replace("dense_prediction", "dense_1").replace("generator_lm_head.bias",
                                                               "generator_predictions.output_bias")
    name = re.sub(r"LayerNorm\.weight$", "LayerNorm.gamma", name)
    name = re.sub(r"LayerNorm\.bias$", "LayerNorm.beta", name)
    name = re.sub(r"_embeddings\.weight$", "_embeddings", name)
    name = re.sub(r"\.weight$", ".kernel", name).replace(".", "/")
    if not name.startswith(("discriminator_predictions", "generator_predictions")):
        name = f"{scope}/{name}"
    return name, transpose


def _release_tensors(disc, gen, with_generator=True):
    arrays = {}
    for key, value in disc.state_dict().items():
        name, transpose = _tf1_name(key, "electra")
        arrays[name] = value.numpy().T if transpose else value.numpy()
    if with_generator:
        for key, value in gen.state_dict().items():
            if key.startswith("electra.embeddings.") or key == "generator_lm_head.weight":
                continue  # shared with electra/embeddings
            name, transpose = _tf1_name(key, "generator")
            arrays[name] = value.numpy().T if transpose else value.numpy()
    return arrays


def _write_checkpoint(directory, arrays):
    """A TF1-style checkpoint with exactly these names, plus Adam slots and global_step."""
    rng = np.random.default_rng(0)
    tensors = dict(arrays)
    for name in list(arrays)[:5]:
        tensors[f"{name}/adam_m"] = rng.normal(size=arrays[name].shape).astype(np.float32)
        tensors[f"{name}/adam_v"] = rng.random(size=arrays[name].shape).astype(np.float32)
    tensors["global_step"] = np.int64(4000000)
    directory.mkdir(parents=True, exist_ok=True)
    prefix = str(directory / "electra_small")
    names = sorted(tensors)
    tf.raw_ops.SaveV2(prefix=prefix, tensor_names=names, shape_and_slices=[""] * len(names),
                      tensors=[tf.constant(tensors[n]) for n in names])
    (directory / "checkpoint").write_text('model_checkpoint_path: "electra_small"\n')
    return prefix


def _torch_logits(torch, model, ids, mask, segments):
    with torch.no_grad():
        return model(input_ids=torch.tensor(ids, dtype=torch.long),
                     attention_mask=torch.tensor(mask, dtype=torch.long),
                     token_type_ids=torch.tensor(segments, dtype=torch.long)).logits.numpy()


def test_release_layout_converts_to_the_same_logits_as_torch(hf_models, tmp_path):
    torch, disc, gen, _, _ = hf_models
    arrays = _release_tensors(disc, gen)
    assert "electra/encoder/layer_1/attention/self/query/kernel" in arrays
    assert "discriminator_predictions/dense_1/kernel" in arrays
    assert "generator_predictions/output_bias" in arrays
    _write_checkpoint(tmp_path / "electra_small", arrays)

    pretrainer, has_generator = load_google_checkpoint(str(tmp_path / "electra_small"),
                                                       num_heads=4, generator_num_heads=2)
    assert has_generator
    config = pretrainer.model_config
    assert (config.generator_hidden_size, config.generator_intermediate_size) == (GEN_HIDDEN, 64)
    ids, mask, segments, positions = _inputs()
    real = mask.astype(bool)
    ours = pretrainer.discriminator_logits(ids, mask, segments).numpy()
    theirs = _torch_logits(torch, disc, ids, mask, segments)
    assert np.max(np.abs(ours - theirs)[real]) < 1e-4
    ours = pretrainer.generator_logits(ids, mask, segments, positions).numpy()
    theirs = np.take_along_axis(_torch_logits(torch, gen, ids, mask, segments),
                                positions[:, :, None], axis=1)
    assert np.max(np.abs(ours - theirs)) < 1e-4


def test_discriminator_only_checkpoint_loads(hf_models, tmp_path):
    torch, disc, gen, _, _ = hf_models
    _write_checkpoint(tmp_path / "finetuned", _release_tensors(disc, gen, with_generator=False))
    pretrainer, has_generator = load_google_checkpoint(str(tmp_path / "finetuned"), num_heads=4)
    assert not has_generator
    ids, mask, segments, _ = _inputs()
    ours = pretrainer.discriminator_logits(ids, mask, segments).numpy()
    theirs = _torch_logits(torch, disc, ids, mask, segments)
    assert np.max(np.abs(ours - theirs)[mask.astype(bool)]) < 1e-4


def test_heads_default_to_hidden_over_64(hf_models, tmp_path):
    _, disc, gen, _, _ = hf_models
    _write_checkpoint(tmp_path / "ckpt", _release_tensors(disc, gen))
    pretrainer, _ = load_google_checkpoint(str(tmp_path / "ckpt"))
    assert pretrainer.model_config.num_heads == 1  # hidden 64 // 64, the original's rule


def test_mismatching_shape_names_the_first_bad_variable(hf_models, tmp_path):
    _, disc, gen, _, _ = hf_models
    arrays = _release_tensors(disc, gen)
    bad = "electra/encoder/layer_1/intermediate/dense/kernel"
    arrays[bad] = np.zeros((64, 96), np.float32)  # layer 0 says 128 wide
    _write_checkpoint(tmp_path / "bad", arrays)
    with pytest.raises(ConversionError, match=re.escape(bad)):
        load_google_checkpoint(str(tmp_path / "bad"), num_heads=4, generator_num_heads=2)


def test_not_an_electra_checkpoint_is_refused(tmp_path):
    _write_checkpoint(tmp_path / "other", {"bert/embeddings/word_embeddings": np.zeros((5, 4), np.float32)})
    with pytest.raises(ConversionError, match="no ELECTRA scope|word_embeddings"):
        load_google_checkpoint(str(tmp_path / "other"))
