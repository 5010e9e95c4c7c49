"""TensorBoard scalars written by a run read back in step order (what the notebook plots)."""

import tensorflow as tf

from electra_tf.training.callbacks import read_scalars, write_scalars


def test_scalars_read_back_in_step_order_newest_value_winning(tmp_path):
    first = tf.summary.create_file_writer(str(tmp_path))
    for step in (20, 10):
        write_scalars(first, step, {"loss": step / 10, "disc_auc": 0.5 + step / 100})
    first.close()
    second = tf.summary.create_file_writer(str(tmp_path))
    write_scalars(second, 20, {"loss": 9.0})
    write_scalars(second, 30, {"loss": 3.0})
    second.close()
    (tmp_path / "heldout").mkdir()
    scalars = read_scalars(str(tmp_path))
    assert scalars["loss"] == ([10, 20, 30], [1.0, 9.0, 3.0])
    steps, values = scalars["disc_auc"]
    assert steps == [10, 20] and [round(v, 6) for v in values] == [0.6, 0.7]
    assert read_scalars(str(tmp_path / "heldout")) == {}


def test_a_file_cut_short_reads_up_to_the_cut_without_a_deprecation_note(tmp_path):
    import logging

    writer = tf.summary.create_file_writer(str(tmp_path))
    for step in (1, 2, 3):
        write_scalars(writer, step, {"loss": float(step)})
    writer.close()
    (path,) = tmp_path.glob("events.out.tfevents.*")
    path.write_bytes(path.read_bytes()[:-5])  # the last record half-written
    records = []
    handler = logging.Handler()
    handler.emit = records.append
    logging.getLogger("tensorflow").addHandler(handler)
    try:
        scalars = read_scalars(str(tmp_path))
    finally:
        logging.getLogger("tensorflow").removeHandler(handler)
    assert scalars["loss"] == ([1, 2], [1.0, 2.0])
    assert not [r for r in records if "deprecat" in r.getMessage().lower()]
