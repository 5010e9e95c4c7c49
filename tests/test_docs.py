"""Every code block of README.md and docs/ against the code: each `python -m electra_tf.<command>`
line names a command that exists and parses with its flags (absl's own parsing, as the command
parses them), each `--config` names a recipe, each `--override` a key of the command's config;
each Python block compiles, and every electra_tf module, name, attribute and keyword argument
it uses exists. A flag or a keyword renamed in the code fails here until the docs follow.

What these checks do not do is run the blocks: the commands' behaviour is tested where each is
tested, on tiny data. Commands of other programs in the docs (Docker, TF Serving, curl, Bazel,
apt-get) are declared in OTHER_PROGRAMS with why they are not checked here, and the test fails
on one that is not declared.
"""

from __future__ import annotations

import ast
import functools
import glob
import importlib
import inspect
import os
import re
import shlex

import pytest

from tests.run_helpers import REPO, _own_flags

DOCS = ["README.md", *sorted(os.path.relpath(p, REPO) for p in glob.glob(
    os.path.join(REPO, "docs", "*.md")))]
SHELLS = ("sh", "bash", "shell")
# program -> why its lines are not checked here
OTHER_PROGRAMS = {
    "docker": "TF Serving's container: no Docker on the test machines",
    "tensorflow_model_server": "TF Serving's binary: not installable from the registries",
    "curl": "requests to a running TF Serving",
    "apt-get": "installs Bazel (CI does, for tests/test_bazel.py)",
    "tools/bazel/bazel_offline": "runs Bazel: tests/test_bazel.py builds and tests with it",
    "pip": "installs packages (.ci/run and tests/test_wheel.py)",
    "python": "a script of the repository: the test checks that it exists; tests/test_docs_run.py runs it",
    "for": "a shell loop: its python -m lines are checked",
    "do": "a shell loop: its python -m lines are checked",
    "done": "a shell loop",
    "cd": "changes directory",
    "git": "clones the repository",
    "bash": "runs .ci/run, which CI runs",
    "python -m pytest": "the test suite itself (.ci/run runs it)",
}


def _blocks(language_names):
    """(file, first line, body) of every fenced block in those languages."""
    found = []
    for doc in DOCS:
        text = open(os.path.join(REPO, doc), encoding="utf-8").read()
        for match in re.finditer(r"^```(\w+)\n(.*?)^```", text, re.S | re.M):
            if match.group(1) in language_names:
                line = text.count("\n", 0, match.start()) + 2
                found.append((doc, line, match.group(2)))
    return found


def _shell_lines(body: str) -> list[list[str]]:
    """The tokens of each logical line of a shell block: continuations joined, a quote that
    spans lines (curl's JSON) kept whole, comments dropped."""
    lines, pending = [], ""
    for line in re.sub(r"\\\n", " ", body).splitlines():
        pending = f"{pending}\n{line}" if pending else line
        try:
            tokens = shlex.split(pending, comments=True)
        except ValueError:  # a quote still open: the line goes on
            continue
        if tokens:
            lines.append(tokens)
        pending = ""
    assert not pending, f"unclosed quote in {body[:200]!r}"
    return lines


def _commands(tokens: list[str]) -> list[list[str]]:
    """The simple commands of a line, split at ; && || | and a loop's `do`."""
    commands, current = [], []
    for token in tokens:
        parts = re.split(r"(;|&&|\|\||\|)", token)
        for part in parts:
            if part in (";", "&&", "||", "|"):
                commands.append(current)
                current = []
            elif part:
                current.append(part)
    commands.append(current)
    commands = [c for c in commands if c]
    result = []
    for command in commands:
        while command and re.fullmatch(r"[A-Z_]+=\S*", command[0]):  # VAR=value prefixes
            command = command[1:]
        if command[:1] == ["do"]:
            command = command[1:]
        if command:
            result.append(command)
    return result


def _python_commands():
    """(where, module, arguments) of every `python -m electra_tf...` command; the other
    programs named, as {program: where}; (where, path) of every `python path` script."""
    ours, others, scripts = [], {}, []
    for doc, line, body in _blocks(SHELLS):
        for tokens in _shell_lines(body):
            for command in _commands(tokens):
                where = f"{doc}:{line}: {' '.join(command)[:100]}"
                if command[:2] == ["python", "-m"] and command[2].startswith("electra_tf"):
                    ours.append((where, command[2], command[3:]))
                elif command[:2] == ["python", "-m"]:
                    others.setdefault(f"python -m {command[2]}", where)
                elif command[0] == "python" and len(command) > 1:
                    others.setdefault("python", where)
                    scripts.append((where, command[1]))
                else:
                    others.setdefault(command[0], where)
    return ours, others, scripts


COMMANDS, OTHERS, SCRIPTS = _python_commands()


def test_the_docs_have_commands_and_every_other_program_is_declared():
    assert len(COMMANDS) >= 40
    undeclared = {program: where for program, where in OTHERS.items()
                  if program not in OTHER_PROGRAMS and not os.path.exists(
                      os.path.join(REPO, program))}
    assert not undeclared, f"declare these in OTHER_PROGRAMS, or check them: {undeclared}"
    missing = [where for where, path in SCRIPTS if not os.path.isfile(os.path.join(REPO, path))]
    assert not missing, f"scripts that are not in the repository: {missing}"


def _module_name(module: str) -> str:
    """The module `python -m` runs: a package's __main__."""
    spec = importlib.util.find_spec(module)
    assert spec is not None, f"no module {module}"
    return f"{module}.__main__" if spec.submodule_search_locations else module


def _config_base(module: str):
    from electra_tf.config import ElectraConfig, FinetuneConfig

    return FinetuneConfig() if module == "electra_tf.run_finetuning" else ElectraConfig()


@pytest.mark.parametrize("module", sorted({module for _, module, _ in COMMANDS}))
def test_every_documented_command_parses_with_its_flags(module):
    from absl import flags

    from electra_tf.config import ConfigError, apply_overrides, resolve_config_path

    problems = []
    with _own_flags(_module_name(module)):
        for where, name, arguments in COMMANDS:
            if name != module:
                continue
            try:
                flags.FLAGS.unparse_flags()
                flags.FLAGS([module, *arguments])
            except flags.Error as e:
                problems.append(f"{where}: {e}")
                continue
            values = flags.FLAGS.flag_values_dict()
            config = values.get("config")
            if isinstance(config, str) and config and not config.endswith(".yaml"):
                try:
                    resolve_config_path(config)
                except ConfigError as e:
                    problems.append(f"{where}: {e}")
            for override in values.get("override") or []:
                try:
                    apply_overrides(_config_base(module), [override])
                except ConfigError as e:
                    problems.append(f"{where}: {e}")
        flags.FLAGS.unparse_flags()
    assert not problems, "\n".join(problems)


# ---- Python blocks ----------------------------------------------------------------------------

PYTHON_BLOCKS = _blocks(("python",))


class _Instance:
    """A name bound to an instance of an electra_tf class (`model = ElectraClassifier(...)`,
    `ElectraClassifier.from_preset(...)`): its methods are checked on the class."""

    def __init__(self, cls):
        self.cls = cls


class _Resolver(ast.NodeVisitor):
    """Follows names bound to electra_tf objects through a block: imports, attributes, calls'
    keyword arguments, instances made by a class or its `from_preset`; collects what does not
    exist."""

    def __init__(self):
        self.bound: dict[str, object] = {}
        self.found: dict[str, None] = {}  # the problems, each once, in order

    @property
    def problems(self) -> list[str]:
        return list(self.found)

    def problem(self, text: str) -> None:
        self.found[text] = None

    def visit_Import(self, node):
        for alias in node.names:
            if alias.name.split(".")[0] == "electra_tf":
                module = self._import(alias.name, node)
                if module is not None:
                    top = alias.asname or alias.name.split(".")[0]
                    self.bound[top] = module if alias.asname else importlib.import_module(
                        "electra_tf")

    def visit_ImportFrom(self, node):
        if (node.module or "").split(".")[0] != "electra_tf":
            return
        module = self._import(node.module, node)
        for alias in node.names:
            if module is None:
                return
            value = getattr(module, alias.name, None)
            if value is None:
                try:
                    value = importlib.import_module(f"{node.module}.{alias.name}")
                except ImportError:
                    self.problem(f"line {node.lineno}: {node.module} has no {alias.name}")
                    continue
            self.bound[alias.asname or alias.name] = value

    def _import(self, name, node):
        try:
            return importlib.import_module(name)
        except ImportError as e:
            self.problem(f"line {node.lineno}: import {name}: {e}")
            return None

    def resolve(self, node):
        """The electra_tf object an expression names (Name or attribute chain), or None."""
        if isinstance(node, ast.Name):
            return self.bound.get(node.id)
        if isinstance(node, ast.Attribute):
            base = self.resolve(node.value)
            if base is None:
                return None
            if isinstance(base, _Instance):
                if not hasattr(base.cls, node.attr):
                    self.problem(f"line {node.lineno}: {base.cls.__name__} has no {node.attr}")
                    return None
                method = getattr(base.cls, node.attr)
                return functools.partial(method, None) if inspect.isfunction(method) else None
            if not hasattr(base, node.attr):
                try:  # a submodule not imported yet
                    return importlib.import_module(f"{base.__name__}.{node.attr}")
                except (ImportError, AttributeError):
                    self.problem(f"line {node.lineno}: {getattr(base, '__name__', base)}"
                                         f" has no {node.attr}")
                    return None
            return getattr(base, node.attr)
        return None

    def visit_Attribute(self, node):
        self.resolve(node)
        self.generic_visit(node)

    def visit_Call(self, node):
        function = self.resolve(node.func)
        self.generic_visit(node)
        if function is None or not callable(function) or any(
                isinstance(a, ast.Starred) for a in node.args) or any(
                k.arg is None for k in node.keywords):
            return
        try:
            signature = inspect.signature(function)
        except (TypeError, ValueError):
            return
        try:
            signature.bind(*[None] * len(node.args),
                           **{k.arg: None for k in node.keywords})
        except TypeError as e:
            self.problem(f"line {node.lineno}: {ast.unparse(node.func)}(...): {e}")

    def visit_Assign(self, node):
        self.generic_visit(node)
        value = self.resolve(node.value)  # an alias of an electra_tf object
        if isinstance(node.value, ast.Call):  # an instance of an electra_tf class?
            made_by = self.resolve(node.value.func)
            owner = getattr(made_by, "__self__", None)  # a classmethod's class
            value = (_Instance(made_by) if inspect.isclass(made_by) else
                     _Instance(owner) if inspect.isclass(owner) and node.value.func.attr ==
                     "from_preset" else None)
        if value is not None:
            for target in node.targets:
                if isinstance(target, ast.Name):
                    self.bound[target.id] = value


@pytest.mark.parametrize("doc, line, body", PYTHON_BLOCKS,
                         ids=[f"{doc}:{line}" for doc, line, _ in PYTHON_BLOCKS])
def test_every_python_block_compiles_and_uses_names_that_exist(doc, line, body):
    tree = ast.parse(body, filename=f"{doc}:{line}")
    resolver = _Resolver()
    resolver.visit(tree)
    assert not resolver.problems, f"{doc}:{line}:\n" + "\n".join(resolver.problems)


def test_the_docs_have_python_blocks_that_use_the_package():
    uses = [body for _, _, body in PYTHON_BLOCKS if "electra_tf" in body]
    assert len(PYTHON_BLOCKS) >= 10 and len(uses) >= 8
