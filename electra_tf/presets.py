"""The registry that the models' `from_preset` classmethods resolve through.

The models (`electra_tf.models`) read no files: `ElectraPretrainer.from_preset(path)`,
`ElectraEncoder.from_preset(path)` and the task models' `from_preset(path, **kwargs)` hand the
class and the path to the loader registered here. The package root registers
`electra_tf.loading`'s loader by name, so the models never import the loading side and the
loader (with keras-hub and TensorFlow) is imported only when a preset is loaded.
"""

from __future__ import annotations

import importlib

_loader_target: str | None = None  # "module:function"


def register_preset_loader(target: str) -> None:
    """Make `target` ("package.module:function") the loader of every `from_preset`.

    The function is called as function(model_class, path, **kwargs) and returns an instance
    of model_class (or of a subclass) with its weights loaded.
    """
    module, _, function = target.partition(":")
    if not module or not function:
        raise ValueError(f"a preset loader is 'module:function', got {target!r}")
    global _loader_target
    _loader_target = target


def load_preset(model_class: type, path: str, **kwargs):
    """`model_class` from the directory or file at `path`, through the registered loader."""
    if _loader_target is None:
        raise RuntimeError("no preset loader is registered; `import electra_tf` registers "
                           "electra_tf.loading's")
    module, _, function = _loader_target.partition(":")
    return getattr(importlib.import_module(module), function)(model_class, path, **kwargs)
