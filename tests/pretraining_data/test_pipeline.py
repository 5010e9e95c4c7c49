"""The input pipeline: static shapes, exact resume, per-pipeline file sharding, shard listing."""

import json

import numpy as np
import pytest
import tensorflow as tf

from electra_tf.config import ObjectiveConfig
from electra_tf.pretraining_data.pipeline import (DataError, check_sequence_length, find_unreadable_shard,
                                      list_shards, make_dataset, make_held_out_dataset,
                                      read_data_metadata)
from tests.run_helpers import write_records

OBJECTIVE = ObjectiveConfig(cls_token_id=2, sep_token_id=3, mask_token_id=4)


@pytest.fixture(scope="module")
def shards(tmp_path_factory):
    directory = tmp_path_factory.mktemp("records")
    write_records(directory, num_files=3, per_file=50)
    return directory


def test_list_shards_accepts_a_directory_and_skips_unfinished_files(shards, tmp_path):
    files = list_shards(str(shards))
    assert len(files) == 3 and all(".tfrecord-" in f for f in files)
    (shards / "pretrain_data.tfrecord-3-of-4.incomplete").write_bytes(b"partial")
    (shards / "metadata.json").write_text("{}")
    assert list_shards(str(shards)) == files
    assert list_shards(f"{shards}/*") == files
    with pytest.raises(DataError, match="no TFRecord files match"):
        list_shards(str(tmp_path / "nothing*"))


def test_batches_have_static_shapes_and_masks(shards):
    batch = next(iter(make_dataset(list_shards(str(shards)), 4, 32, OBJECTIVE)))
    assert batch["input_ids"].shape == (4, 32) and batch["masked_lm_positions"].shape == (4, 4)
    assert batch["masked_lm_weights"].dtype == tf.float32
    masked = batch["input_ids"].numpy() == 4
    assert masked.any() and not (masked & (batch["input_mask"].numpy() == 0)).any()


def test_resume_continues_the_stream_exactly_across_epochs(shards):
    files = list_shards(str(shards))
    full = list(make_dataset(files, 4, 32, OBJECTIVE).take(60))  # 150 examples: 37 batches/epoch
    resumed = list(make_dataset(files, 4, 32, OBJECTIVE, skip_batches=33).take(27))
    for expected, actual in zip(full[33:], resumed):
        for key in expected:
            np.testing.assert_array_equal(actual[key].numpy(), expected[key].numpy(), err_msg=key)
    other_seed = next(iter(make_dataset(files, 4, 32, OBJECTIVE, seed=1)))
    assert np.any(other_seed["input_ids"].numpy() != full[0]["input_ids"].numpy())


def test_each_input_pipeline_reads_its_own_files(shards):
    files = list_shards(str(shards))
    seen = []
    for pipeline_id in range(2):
        context = tf.distribute.InputContext(num_input_pipelines=2, input_pipeline_id=pipeline_id,
                                             num_replicas_in_sync=2)
        dataset = make_dataset(files, 50, 32, OBJECTIVE, training=False, input_context=context)
        seen.append({tuple(row) for batch in dataset for row in batch["input_mask"].numpy()})
    reference = [{tuple(row) for batch in make_dataset([f], 50, 32, OBJECTIVE, training=False)
                  for row in batch["input_mask"].numpy()} for f in files]
    assert seen[0] == reference[0] | reference[2] and seen[1] == reference[1]


def test_metadata_with_another_sequence_length_is_refused(shards):
    (shards / "metadata.json").write_text(json.dumps({"max_seq_length": 48}))
    try:
        metadata = read_data_metadata(list_shards(str(shards)))
        assert metadata == {str(shards): {"max_seq_length": 48}}
        with pytest.raises(DataError, match="built with max_seq_length 48"):
            check_sequence_length(metadata, 32)
        check_sequence_length(metadata, 48)
    finally:
        (shards / "metadata.json").unlink()


def test_shuffle_buffer_holds_at_least_two_batches(shards):
    files = list_shards(str(shards))
    in_read_order = next(iter(make_dataset(files, 50, 32, OBJECTIVE, training=False)))
    # A buffer of 1 would pass records through in read order; the buffer of 100 (2 batches)
    # draws the first batch from the first 100 records read.
    shuffled = next(iter(make_dataset(files, 50, 32, OBJECTIVE, shuffle_buffer=1)))
    rows = lambda batch: {tuple(r) for r in batch["input_mask"].numpy()}
    assert rows(shuffled) != rows(in_read_order)


def test_unreadable_shard_is_named(shards, tmp_path):
    files = list_shards(str(shards))
    assert find_unreadable_shard(files, 32) is None
    assert "does not hold input_ids/input_mask/segment_ids of length 48" in find_unreadable_shard(
        files, 48)
    corrupt = tmp_path / "pretrain_data.tfrecord-9-of-9"
    data = bytearray(open(files[1], "rb").read())
    data[40] ^= 0xFF
    corrupt.write_bytes(bytes(data))
    message = find_unreadable_shard([files[0], str(corrupt), files[2]], 32)
    assert message.startswith(f"{corrupt} is corrupt or truncated"), message


@pytest.mark.slow
def test_held_out_evaluation_averages_exactly_its_batches(shards):
    from electra_tf.models import ElectraPretrainer
    from tests.models.helpers import tiny_model_config

    objective = ObjectiveConfig(cls_token_id=2, sep_token_id=3, mask_token_id=4)
    model = ElectraPretrainer(tiny_model_config(), objective)
    model.compile(optimizer="adam", jit_compile=False)
    held_out = make_held_out_dataset(list_shards(str(shards)), 8, 32, objective, 2)
    assert held_out.cardinality().numpy() == 2
    per_batch = [model.evaluate(held_out.skip(i).take(1), verbose=0, return_dict=True)["loss"]
                 for i in range(2)]
    together = model.evaluate(held_out, verbose=0, return_dict=True)["loss"]
    # With an unknown length, Keras averaged a third, zero step in: 2/3 of the mean.
    assert abs(together - np.mean(per_batch)) < 1e-3 * abs(together)
