"""Packaging beyond pyproject.toml's metadata: the YAML recipes ship inside the package.

`configs/` at the repository's top level is the source of truth (source checkouts, editable
installs and Bazel read it there). Mapping it to the package `electra_tf.configs` puts the
recipes in the sdist and installs them as `electra_tf/configs/**/*.yaml`, where
`electra_tf.config.CONFIG_DIR` finds them outside the repository.
"""

from setuptools import find_namespace_packages, find_packages, setup

# Every directory of configs/ is listed as a package, so setuptools copies its YAML files
# (an unlisted data directory is skipped with a warning).
CONFIG_PACKAGES = ["electra_tf.configs"] + [
    f"electra_tf.configs.{name}" for name in find_namespace_packages(where="configs")]

setup(
    packages=find_packages(include=["electra_tf", "electra_tf.*"]) + CONFIG_PACKAGES,
    package_dir={"electra_tf.configs": "configs"},
    package_data={name: ["*.yaml"] for name in CONFIG_PACKAGES},
)
