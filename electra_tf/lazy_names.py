"""Public names of a package imported on first use (PEP 562), so that importing one module of a
package does not load its siblings, and `--help` starts no TensorFlow.

    _EXPORTS = {"finetune": "electra_tf.finetuning.api", ...}   # name -> defining module
    __all__ = sorted(_EXPORTS)
    __getattr__, __dir__ = lazy_names(__name__, _EXPORTS)
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable


def lazy_names(package: str, exports: dict[str, str]) -> tuple[Callable, Callable]:
    """The `__getattr__` and `__dir__` of `package` for `exports` ({name: module}); a name is
    imported from its module on first use and kept in the package's namespace after."""

    def __getattr__(name: str):
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)  # later lookups skip this function
        return value

    def __dir__():
        return sorted(set(vars(sys.modules[package])) | set(exports))

    return __getattr__, __dir__
