"""Runs the code of README.md and docs/: every `python -m electra_tf...` command and repository
script of a shell block, and every Python block in a fresh Python process, on the tiny stand-ins
of tests/docs_stand_ins.py. The `python -m electra_tf...` commands run as tests/run_helpers'
run_in_process runs them (the entry point's main on its own flags, in this process: no
TensorFlow start per command; the process boundary has tests of its own), except those whose
flags need a process of their own (`--cpu_devices`, `--help`, ...).

The docs run in `ORDER`, in one working directory, so a command reads what an earlier one
wrote (`runs/small` of the pretraining block is the fine-tuning block's init checkpoint). A
command identical to one already run is not run twice. What is not run is said, never skipped
in silence: other programs (Docker, TF Serving, curl, Bazel, pip, git) for the reasons of
tests/test_docs.py's OTHER_PROGRAMS, and the lines a doc marks, right above the block, with

    <!-- docs-test: not run "PATTERN": why -->

(a command containing PATTERN, or "*" for the whole block, is not run here, for that reason:
a TPU, a TFDS download, a bucket, a running server), or with

    <!-- docs-test: "PATTERN" is run by tests/FILE.py::TEST -->

for a command that a test of its own runs with the same flags on tiny data, which must exist:
a table over study directories the docs name but do not make (a "..." or a comment stands for
them), a guide of many runs whose own test reruns it to check the resume. The marks are checked to have a reason and to match a line, and listed by
test_docs_mark_what_is_not_run_with_a_reason.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import time

import pytest

from tests.docs_stand_ins import ORDER, make_inputs, python_prelude, shrunk
from tests.run_helpers import REPO, needs_a_process, run_in_process
from tests.test_docs import DOCS, OTHER_PROGRAMS, SHELLS, _commands, _shell_lines

MARK = re.compile(r'<!-- docs-test: (not run "(?P<pattern>[^"]+)": (?P<why>[^>]+?)'
                  r'|"(?P<tested>[^"]+)" is run by (?P<test>tests/[\w/]+\.py::\w+)) -->\s*$')


def _test_exists(test):
    path, name = test.split("::")
    source = open(os.path.join(REPO, path), encoding="utf-8").read()
    return re.search(rf"^def {name}\(", source, re.M) is not None


def _doc_blocks(doc):
    """(line, language, body, [(pattern, why)]) of every shell and Python block of `doc`."""
    text = open(os.path.join(REPO, doc), encoding="utf-8").read()
    lines = text.splitlines()
    blocks = []
    for match in re.finditer(r"^```(\w+)\n(.*?)^```", text, re.S | re.M):
        language = match.group(1)
        if language not in (*SHELLS, "python"):
            continue
        first = text.count("\n", 0, match.start())  # 0-based line of the fence
        marks, above = [], first - 1
        while above >= 0 and MARK.match(lines[above]):
            found = MARK.match(lines[above])
            if found.group("test"):
                marks.append((found.group("tested"), f"run by {found.group('test')}"))
            else:
                marks.append((found.group("pattern"), found.group("why").strip()))
            above -= 1
        blocks.append((first + 2, language, match.group(2), marks))
    return blocks


def _marked(text, marks):
    for pattern, why in marks:
        if pattern == "*" or pattern in text:
            return why
    return None


def test_docs_mark_what_is_not_run_with_a_reason():
    """Every doc is in ORDER; every mark is read (right above its block, well formed), has a
    reason and matches a command of its block."""
    assert sorted(ORDER) == sorted(DOCS), "add the doc to tests/docs_stand_ins.ORDER"
    listed, unused, unread = [], [], []
    for doc in ORDER:
        blocks = _doc_blocks(doc)
        # a mark not right above its fence (or misspelt) is not read: it would be ignored
        text = open(os.path.join(REPO, doc), encoding="utf-8").read()
        if text.count("<!-- docs-test") != sum(len(marks) for *_, marks in blocks):
            unread.append(doc)
        for line, language, body, marks in blocks:
            for pattern, why in marks:
                assert len(why) > 10, f"{doc}:{line}: say why {pattern!r} is not run"
                if why.startswith("run by "):
                    assert _test_exists(why[len("run by "):]), f"{doc}:{line}: no test {why}"
                if pattern != "*" and pattern not in body:
                    unused.append(f"{doc}:{line}: {pattern!r}")
                listed.append(f"{doc}:{line}: {pattern!r}: {why}")
    assert not unused, f"marks that match no line of their block: {unused}"
    assert not unread, f"docs-test marks not right above a fence, or malformed, in: {unread}"
    print("\nnot run, as the docs mark them:\n" + "\n".join(listed))


def _run(argv, workdir, timeout=600):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (
        REPO, os.environ.get("PYTHONPATH"))))}
    return subprocess.run(argv, cwd=workdir, env=env, capture_output=True, text=True,
                          timeout=timeout)


def _entry_module(module):
    """What `python -m module` runs: the module, or a package's __main__."""
    spec = importlib.util.find_spec(module)
    return f"{module}.__main__" if spec.submodule_search_locations is not None else module


def _run_command(argv, workdir):
    """`argv` (from _command_argv): a `python -m electra_tf...` command in this process where its
    flags allow, anything else in a process of its own."""
    if argv[1] == "-m" and argv[2].startswith("electra_tf") and not needs_a_process(argv[3:]):
        return run_in_process(argv[3:], module=_entry_module(argv[2]), cwd=workdir)
    return _run(argv, workdir)


def _link_repository_folders(workdir):
    """The docs run from the repository root: its tools/ and configs/ are there."""
    for name in ("tools", "configs"):
        os.symlink(os.path.join(REPO, name), os.path.join(workdir, name))


def _command_argv(command):
    """The argv to run for a documented command, or the reason it is not run here."""
    program = command[0]
    if command[:2] == ["python", "-m"]:
        if command[2] == "pytest":
            return OTHER_PROGRAMS["python -m pytest"]
        if not command[2].startswith("electra_tf"):
            return f"another package's module ({command[2]})"
        return [sys.executable, "-m", command[2], *shrunk(command[2], command[3:])]
    if program == "python":
        return [sys.executable, *command[1:]]  # a script of the repository
    return OTHER_PROGRAMS.get(program, f"{program} is not declared in OTHER_PROGRAMS")


def run_docs(docs, workdir, seconds=None):
    """Runs the blocks of `docs` in `workdir`: (how many ran, what was not run and why,
    failures). `seconds`, a list, gets (seconds, where, command) of each run."""
    done, failures, not_run, ran = set(), [], [], 0
    seconds = [] if seconds is None else seconds
    for doc in docs:
        for line, language, body, marks in _doc_blocks(doc):
            where = f"{doc}:{line}"
            if language == "python":
                why = _marked(body, marks)
                if why:
                    not_run.append(f"{where}: the Python block: {why}")
                    continue
                make_inputs(body, workdir)
                script = os.path.join(workdir, f"block_{doc.replace('/', '_')}_{line}.py")
                with open(script, "w") as f:
                    f.write(python_prelude(body) + body)
                started = time.time()
                result = _run([sys.executable, script], workdir)
                seconds.append((time.time() - started, where, "the Python block"))
                ran += 1
                if result.returncode != 0:
                    failures.append(f"{where}: the Python block exited {result.returncode}:\n"
                                    f"{result.stderr[-3000:]}")
                continue
            for tokens in _shell_lines(body):
                for command in _commands(tokens):
                    text = " ".join(command)
                    argv = _marked(text, marks) or _command_argv(command)
                    if isinstance(argv, str):
                        not_run.append(f"{where}: {text[:90]}: {argv}")
                        continue
                    if tuple(command) in done:
                        continue
                    done.add(tuple(command))
                    make_inputs(text, workdir)
                    started = time.time()
                    result = _run_command(argv, workdir)
                    seconds.append((time.time() - started, where, text[:100]))
                    ran += 1
                    if result.returncode != 0:
                        failures.append(f"{where}: `{text[:150]}` exited {result.returncode}:\n"
                                        f"{result.stderr[-3000:]}")
    return ran, not_run, failures


@pytest.mark.slow
def test_every_command_and_python_block_of_the_docs_runs(tmp_path):
    workdir = str(tmp_path)
    _link_repository_folders(workdir)
    ran, not_run, failures = run_docs(ORDER, workdir)
    print(f"\nran {ran} commands and blocks; not run:\n" + "\n".join(not_run))
    assert not failures, "\n\n".join(failures)
    assert ran >= 45
