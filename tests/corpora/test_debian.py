"""Tests for electra_tf.corpora.debian and `python -m electra_tf.build_debian_corpus`, on tiny
.deb files built here with dpkg-deb and a hand-written Packages / Translation-en pair.

Nothing here touches the network or apt: every run passes --nodownload, --deb_dir and the two
index files (the no_network fixture refuses connections besides)."""

import gzip
import hashlib
import json
import os
import shutil
import subprocess
import textwrap

import pytest

from electra_tf.corpora import debian
from tests.run_helpers import run_cli, run_in_process

MODULE = "electra_tf.build_debian_corpus"
PYTHON_DOCS = 60  # enough for one held-out document (every 50th)

pytestmark = [
    pytest.mark.skipif(shutil.which("dpkg-deb") is None,
                       reason="needs dpkg-deb (Debian or Ubuntu) to build and unpack .deb files"),
    pytest.mark.usefixtures("no_network"),
]


# ---------------------------------------------------------------------------------------------
# Fixtures: three documentation .debs, a Packages file and its Translation-en


def python_doc(i):
    return textwrap.dedent(f"""\
        Module number {i}
        =================

        The module number {i} reads words. It writes more words too.

        .. code-block:: python

           secret_code_{i}()
        """)


PYTHON_SENTENCES = ["Module number {i}", "The module number {i} reads words.",
                    "It writes more words too."]

LINUX_FILES = {
    "usr/share/doc/linux-doc-6.1/Documentation/admin/guide.rst.gz": textwrap.dedent("""\
        The admin guide
        ===============

        The kernel boots on many machines. Read this guide before you start::

            make menuconfig

        Every option has a help text.
        """),
    "usr/share/doc/linux-doc-6.1/Documentation/core/locking.rst": textwrap.dedent("""\
        Rules for locking
        -----------------

        Spinlocks must never sleep. A mutex may sleep while it is held.
        """),
    "usr/share/doc/linux-doc-6.1/Documentation/translations/it_IT/guide.rst": textwrap.dedent("""\
        Guida per amministratori
        ========================

        Questo testo italiano non deve comparire. Resta fuori dal corpus.
        """),
}
LINUX_DOCUMENTS = [
    ["The admin guide", "The kernel boots on many machines.", "Read this guide before you start:",
     "Every option has a help text."],
    ["Rules for locking", "Spinlocks must never sleep.", "A mutex may sleep while it is held."],
]

PERL_POD = textwrap.dedent("""\
    =head1 NAME

    perlx - the example manual page

    =head1 DESCRIPTION

    Perl reads B<text> files with C<< $fh->getline >>. It prints them E<gt> later.

        my $hidden = verbatim_code();

    =cut
    """)
PERL_DOCUMENT = ["perlx - the example manual page", "Perl reads text files with $fh->getline.",
                 "It prints them > later."]


def build_deb(root, name, version, files, symlinks=()):
    """Builds `root/../<name>_<version>_all.deb` holding `files` ({path: text}; .gz paths
    gzip-compressed) and `symlinks` ((path, target) pairs); returns its path."""
    tree = root / "trees" / name
    (tree / "DEBIAN").mkdir(parents=True)
    (tree / "DEBIAN" / "control").write_text(
        f"Package: {name}\nVersion: {version}\nArchitecture: all\n"
        "Maintainer: Test Maintainer <test@example.org>\n"
        "Description: documentation for a test\n a long description line\n")
    for path, text in files.items():
        target = tree / path
        target.parent.mkdir(parents=True, exist_ok=True)
        if path.endswith(".gz"):
            target.write_bytes(gzip.compress(text.encode()))
        else:
            target.write_text(text, encoding="utf-8")
    for path, link_target in symlinks:
        (tree / path).parent.mkdir(parents=True, exist_ok=True)
        os.symlink(link_target, tree / path)
    deb = root / "debs" / f"{name}_{version}_all.deb"
    deb.parent.mkdir(exist_ok=True)
    subprocess.run(["dpkg-deb", "--root-owner-group", "-Zgzip", "--build", str(tree), str(deb)],
                   check=True, capture_output=True)
    return deb


@pytest.fixture(scope="module")
def debs(tmp_path_factory):
    """A folder with python3.11-doc, linux-doc-6.1 and perl-doc .debs."""
    root = tmp_path_factory.mktemp("debian")
    sources = "usr/share/doc/python3.11/html/_sources"
    python_files = {f"{sources}/library/doc{i:02d}.rst.txt": python_doc(i)
                    for i in range(PYTHON_DOCS)}
    python_files[f"{sources}/index.rst.txt"] = "Contents of the documentation.\n"  # a stub
    # As in Debian's package: a second path to the same files (must not count them twice).
    build_deb(root, "python3.11-doc", "3.11.2-1", python_files,
              symlinks=[("usr/share/doc/python3.11-doc/html", "../python3.11/html")])
    build_deb(root, "linux-doc-6.1", "6.1.1-1", LINUX_FILES)
    build_deb(root, "perl-doc", "5.36.0-1", {"usr/share/perl/5.36.0/pod/perlx.pod": PERL_POD})
    return root / "debs"


# (package, source, section, long description or None for a synopsis only)
PACKAGES = [
    ("libcorge1", "corge (1.0-1)", "libs", "The corge library parses corge files quickly."),
    ("libcorge-dev", "corge", "libdevel", "Headers and static library for corge."),
    ("python3-beta", "beta", "python", "Beta bindings for Python three users."),
    ("beta-doc", "beta", "doc", "The beta manual in HTML form."),
    ("libfoo-perl", "foo", "perl", "A Perl module that speaks foo."),
    ("foo-tools", "foo", "devel", "Developer tools for working with foo."),
    ("netcat-x", None, "contrib/net", "Reads and writes data across network connections."),
    ("dupe-a", "waldo", "utils", "Exactly the same words in both packages."),
    ("dupe-b", "waldo", "utils", "Exactly the same words in both packages."),
    ("gamex", None, "games", "A game, in a section outside the task."),
    ("shorty", None, "utils", None),
]


def md5_of(name):
    return hashlib.md5(name.encode()).hexdigest()


def synopsis_of(name):
    return "same synopsis" if name.startswith("dupe-") else f"{name} synopsis"


def subject_of(name):
    """What the second paragraph of a long description is about (dupe-a's is dupe-b's)."""
    return "the same" if name.startswith("dupe-") else name


@pytest.fixture(scope="module")
def index_files(tmp_path_factory):
    """(Packages, Translation-en) for PACKAGES; libcorge1 appears twice in Packages."""
    root = tmp_path_factory.mktemp("lists")
    stanzas, translations = [], []
    for name, source, section, long in PACKAGES:
        stanzas.append(f"Package: {name}\n" + (f"Source: {source}\n" if source else "") +
                       f"Version: 1.0-1\nSection: {section}\n"
                       f"Description: {synopsis_of(name)}\nDescription-md5: {md5_of(name)}\n")
        body = f"\n {long}\n .\n Second paragraph of {subject_of(name)}." if long else ""
        translations.append(f"Package: {name}\nDescription-md5: {md5_of(name)}\n"
                            f"Description-en: {synopsis_of(name)}{body}\n")
    stanzas.append("Package: libcorge1\nSource: corge\nVersion: 0.9-1\nSection: oldlibs\n"
                   f"Description: old\nDescription-md5: {md5_of('old')}\n")
    packages = root / "Packages"
    packages.write_text("\n".join(stanzas), encoding="utf-8")
    translation = root / "Translation-en"
    translation.write_text("\n".join(translations), encoding="utf-8")
    return packages, translation


def expected_rows():
    """{split: [(text, label, package)]} as the task must hold them (by package name)."""
    rows = {split: [] for split in debian.SPLITS}
    for name, source, section, long in sorted(PACKAGES):
        label = section.rsplit("/", 1)[-1]
        if label not in debian.SECTIONS or long is None or name == "dupe-b":
            continue
        text = f"{synopsis_of(name)}. {long} Second paragraph of {subject_of(name)}."
        rows[debian.split_of((source or name).split()[0])].append((text, label, name))
    return rows


def command_args(out, debs, index_files, *extra):
    packages, translations = index_files
    return ["--output_dir", out, "--deb_dir", debs, "--nodownload", "--packages_file", packages,
            "--translations_file", translations, *extra]


def run_command(*args):
    return run_in_process(args, module=MODULE)


def read_documents(path):
    """A corpus file as [[sentence, ...], ...], checking the format on the way."""
    text = path.read_text(encoding="utf-8")
    if not text:
        return []
    assert text.endswith("\n\n") and "\n\n\n" not in text
    return [block.split("\n") for block in text[:-2].split("\n\n")]


def read_tsv(path):
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines[0] == "text\tlabel\tpackage"
    rows = [tuple(line.split("\t")) for line in lines[1:]]
    assert all(len(row) == 3 for row in rows)
    return rows


# ---------------------------------------------------------------------------------------------
# The command, in this process


@pytest.fixture(scope="module")
def built(debs, index_files, tmp_path_factory):
    """One finished build (read-only for the tests that use it)."""
    out = tmp_path_factory.mktemp("build") / "debian"
    result = run_command(*command_args(out, debs, index_files))
    assert result.returncode == 0, result.stderr[-3000:]
    return out, result


def test_corpus_files_hold_each_packages_documents_in_the_corpus_format(built):
    out, _ = built
    assert sorted(os.listdir(out / "corpus")) == [
        "linux-doc-6.1.txt", "perl-doc.txt", "python3.11-doc.txt"]
    assert read_documents(out / "corpus" / "linux-doc-6.1.txt") == LINUX_DOCUMENTS
    assert read_documents(out / "corpus" / "perl-doc.txt") == [PERL_DOCUMENT]
    python = read_documents(out / "corpus" / "python3.11-doc.txt")
    kept = [i for i in range(PYTHON_DOCS) if i != 49]  # the stub index page is no document
    assert python == [[s.format(i=i) for s in PYTHON_SENTENCES] for i in kept]
    everything = "".join((out / d / f).read_text() for d in ("corpus", "heldout")
                         for f in os.listdir(out / d))
    assert "secret_code" not in everything and "hidden" not in everything
    assert "italiano" not in everything and "Contents of the documentation" not in everything
    assert os.listdir(out / "unpacked") == []  # the unpacked trees are removed


def test_every_50th_document_goes_to_heldout_and_not_to_the_corpus(built):
    out, _ = built
    assert sorted(os.listdir(out / "heldout")) == sorted(os.listdir(out / "corpus"))
    assert read_documents(out / "heldout" / "python3.11-doc.txt") == [
        [s.format(i=49) for s in PYTHON_SENTENCES]]
    assert read_documents(out / "heldout" / "linux-doc-6.1.txt") == []
    assert read_documents(out / "heldout" / "perl-doc.txt") == []


def test_sections_task_files_labels_and_splits_by_source_package(built):
    out, _ = built
    expected = expected_rows()
    assert expected["train"] and expected["dev"] and expected["test"]  # the fixture covers all
    for split in debian.SPLITS:
        assert read_tsv(out / "sections" / f"{split}.tsv") == expected[split], split
    assert (out / "sections" / "labels.txt").read_text().split() == list(debian.SECTIONS)
    where = {package: split for split in debian.SPLITS
             for _, _, package in read_tsv(out / "sections" / f"{split}.tsv")}
    # Two binary packages of one source package land in one split.
    assert where["libcorge1"] == where["libcorge-dev"] == debian.split_of("corge") == "dev"
    assert where["python3-beta"] == where["beta-doc"] == debian.split_of("beta") == "test"
    assert where["netcat-x"] == debian.split_of("netcat-x")  # contrib/net: label net
    # Left out: a repeated description, a section outside the task, a synopsis only.
    assert "dupe-a" in where and not {"dupe-b", "gamex", "shorty"} & set(where)


def test_metadata_counts_what_was_written(built, debs):
    out, _ = built
    metadata = json.loads((out / "metadata.json").read_text())
    assert metadata["format"] == debian.FORMAT_VERSION
    assert metadata["labels"] == list(debian.SECTIONS)
    python = metadata["corpus"]["python3.11-doc"]
    # 60 documents and a stub, counted once although the package reaches them by two paths.
    assert python["source_files"] == PYTHON_DOCS + 1
    assert python["documents"] == PYTHON_DOCS - 1 and python["heldout_documents"] == 1
    assert python["deb"] == "python3.11-doc_3.11.2-1_all.deb"
    for name, counts in metadata["corpus"].items():
        documents = read_documents(out / "corpus" / f"{name}.txt")
        assert counts["documents"] == len(documents)
        assert counts["sentences"] == sum(len(d) for d in documents)
        assert counts["words"] == sum(len(s.split()) for d in documents for s in d)
        assert counts["bytes"] == (out / "corpus" / f"{name}.txt").stat().st_size
    assert metadata["corpus"]["linux-doc-6.1"]["source_files"] == 2  # translations excluded
    for split, rows in expected_rows().items():
        counts = metadata["sections"][split]
        assert counts["total"] == len(rows)
        assert {k: v for k, v in counts.items() if k != "total"} == {
            label: sum(1 for _, row_label, _ in rows if row_label == label)
            for label in {row[1] for row in rows}}
        assert metadata["task_sha256"][split] == debian.sha256_of(
            str(out / "sections" / f"{split}.tsv"))


def test_the_command_prints_a_summary(built):
    _, result = built
    rows = expected_rows()
    assert "corpus python3.11-doc: 59 documents, 177 sentences" in result.stdout
    assert (f"task sections (8 labels): train {len(rows['train'])}, dev {len(rows['dev'])}, "
            f"test {len(rows['test'])}") in result.stdout


def test_a_finished_build_is_kept_and_overwrite_builds_again(debs, index_files, tmp_path):
    out = tmp_path / "debian"
    assert run_command(*command_args(out, debs, index_files)).returncode == 0
    corpus_file = out / "corpus" / "perl-doc.txt"
    task_file = out / "sections" / "train.tsv"
    for path in (corpus_file, task_file):
        with open(path, "a") as f:
            f.write("MARKER\n")

    again = run_command(*command_args(out, debs, index_files))
    assert again.returncode == 0, again.stderr[-3000:]
    assert "holds a finished build" in again.stderr
    assert "corpus perl-doc: 1 documents" in again.stdout  # the summary of the kept build
    assert corpus_file.read_text().endswith("MARKER\n")
    assert task_file.read_text().endswith("MARKER\n")

    rebuilt = run_command(*command_args(out, debs, index_files, "--overwrite"))
    assert rebuilt.returncode == 0, rebuilt.stderr[-3000:]
    assert "MARKER" not in corpus_file.read_text() and "MARKER" not in task_file.read_text()
    assert read_documents(corpus_file) == [PERL_DOCUMENT]


def test_a_missing_deb_without_download_is_an_error(debs, index_files, tmp_path):
    only_perl = tmp_path / "debs"
    only_perl.mkdir()
    shutil.copy(next(debs.glob("perl-doc_*.deb")), only_perl)
    with pytest.raises(debian.DebianCorpusError, match="no .deb for python3-doc"):
        debian.fetch_debs(debian.DOC_PACKAGES, str(only_perl), download=False)

    result = run_command(*command_args(tmp_path / "out", only_perl, index_files))
    assert result.returncode == 1
    assert f"error: no .deb for python3-doc in {only_perl}" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "out" / "metadata.json").exists()


def test_descriptions_without_a_long_text_are_an_error(debs, index_files, tmp_path):
    packages, _ = index_files
    synopses = tmp_path / "Translation-en"
    synopses.write_text("Package: libcorge1\nDescription-md5: 1\nDescription-en: short\n")
    result = run_command(*command_args(tmp_path / "out", debs, (packages, synopses)))
    assert result.returncode == 1
    assert "error: no package of the task's sections has a long English description" in (
        result.stderr)
    assert not (tmp_path / "out" / "metadata.json").exists()


def test_no_english_descriptions_in_apts_lists_is_an_error(debs, index_files, tmp_path,
                                                           monkeypatch):
    def no_apt(command, *args, **kwargs):
        pytest.fail(f"the test ran {command}")
    monkeypatch.setattr(debian, "_run", no_apt)  # never apt-get update, even as root
    monkeypatch.setattr(debian, "apt_translations_text", lambda: "")
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    packages, _ = index_files
    args = ["--output_dir", tmp_path / "out", "--deb_dir", debs, "--nodownload",
            "--packages_file", packages]
    result = run_command(*args)
    assert result.returncode == 1
    assert "error: apt's lists hold no English package descriptions" in result.stderr


# ---------------------------------------------------------------------------------------------
# The command in a process of its own


@pytest.mark.slow
def test_the_command_in_its_own_process(debs, index_files, tmp_path):
    out = tmp_path / "debian"
    result = run_cli([str(a) for a in command_args(out, debs, index_files)], module=MODULE)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "corpus python3.11-doc: 59 documents" in result.stdout
    assert read_documents(out / "corpus" / "perl-doc.txt") == [PERL_DOCUMENT]
    assert read_tsv(out / "sections" / "dev.tsv") == expected_rows()["dev"]


@pytest.mark.slow
def test_a_missing_deb_is_a_one_line_error_in_its_own_process(index_files, tmp_path):
    empty = tmp_path / "debs"
    empty.mkdir()
    result = run_cli([str(a) for a in command_args(tmp_path / "out", empty, index_files)],
                     module=MODULE)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [f"error: no .deb for python3-doc in {empty}"]
