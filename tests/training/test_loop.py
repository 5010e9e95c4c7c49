"""The shared training loop: fresh runs initialise, later calls resume where the last stopped."""

import keras
import numpy as np
import tensorflow as tf

from electra_tf.training import callbacks, loop


class _Regressor(keras.Sequential):
    """Like the package's models, it brings its own loss: the loop compiles only the optimizer."""

    def compile(self, **kwargs):
        super().compile(loss="mse", **kwargs)


def _build():
    return _Regressor([keras.Input((3,)), keras.layers.Dense(1)], name="toy")


def _data(start):
    x = np.arange(48, dtype="float32").reshape(16, 3) / 48
    dataset = tf.data.Dataset.from_tensor_slices((x, x.sum(-1, keepdims=True))).repeat().batch(4)
    return dataset.skip(start)


class _Recorder(keras.callbacks.Callback):
    def __init__(self, start, seen):
        super().__init__()
        seen.append(("callbacks", start))


def _run(tmp_path, total, seen, preemption):
    def make_optimizer():
        return keras.optimizers.SGD(0.1)

    def make_callbacks(model, start):
        return [_Recorder(start, seen)]

    return loop.run_training(
        strategy=tf.distribute.get_strategy(), seed=0,
        build_model=_build, make_optimizer=make_optimizer,
        jit_compile=False, checkpoint_dir=str(tmp_path / "checkpoints"), keep_checkpoint_max=2,
        total_steps=total, save_checkpoints_steps=2, log_every_steps=2, global_batch_size=4,
        tensorboard_dir=str(tmp_path / "tensorboard"), preemption=preemption,
        make_dataset=_data, describe=lambda start: f"toy from {start}",
        initialize=lambda model: seen.append(("initialize", None)),
        make_callbacks=make_callbacks, metric_names=("loss",))


def test_a_fresh_run_initialises_and_a_second_call_resumes(tmp_path):
    preemption = callbacks.Preemption()
    try:
        seen = []
        first = _run(tmp_path, 4, seen, preemption)
        assert (first.start, first.step, first.status) == (0, 4, "finished")
        assert seen == [("initialize", None), ("callbacks", 0)]
        assert first.checkpoint.latest.endswith("-4")

        seen = []
        second = _run(tmp_path, 6, seen, preemption)
        assert (second.start, second.step, second.status) == (4, 6, "finished")
        assert seen == [("callbacks", 4)]  # resumed: not initialised again
        np.testing.assert_equal(second.model.optimizer.iterations.numpy(), 6)

        seen = []
        done = _run(tmp_path, 6, seen, preemption)
        assert (done.start, done.step, done.status) == (6, 6, "finished")  # nothing left to do
    finally:
        preemption.restore()
