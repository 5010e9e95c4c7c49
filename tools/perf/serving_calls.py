"""Calling loaded `serving_default` signatures in a benchmark: a request for one, its output, and
two timed in turns."""

import time

import numpy as np
import tensorflow as tf


def requests(signature, batch, seq):
    """A request for `signature` (a loaded `serving_default`): {input name: int tensor [batch,
    seq]}: random ids in [5, 100) for `input_ids`, ones for every input whose name has "mask"
    in it and zeros for the others (segment ids)."""
    positional, specs = signature.structured_input_signature  # a loaded one: by name only
    specs = specs or {spec.name: spec for spec in positional}
    ids = np.random.default_rng(0).integers(5, 100, size=(batch, seq))
    inputs = {}
    for name, spec in specs.items():
        if name == "input_ids":
            values = ids
        else:
            values = np.full((batch, seq), int("mask" in name))
        inputs[name] = tf.constant(values, spec.dtype)
    return inputs


def first_float_output(outputs):
    """The first floating-point output of a signature's result dict, by name."""
    return next(outputs[name] for name in sorted(outputs) if outputs[name].dtype.is_floating)


def time_alternately(call_a, call_b, rounds):
    """Wall times (seconds) of `rounds` calls of each, A first in even rounds, B first in odd
    ones, after three untimed calls of each."""
    for _ in range(3):
        call_a()
        call_b()
    times = {call_a: [], call_b: []}
    for index in range(rounds):
        for call in (call_a, call_b) if index % 2 == 0 else (call_b, call_a):
            start = time.perf_counter()
            call()
            times[call].append(time.perf_counter() - start)
    return times[call_a], times[call_b]
