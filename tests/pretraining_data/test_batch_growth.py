"""A growing batch: the schedule, micro-batches joined per update, exact resume, the refusals."""

import numpy as np
import pytest
import tensorflow as tf

from electra_tf.config import ConfigError, ElectraConfig, ObjectiveConfig, RunConfig
from electra_tf.pretraining_data.batch_growth import BatchGrowth, group_micro_batches
from electra_tf.pretraining_data.pipeline import list_shards, make_distributed_dataset
from tests.run_helpers import write_records

OBJECTIVE = ObjectiveConfig(cls_token_id=2, sep_token_id=3, mask_token_id=4)


def test_the_batch_grows_linearly_in_equal_stages_of_one_micro_batch():
    run = RunConfig(train_batch_size=32, gradient_accumulation_steps=4,
                    initial_train_batch_size=8, batch_growth_steps=8)
    growth = BatchGrowth.from_run(run)
    # 4 stages (1, 2, 3, 4 micro-batches of 8) of 8 / 4 = 2 updates, then 4 for ever.
    assert [growth.micro_batches_at(u) for u in range(11)] == [1, 1, 2, 2, 3, 3, 4, 4, 4, 4, 4]
    assert [growth.batch_at(u) for u in (0, 2, 7, 100)] == [8, 16, 32, 32]
    assert growth.micro_batches_before(0) == 0
    assert growth.micro_batches_before(5) == 1 + 1 + 2 + 2 + 3
    assert growth.micro_batches_before(10) == 20 + 2 * 4
    assert growth.sequences_before(10) == 28 * 8
    assert BatchGrowth.from_run(RunConfig()) is None
    uneven = BatchGrowth(micro_batch=8, initial=2, final=4, steps=7)  # 3 stages over 7 updates
    assert [uneven.micro_batches_at(u) for u in range(8)] == [2, 2, 2, 3, 3, 4, 4, 4]


def _numbered(count, rows=2):
    """Micro-batches whose every row holds the micro-batch's number."""
    return tf.data.Dataset.range(count).map(
        lambda i: {"id": tf.fill([rows, 3], tf.cast(i, tf.int32))})


def _micro_batch_numbers(element):
    rows = element["id"].numpy()[:, 0]
    return sorted(set(rows[::2].tolist())), len(rows)


@pytest.mark.parametrize("replicas", [1, 2])
def test_each_update_joins_its_micro_batches_and_a_resumed_stream_is_the_tail(replicas):
    growth = BatchGrowth(micro_batch=2 * replicas, initial=1, final=3, steps=6)
    joined = [_micro_batch_numbers(e) for e in group_micro_batches(
        _numbered(200), growth, start=0, replicas_per_pipeline=replicas).take(9 * replicas)]
    sizes = [growth.micro_batches_at(u) for u in range(9) for _ in range(replicas)]
    assert [rows for _, rows in joined] == [2 * k for k in sizes]
    numbers = [n for micro_batches, _ in joined for n in micro_batches]
    assert numbers == list(range(len(numbers)))  # consecutive, none lost or repeated
    for start in (3, 7):  # inside the growth and after it
        skipped = growth.micro_batches_before(start) * replicas
        resumed = [_micro_batch_numbers(e) for e in group_micro_batches(
            _numbered(200).skip(skipped), growth, start=start,
            replicas_per_pipeline=replicas).take((9 - start) * replicas)]
        assert resumed == joined[start * replicas:]


def test_the_distributed_pipeline_resumes_a_growing_batch_exactly(tmp_path):
    write_records(tmp_path, num_files=2, per_file=60)
    files = list_shards(str(tmp_path))
    growth = BatchGrowth(micro_batch=4, initial=1, final=3, steps=6)
    strategy = tf.distribute.get_strategy()

    def updates(start, count):
        dataset = make_distributed_dataset(strategy, files, 4, 32, OBJECTIVE,
                                           skip_global_batches=start, growth=growth)
        return [batch["input_ids"].numpy() for batch in dataset.take(count)]

    full = updates(0, 8)
    assert [len(batch) for batch in full] == [4, 4, 8, 8, 12, 12, 12, 12]
    for expected, actual in zip(full[3:], updates(3, 5)):
        np.testing.assert_array_equal(actual, expected)


@pytest.mark.parametrize("values, message", [
    ({"initial_train_batch_size": 12}, "multiple of the micro-batch"),
    ({"initial_train_batch_size": 32}, "below run.train_batch_size"),
    ({"initial_train_batch_size": 0}, "together, both positive"),
    ({"batch_growth_steps": 0}, "together, both positive"),
])
def test_a_growth_that_does_not_divide_into_micro_batches_is_refused(values, message):
    settings = {"train_batch_size": 32, "gradient_accumulation_steps": 4,
                "initial_train_batch_size": 8, "batch_growth_steps": 100, **values}
    with pytest.raises(ConfigError, match=message):
        RunConfig(**settings).validate()


def test_a_batch_still_growing_when_the_run_ends_is_refused():
    config = ElectraConfig(run=RunConfig(train_batch_size=32, gradient_accumulation_steps=4,
                                         initial_train_batch_size=8, batch_growth_steps=500))
    config.optimizer.train_steps = 400
    with pytest.raises(ConfigError, match="still be growing when the run ends"):
        config.validate()
    config.optimizer.train_steps = 500
    config.validate()
