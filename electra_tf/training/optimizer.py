"""The original ELECTRA optimizer: BERT-style AdamW and a warmup x linear-decay LR schedule
(and LAMB, for large batches, on the same machinery).

Follows `model/optimization.py` of google-research/electra: Adam without bias correction,
epsilon outside the square root, decoupled weight decay scaled by the learning rate that skips
LayerNorm and bias variables, global-norm clipping of the (cross-replica summed) gradients, a
learning rate that is polynomial decay multiplied by a linear warmup factor, and for fine-tuning
layer-wise learning-rate decay (`_get_layer_lrs`), which scales each variable's whole update,
weight-decay term included. `optimizer.schedule: one_cycle` replaces the original's schedule by
a triangle that peaks at the full rate (`OneCycle`), a lever for small budgets.
"""

from __future__ import annotations

import math
import re

import keras
import tensorflow as tf
from keras import ops

from electra_tf.config import OptimizerConfig
from electra_tf.models.task_model import TASK_HEAD_SCOPE

DEFAULT_EXCLUDE_PATTERN = "LayerNorm|layer_norm|bias"


def layer_depth(path: str, num_layers: int) -> int:
    """The original's depth of a variable for layer-wise LR decay, from its Keras path.

    `embeddings/...` and `embeddings_project/...` -> 0, `layer_<i>/...` -> i + 1, anything under
    a `task_specific` layer -> num_layers + 2. Any other variable is an error, as in the original.
    A pre-LayerNorm encoder's `final_layer_norm` (model.pre_layer_norm, which the original does
    not have) normalizes the last block's output: it gets that block's depth, num_layers.
    """
    parts = path.split("/")
    if "embeddings" in parts or "embeddings_project" in parts:
        return 0
    if "final_layer_norm" in parts:
        return num_layers
    for part in parts:
        match = re.fullmatch(r"layer_(\d+)", part)
        if match:
            return int(match.group(1)) + 1
    if TASK_HEAD_SCOPE in parts:
        return num_layers + 2
    raise ValueError(f"no layer depth for variable {path!r}: layer-wise LR decay needs every "
                     f"variable under embeddings/, embeddings_project/, layer_<i>/ or "
                     f"{TASK_HEAD_SCOPE}/")


def layerwise_lr_multipliers(paths, num_layers: int, decay: float,
                             fix_off_by_one: bool = False) -> dict[str, float]:
    """{path: decay ** exponent}: the learning-rate multiplier of every variable.

    Faithful (`_get_layer_lrs` of the original): exponent = num_layers + 2 - depth, so the head
    gets 1, the top layer decay^2 (the released models were tuned with this), layer 0
    decay^(n + 1) and the embeddings decay^(n + 2). `fix_off_by_one` gives the intended schedule
    (google-research/electra issue #51): the head still 1, the top layer decay^1, ..., the
    embeddings decay^(n + 1).
    """
    top = num_layers + 1 if fix_off_by_one else num_layers + 2
    return {path: decay ** max(0, top - min(layer_depth(path, num_layers), top))
            for path in paths}


@keras.saving.register_keras_serializable(package="electra_tf")
class WarmupLinearDecay(keras.optimizers.schedules.LearningRateSchedule):
    """lr(t) = lr0 * (1 - min(t, T) / T) ** power * min(1, t / W); no warmup factor if W == 0.

    Warmup and decay act together, so at t = W the rate is lr0 * (1 - W / T), not lr0.
    """

    def __init__(self, initial_learning_rate, decay_steps, warmup_steps=0, power=1.0, name=None):
        super().__init__()
        self.initial_learning_rate = float(initial_learning_rate)
        self.decay_steps = int(decay_steps)
        self.warmup_steps = int(warmup_steps)
        self.power = float(power)
        self.name = name

    def __call__(self, step):
        step = ops.cast(step, "float32")
        decay_steps = ops.cast(self.decay_steps, "float32")
        done = ops.minimum(step, decay_steps) / decay_steps
        lr = self.initial_learning_rate * ops.power(1.0 - done, self.power)
        if self.warmup_steps > 0:
            lr = lr * ops.minimum(1.0, step / ops.cast(self.warmup_steps, "float32"))
        return lr

    def get_config(self):
        return {"initial_learning_rate": self.initial_learning_rate, "decay_steps": self.decay_steps,
                "warmup_steps": self.warmup_steps, "power": self.power, "name": self.name}


@keras.saving.register_keras_serializable(package="electra_tf")
class OneCycle(keras.optimizers.schedules.LearningRateSchedule):
    """lr(t) = lr0 * min(t / W, (T - t) / (T - W)), at least 0: up in a line to lr0 at step W,
    down in a line to 0 at step T (`optimizer.schedule: one_cycle`). Unlike the original's
    schedule, the rate reaches lr0 itself, whatever W. 0 < W < T."""

    def __init__(self, peak_learning_rate, total_steps, peak_step, name=None):
        super().__init__()
        if not 0 < int(peak_step) < int(total_steps):
            raise ValueError(f"peak_step must be between 0 and total_steps {total_steps}, got "
                             f"{peak_step}")
        self.peak_learning_rate = float(peak_learning_rate)
        self.total_steps = int(total_steps)
        self.peak_step = int(peak_step)
        self.name = name

    def __call__(self, step):
        step = ops.cast(step, "float32")
        rising = step / float(self.peak_step)
        falling = (self.total_steps - step) / float(self.total_steps - self.peak_step)
        return self.peak_learning_rate * ops.maximum(0.0, ops.minimum(rising, falling))

    def get_config(self):
        return {"peak_learning_rate": self.peak_learning_rate, "total_steps": self.total_steps,
                "peak_step": self.peak_step, "name": self.name}


@keras.saving.register_keras_serializable(package="electra_tf")
class AdamWeightDecay(keras.optimizers.Optimizer):
    """Adam as in BERT/ELECTRA: no bias correction by default, epsilon outside the sqrt.

    The update of a variable is the original's `var -= lr_var * (m / (sqrt(v) + eps) + wd * var)`.
    Weight decay skips every variable whose full `variable.path` matches
    `exclude_from_weight_decay_pattern` (`re.search`). `lr_var` is the scheduled learning rate,
    times `layerwise_multiplier(variable)` when `layerwise_lr_decay` > 0 (fine-tuning; see
    `layerwise_lr_multipliers`, which needs `num_layers`).
    """

    def __init__(self, learning_rate=1e-3, weight_decay=0.01, beta_1=0.9, beta_2=0.999,
                 epsilon=1e-6, bias_correction=False,
                 exclude_from_weight_decay_pattern=DEFAULT_EXCLUDE_PATTERN,
                 layerwise_lr_decay=0.0, num_layers=None, layerwise_lr_decay_fix_off_by_one=False,
                 name="adam_weight_decay", **kwargs):
        super().__init__(learning_rate=learning_rate, weight_decay=weight_decay, name=name, **kwargs)
        self.beta_1 = beta_1
        self.beta_2 = beta_2
        self.epsilon = epsilon
        self.bias_correction = bool(bias_correction)
        self.exclude_from_weight_decay_pattern = exclude_from_weight_decay_pattern
        self.layerwise_lr_decay = float(layerwise_lr_decay or 0.0)
        self.num_layers = num_layers
        self.layerwise_lr_decay_fix_off_by_one = bool(layerwise_lr_decay_fix_off_by_one)
        if self.layerwise_lr_decay and num_layers is None:
            raise ValueError("layerwise_lr_decay needs num_layers (the encoder's depth)")
        self._path_excluded_keys = set()
        self._lr_multipliers = {}  # variable key -> layer-wise multiplier (only when != 1)

    def build(self, var_list):
        if self.built:
            return
        # Keras' own `exclude_from_weight_decay(var_names=...)` only sees the short name
        # ("gamma"), so match the full path here and remember the variables by their key. The key
        # (not the path) is what identifies a variable again inside `tf.distribute` updates, where
        # the variable seen is a per-device tf.Variable component without a `path`.
        if self.exclude_from_weight_decay_pattern:
            pattern = re.compile(self.exclude_from_weight_decay_pattern)
            self._path_excluded_keys = {
                self._var_key(v) for v in var_list
                if pattern.search(getattr(v, "path", None) or v.name)}
        if self.layerwise_lr_decay:
            paths = {self._var_key(v): getattr(v, "path", None) or v.name for v in var_list}
            by_path = layerwise_lr_multipliers(
                paths.values(), self.num_layers, self.layerwise_lr_decay,
                self.layerwise_lr_decay_fix_off_by_one)
            self._lr_multipliers = {key: by_path[path] for key, path in paths.items()
                                    if by_path[path] != 1.0}
        super().build(var_list)
        self._m = [self.add_variable_from_reference(v, "adam_m") for v in var_list]
        self._v = [self.add_variable_from_reference(v, "adam_v") for v in var_list]

    def _use_weight_decay(self, variable):
        if self._var_key(variable) in self._path_excluded_keys:
            return False
        return super()._use_weight_decay(variable)

    def layerwise_multiplier(self, variable) -> float:
        """The factor on this variable's learning rate (1.0 without layer-wise decay)."""
        return self._lr_multipliers.get(self._var_key(variable), 1.0)

    def _apply_weight_decay(self, variables):
        pass  # in `update_step`, where the layer-wise learning rate of each variable is known

    def update_step(self, gradient, variable, learning_rate):
        """var -= lr_var (m / (sqrt(v) + eps) + wd var); see `adam_update`. The moments' and the
        variable's new values are one XLA-compiled kernel, where TensorFlow's executor runs about
        ten, each a pass over the variable. Outside a distribution strategy the kernel updates
        the three variables in place (`_adam_step_in_place`); a strategy's variables are
        distributed values, which it takes and returns as tensors (`_adam_step`)."""
        dtype = variable.dtype
        lr = ops.cast(learning_rate, dtype) * self.layerwise_multiplier(variable)
        m, v = self._moments(variable)
        gradient = ops.cast(ops.convert_to_tensor(gradient), dtype)  # IndexedSlices -> dense
        steps = self._bias_correction_steps(dtype)
        constants = self._update_constants(variable)
        resources = [x.value if isinstance(x, keras.Variable) else x for x in (m, v, variable)]
        if not any(isinstance(x, tf.distribute.DistributedValues) for x in resources):
            _adam_step_in_place(gradient, *resources, lr, steps, **constants)
            return
        new_m, new_v, new_variable = _adam_step(
            gradient, tf.convert_to_tensor(m), tf.convert_to_tensor(v),
            tf.convert_to_tensor(variable), lr, steps, **constants)
        self.assign(m, new_m)
        self.assign(v, new_v)
        self.assign(variable, new_variable)

    def adam_update(self, gradient, variable):
        """Updates the moments (m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2) and returns the
        update direction before the learning rate: m_hat / (sqrt(v_hat) + eps) + wd var (no wd
        for excluded variables; m_hat = m without bias correction)."""
        dtype = variable.dtype
        m, v = self._moments(variable)
        new_m, new_v, update = adam_direction(
            ops.cast(ops.convert_to_tensor(gradient), dtype), m, v, variable,
            self._bias_correction_steps(dtype), **self._update_constants(variable))
        self.assign(m, new_m)
        self.assign(v, new_v)
        return update

    def _moments(self, variable):
        index = self._get_variable_index(variable)
        return self._m[index], self._v[index]

    def _bias_correction_steps(self, dtype):
        return ops.cast(self.iterations + 1, dtype) if self.bias_correction else None

    def _update_constants(self, variable):
        decays = self.weight_decay is not None and self._use_weight_decay(variable)
        return dict(beta_1=self.beta_1, beta_2=self.beta_2, epsilon=self.epsilon,
                    weight_decay=self.weight_decay if decays else None)

    # Keras (TF backend) clips in `apply` *before* `_all_reduce_sum_gradients` sums the replicas'
    # gradients, so under a MirroredStrategy each replica's partial gradient would be clipped by
    # its own norm. The original clips the full (summed) gradient: sum here, then clip, and make
    # the later all-reduce a no-op so the gradients are summed exactly once.
    @staticmethod
    def _multi_replica_context():
        context = tf.distribute.get_replica_context()
        return context if context is not None and context.num_replicas_in_sync > 1 else None

    def _clip_gradients(self, grads):
        # An embedding's gradient arrives as IndexedSlices with one row per looked-up token;
        # Keras' global norm squares those rows one by one, so a token seen twice counts twice.
        # The norm to clip by is the gradient's own (the original's on TPU, whose one-hot
        # lookups give dense gradients), and with gradient accumulation it must not depend on
        # how the batch was cut: densify first (the update densifies them anyway).
        grads = [tf.convert_to_tensor(g) if isinstance(g, tf.IndexedSlices) else g for g in grads]
        context = self._multi_replica_context()
        if context is not None:
            present = [g for g in grads if g is not None]
            summed = iter(context.all_reduce(tf.distribute.ReduceOp.SUM, present) if present else [])
            grads = [None if g is None else next(summed) for g in grads]
        if self.global_clipnorm and self.global_clipnorm > 0:
            return clip_by_global_norm(grads, self.global_clipnorm)
        return super()._clip_gradients(grads)

    def _all_reduce_sum_gradients(self, grads_and_vars):
        if self._multi_replica_context() is not None:
            return list(grads_and_vars)  # already summed in `_clip_gradients`
        return super()._all_reduce_sum_gradients(grads_and_vars)

    def get_config(self):
        config = super().get_config()
        config.update({"beta_1": self.beta_1, "beta_2": self.beta_2, "epsilon": self.epsilon,
                       "bias_correction": self.bias_correction,
                       "exclude_from_weight_decay_pattern": self.exclude_from_weight_decay_pattern,
                       "layerwise_lr_decay": self.layerwise_lr_decay, "num_layers": self.num_layers,
                       "layerwise_lr_decay_fix_off_by_one": self.layerwise_lr_decay_fix_off_by_one})
        return config


def clip_by_global_norm(gradients, clip_norm):
    """Each gradient (or None) times clip_norm / max(global norm, clip_norm), NaN when the norm
    is not finite: Keras' `clip_by_global_norm` and the original's `tf.clip_by_global_norm`,
    with each gradient's squared norm from one `L2Loss` kernel (half the sum of its squares, one
    read of the gradient). Keras squares each gradient into a tensor of its own and then sums
    it: in a profile of ELECTRA-Small's classification step, a Square and a Sum per variable
    took 29 ms of op time a step (two-core Intel Xeon, 2026-11-30)."""
    present = [g for g in gradients if g is not None]
    if not present:
        return gradients
    with tf.name_scope("clip_by_global_norm"):  # names its ops in a profile
        norm = tf.sqrt(2.0 * tf.add_n([tf.nn.l2_loss(tf.cast(g, tf.float32)) for g in present]))
        scale = clip_norm * tf.minimum(1.0 / norm, 1.0 / clip_norm) + (norm - norm)
        return [None if g is None else g * tf.cast(scale, g.dtype) for g in gradients]


def adam_direction(gradient, m, v, variable, steps, beta_1, beta_2, epsilon, weight_decay):
    """One variable's Adam: its gradient, moments and value (same shape and dtype), `steps` (the
    1-based step as a scalar of that dtype, or None: no bias correction) and Python constants ->
    the new m and v and the update direction before the learning rate, m_hat / (sqrt(v_hat) +
    eps) + wd var (no decay term when `weight_decay` is None)."""
    m = beta_1 * m + (1.0 - beta_1) * gradient
    v = beta_2 * v + (1.0 - beta_2) * tf.square(gradient)
    m_hat, v_hat = m, v
    if steps is not None:
        # 1 - beta^t as -expm1(t * log(beta)), with the log in float64: float32(0.999) alone
        # would put a 1e-5 relative error into 1 - beta_2.
        m_hat = m / _one_minus_power(beta_1, steps)
        v_hat = v / _one_minus_power(beta_2, steps)
    update = m_hat / (tf.sqrt(v_hat) + epsilon)
    if weight_decay is not None:
        update = update + tf.cast(weight_decay, variable.dtype) * variable
    return m, v, update


def _one_minus_power(beta, t):
    return -tf.math.expm1(t * math.log(beta)) if beta > 0 else 1.0


@tf.function(jit_compile=True, autograph=False)
def _adam_step(gradient, m, v, variable, learning_rate, steps, beta_1, beta_2, epsilon,
               weight_decay):
    """`adam_direction` and the step, as one kernel -> the new m, v and variable."""
    m, v, update = adam_direction(gradient, m, v, variable, steps, beta_1, beta_2, epsilon,
                                  weight_decay)
    return m, v, variable - learning_rate * update


@tf.function(jit_compile=True, autograph=False)
def _adam_step_in_place(gradient, m, v, variable, learning_rate, steps, beta_1, beta_2, epsilon,
                        weight_decay):
    """`_adam_step` on tf.Variables m, v and variable, assigned inside the kernel: XLA writes
    the new values into the variables' own buffers instead of three new tensors (ELECTRA-Small's
    201 updates alone in a `tf.function`: 19-20 ms against 25-27 ms, two-core Intel Xeon)."""
    new_m, new_v, update = adam_direction(gradient, m.read_value(), v.read_value(),
                                          variable.read_value(), steps, beta_1, beta_2, epsilon,
                                          weight_decay)
    m.assign(new_m)
    v.assign(new_v)
    variable.assign_sub(learning_rate * update)


# ---- LAMB --------------------------------------------------------------------------------------
# LAMB (You et al. 2019, "Large Batch Optimization for Deep Learning", Algorithm 2), for the
# large global batches of ELECTRA-Base and -Large pretraining.
#
# Per variable w with gradient g, at step t:
#
#     m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2
#     r = m_hat / (sqrt(v_hat) + eps)     m_hat, v_hat bias-corrected (the paper; on by default)
#     u = r + wd w                        (no wd for LayerNorm and bias variables)
#     w -= lr_w * (||w|| / ||u||) u       (trust ratio 1 when either norm is 0, and for the
#                                          variables excluded from weight decay, as NVIDIA's and
#                                          Google's configurations exclude them from adaptation)
#
# `lr_w` is the scheduled rate times the layer-wise multiplier when layer-wise decay is on
# (fine-tuning), as for `AdamWeightDecay`, whose machinery (decay exclusion by full variable
# path, gradients summed over replicas before global clipping) LAMB shares.


@keras.saving.register_keras_serializable(package="electra_tf")
class LambWeightDecay(AdamWeightDecay):
    """LAMB with decoupled weight decay and per-variable trust ratio; see the comment above.

    Takes AdamWeightDecay's arguments; `bias_correction` defaults to True (the paper's)."""

    def __init__(self, learning_rate=1e-3, weight_decay=0.01, beta_1=0.9, beta_2=0.999,
                 epsilon=1e-6, bias_correction=True, name="lamb", **kwargs):
        super().__init__(learning_rate=learning_rate, weight_decay=weight_decay, beta_1=beta_1,
                         beta_2=beta_2, epsilon=epsilon, bias_correction=bias_correction,
                         name=name, **kwargs)

    def uses_adaptation(self, variable) -> bool:
        """Whether the trust ratio scales this variable's update (not for the variables the
        exclusion pattern keeps from weight decay: LayerNorm and biases by default)."""
        return self._var_key(variable) not in self._path_excluded_keys

    def update_step(self, gradient, variable, learning_rate):
        dtype = variable.dtype
        lr = ops.cast(learning_rate, dtype) * self.layerwise_multiplier(variable)
        update = self.adam_update(gradient, variable)
        if self.uses_adaptation(variable):
            weight_norm = ops.sqrt(ops.sum(ops.square(variable)))
            update_norm = ops.sqrt(ops.sum(ops.square(update)))
            both_positive = ops.logical_and(weight_norm > 0, update_norm > 0)
            ratio = ops.where(both_positive,
                              weight_norm / ops.where(both_positive, update_norm, 1.0), 1.0)
            update = ratio * update
        self.assign_sub(variable, lr * update)


def create_optimizer(config: OptimizerConfig, num_layers: int | None = None) -> AdamWeightDecay:
    """The schedule and optimizer of an `OptimizerConfig`: the original's AdamW, or LAMB
    (`optimizer.name: lamb`, `LambWeightDecay`).

    `num_layers` (the encoder's depth) is needed when `config.layerwise_lr_decay` > 0.
    `config.bias_correction` None means the optimizer's own default: off for AdamW (the
    original's), on for LAMB (the paper's).
    """
    if config.schedule == "one_cycle":
        schedule = OneCycle(config.learning_rate, total_steps=config.train_steps,
                            peak_step=config.warmup_steps)
    else:
        schedule = WarmupLinearDecay(config.learning_rate, decay_steps=config.train_steps,
                                     warmup_steps=config.warmup_steps,
                                     power=config.lr_decay_power)
    optimizer_class = LambWeightDecay if config.name == "lamb" else AdamWeightDecay
    bias_correction = ({} if config.bias_correction is None
                       else {"bias_correction": config.bias_correction})
    return optimizer_class(
        learning_rate=schedule, weight_decay=config.weight_decay or None,
        beta_1=config.beta_1, beta_2=config.beta_2, epsilon=config.epsilon, **bias_correction,
        layerwise_lr_decay=config.layerwise_lr_decay, num_layers=num_layers,
        layerwise_lr_decay_fix_off_by_one=config.layerwise_lr_decay_fix_off_by_one,
        global_clipnorm=config.clip_norm if config.clip_norm > 0 else None)
