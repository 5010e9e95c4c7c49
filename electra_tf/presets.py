"""The registry that the models' `from_preset` and `compile_for_finetuning` resolve through.

The models (`electra_tf.models`) read no files: `ElectraPretrainer.from_preset(path)`,
`ElectraEncoder.from_preset(path)` and the task models' `from_preset(path, **kwargs)` hand the
class and the path to the loader registered here. The package root registers
`electra_tf.loading`'s loader by name, so the models never import the loading side and the
loader (with keras-hub and TensorFlow) is imported only when a preset is loaded. The task
models' `compile_for_finetuning` reaches the fine-tuning recipe (`electra_tf.finetuning`) the
same way.
"""

from __future__ import annotations

import importlib

_targets: dict[str, str] = {}  # what -> "module:function"
PRESET_LOADER, FINETUNING_COMPILER = "preset loader", "fine-tuning compiler"


def _register(what: str, target: str) -> None:
    module, _, function = target.partition(":")
    if not module or not function:
        raise ValueError(f"a {what} is 'module:function', got {target!r}")
    _targets[what] = target


def _call(what: str, *args, **kwargs):
    if what not in _targets:
        raise RuntimeError(f"no {what} is registered; `import electra_tf` registers it")
    module, _, function = _targets[what].partition(":")
    return getattr(importlib.import_module(module), function)(*args, **kwargs)


def register_preset_loader(target: str) -> None:
    """Make `target` ("package.module:function") the loader of every `from_preset`.

    The function is called as function(model_class, path, **kwargs) and returns an instance
    of model_class (or of a subclass) with its weights loaded.
    """
    _register(PRESET_LOADER, target)


def load_preset(model_class: type, path: str, **kwargs):
    """`model_class` from the directory or file at `path`, through the registered loader."""
    return _call(PRESET_LOADER, model_class, path, **kwargs)


def register_finetuning_compiler(target: str) -> None:
    """Make `target` the function behind the task models' `compile_for_finetuning`, called as
    function(model, num_train_steps, config, overrides, **compile_kwargs)."""
    _register(FINETUNING_COMPILER, target)


def compile_for_finetuning(model, num_train_steps: int, config: str, overrides=(),
                           **compile_kwargs):
    return _call(FINETUNING_COMPILER, model, num_train_steps, config, overrides,
                 **compile_kwargs)
