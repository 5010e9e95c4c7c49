"""Conversion round trips and the convert_checkpoint command."""

import numpy as np
import pytest
from safetensors.numpy import load_file

from electra_tf.convert.hf import load_hf_pretrainer, save_hf
from tests.conftest import require
from tests.convert.test_google import _release_tensors, _write_checkpoint
from tests.convert.test_hf_parity import VOCAB, _inputs, hf_models  # noqa: F401 (fixture)
from tests.run_helpers import (SPECIALS, cli_args, run_cli, run_in_process, write_records,
                               write_vocab)


def convert(*args):
    """convert_checkpoint's main in this process (its flags, output and exit status)."""
    return run_in_process(list(args), module="electra_tf.convert_checkpoint")


@pytest.mark.slow
def test_hf_round_trip_gives_identical_tensors_and_loads_cleanly(hf_models, tmp_path):
    torch, disc, gen, disc_dir, gen_dir = hf_models
    transformers = require("transformers")
    save_hf(load_hf_pretrainer(disc_dir, gen_dir), str(tmp_path / "disc"), str(tmp_path / "gen"))
    for original, written in ((disc_dir, tmp_path / "disc"), (gen_dir, tmp_path / "gen")):
        before, after = load_file(f"{original}/model.safetensors"), load_file(f"{written}/model.safetensors")
        assert set(after) == set(before) - {"generator_lm_head.weight"}
        for key in after:
            np.testing.assert_array_equal(after[key], before[key], err_msg=key)
    for cls, directory, reference in ((transformers.ElectraForPreTraining, tmp_path / "disc", disc),
                                      (transformers.ElectraForMaskedLM, tmp_path / "gen", gen)):
        model, info = cls.from_pretrained(directory, output_loading_info=True,
                                          attn_implementation="eager")
        assert not any(info[k] for k in ("missing_keys", "unexpected_keys", "mismatched_keys")), info
        ids, mask, segments, _ = _inputs()
        with torch.no_grad():
            args = dict(input_ids=torch.tensor(ids, dtype=torch.long),
                        attention_mask=torch.tensor(mask, dtype=torch.long),
                        token_type_ids=torch.tensor(segments, dtype=torch.long))
            np.testing.assert_allclose(model.eval()(**args).logits.numpy(),
                                       reference(**args).logits.numpy(), atol=1e-5)


@pytest.mark.slow
def test_google_checkpoint_converts_and_pretraining_continues_from_it(hf_models, tmp_path):
    _, disc, gen, _, _ = hf_models
    release = tmp_path / "electra_small"
    _write_checkpoint(release, _release_tensors(disc, gen))
    write_vocab(release / "vocab.txt", SPECIALS + [f"w{i}" for i in range(VOCAB - 5)])
    converted = tmp_path / "converted"
    result = run_cli(["--from", "google", "--input", str(release), "--output_dir", str(converted),
                      "--num_heads", "4", "--generator_num_heads", "2"],
                     module="electra_tf.convert_checkpoint")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "generator: hidden 32, 2 layers, 2 heads" in result.stdout
    assert (converted / "vocab.txt").exists() and (converted / "config.yaml").exists()
    assert "cls_token_id: 2" in (converted / "config.yaml").read_text()

    data = write_records(tmp_path / "records")
    args = cli_args(data, str(converted / "vocab.txt"), tmp_path / "run", 3, "--noexport",
                    "--init_checkpoint", str(converted / "checkpoints"), one_layer=False)
    args[args.index("pretrain/demo")] = str(converted / "config.yaml")
    run = run_in_process(args)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "initialised weights from" in run.stderr and "step 3/3" in run.stderr


def test_electra_tf_to_hf_and_refusals(hf_models, tmp_path):
    _, _, _, disc_dir, gen_dir = hf_models
    ours = tmp_path / "ours"
    assert convert("--from", "hf", "--input", disc_dir, "--generator", gen_dir, "--output_dir",
                   str(ours)).returncode == 0
    back = tmp_path / "back"
    result = convert("--from", "electra_tf", "--input", str(ours), "--to", "hf", "--output_dir",
                     str(back))
    assert result.returncode == 0, result.stderr[-3000:]
    before, after = load_file(f"{disc_dir}/model.safetensors"), load_file(
        back / "discriminator" / "model.safetensors")
    for key in after:
        np.testing.assert_array_equal(after[key], before[key], err_msg=key)
    again = convert("--from", "electra_tf", "--input", str(ours), "--to", "hf", "--output_dir",
                    str(back))
    assert again.returncode != 0 and "is not empty" in again.stderr and "Traceback" not in again.stderr
    missing = convert("--from", "hf", "--input", str(tmp_path / "nowhere"), "--output_dir",
                      str(tmp_path / "x"))
    assert missing.returncode != 0 and "config.json" in missing.stderr
    assert "Traceback" not in missing.stderr


@pytest.mark.slow
def test_keras_hub_preset_round_trip_through_the_command(hf_models, tmp_path):
    _, _, _, disc_dir, _ = hf_models
    ours = tmp_path / "ours"
    assert convert("--from", "hf", "--input", disc_dir, "--output_dir", str(ours)).returncode == 0
    preset = tmp_path / "preset"
    to_preset = convert("--from", "electra_tf", "--input", str(ours), "--to", "keras_hub",
                        "--output_dir", str(preset))
    assert to_preset.returncode == 0, to_preset.stderr[-3000:]
    assert (preset / "config.json").exists()
    back = tmp_path / "back"
    from_preset = convert("--from", "keras_hub", "--input", str(preset), "--output_dir", str(back))
    assert from_preset.returncode == 0, from_preset.stderr[-3000:]
    assert "gelu_approximate" in (back / "config.yaml").read_text()
    import tensorflow as tf
    before = tf.train.load_checkpoint(str(ours / "checkpoints"))
    after = tf.train.load_checkpoint(str(back / "checkpoints"))
    names = [n for n in before.get_variable_to_shape_map()  # the encoder: keras-hub has no heads
             if n.startswith(("weights/discriminator.S", "weights/embeddings.S"))]
    assert len(names) > 20
    for name in names:
        np.testing.assert_array_equal(after.get_tensor(name), before.get_tensor(name), err_msg=name)
