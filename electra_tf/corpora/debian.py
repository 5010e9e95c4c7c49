"""A real corpus and a real task from Debian's package archive, which every machine of this
project (and Colab) reaches: no web download, nothing to license beyond the packages' own.

- **Corpus**: the documentation that Debian packages ship as markup sources: Python's
  (reStructuredText sources of docs.python.org), the Linux kernel's (reStructuredText) and Perl's
  (POD). About 26 MB of English technical prose after extraction, one sentence per line, a blank
  line between documents (one document per source file), the format of `build_vocab` and
  `build_pretraining_dataset`.
- **Task** ("sections"): which archive section a package belongs to (libs, libdevel, python,
  doc, perl, devel, utils, net), from its English long description; labels from the archive's
  own metadata, texts disjoint from the corpus. Split by source package (every binary package of
  one source lands in one split), duplicate descriptions dropped.

The .deb files are fetched with `apt-get download` (or taken from a folder of them) and unpacked
with `dpkg-deb`; descriptions come from apt's lists (`apt-cache dumpavail`) and their English
translations files (`apt-get update -o Acquire::Languages=en` fetches them).
"""

from __future__ import annotations

import collections
import dataclasses
import glob
import gzip
import hashlib
import json
import os
import re
import shutil
import subprocess
import zlib
from typing import Callable, Iterator

from absl import logging

from electra_tf.corpora import markup_text
from electra_tf.errors import UserError

SECTIONS = ("libs", "libdevel", "python", "doc", "perl", "devel", "utils", "net")
SPLITS = ("train", "dev", "test")
FORMAT_VERSION = 1


class DebianCorpusError(UserError):
    """The corpus or the task cannot be built (no apt, a package missing, no descriptions)."""


@dataclasses.dataclass(frozen=True)
class DocPackage:
    """A documentation package: `name` (or the package a metapackage `via` depends on whose
    name matches `name` as a pattern), its markup and where its sources lie once unpacked."""

    name: str
    markup: str  # "rst" or "pod"
    files: str  # a glob under the unpacked tree
    via: str | None = None
    exclude: str | None = None  # a pattern of paths to leave out (translations into other languages)


DOC_PACKAGES = (
    DocPackage(r"python3\.\d+-doc", "rst", "usr/share/doc/python3*/html/_sources/**/*.rst.txt",
               via="python3-doc"),
    DocPackage(r"linux-doc-[\d.]+", "rst", "usr/share/doc/linux-doc*/Documentation/**/*.rst*",
               via="linux-doc", exclude="/translations/"),
    DocPackage("perl-doc", "pod", "usr/share/perl/*/pod/*.pod"),
)

PARAGRAPHS = {"rst": markup_text.rst_paragraphs, "pod": markup_text.pod_paragraphs}


# ---------------------------------------------------------------------------------------------
# Packages


def _run(command: list[str], what: str, **kwargs) -> str:
    if shutil.which(command[0]) is None:
        raise DebianCorpusError(f"{what} needs `{command[0]}` (a Debian or Ubuntu system)")
    result = subprocess.run(command, capture_output=True, text=True, **kwargs)
    if result.returncode != 0:
        raise DebianCorpusError(f"{what}: `{' '.join(command)}` failed: "
                                f"{(result.stderr or result.stdout).strip()[-500:]}")
    return result.stdout


def resolve_package(package: DocPackage) -> str:
    """The concrete package name (python3-doc depends on python3.11-doc on Debian 12, ...)."""
    if package.via is None:
        return package.name
    depends = _run(["apt-cache", "depends", package.via], f"resolving {package.via}")
    for name in re.findall(r"Depends:\s*<?([\w.+-]+)>?", depends):
        if re.fullmatch(package.name, name):
            return name
    raise DebianCorpusError(f"{package.via} depends on no package named like {package.name!r}; "
                            f"run `apt-get update`, or give --deb_dir")


def find_deb(deb_dir: str, pattern: str) -> str | None:
    """The newest .deb in `deb_dir` whose package name matches `pattern`."""
    matches = sorted(path for path in glob.glob(os.path.join(deb_dir, "*.deb"))
                     if re.fullmatch(pattern, os.path.basename(path).split("_", 1)[0]))
    return matches[-1] if matches else None


def fetch_debs(packages, deb_dir: str, download: bool) -> dict[str, str]:
    """{package pattern: .deb path}: those already in `deb_dir`, the others downloaded there
    with `apt-get download` (unless `download` is false: then a missing one is an error)."""
    os.makedirs(deb_dir, exist_ok=True)
    debs = {}
    for package in packages:
        path = find_deb(deb_dir, package.name)
        if path is None and download:
            name = resolve_package(package)
            logging.info("downloading %s (apt-get download)", name)
            _run(["apt-get", "download", name], f"downloading {name}", cwd=deb_dir)
            path = find_deb(deb_dir, re.escape(name))
        if path is None:
            raise DebianCorpusError(f"no .deb for {package.via or package.name} in {deb_dir}")
        debs[package.name] = path
    return debs


def unpack(deb: str, into: str) -> None:
    _run(["dpkg-deb", "-x", deb, into], f"unpacking {deb}")


# ---------------------------------------------------------------------------------------------
# The corpus


def _read_markup(path: str) -> str:
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8", errors="replace") as f:
        return f.read()


def documents(files: list[str], markup: str, min_sentences: int = 2) -> Iterator[list[str]]:
    """One document (its sentences) per source file, in the order given; documents with fewer
    than `min_sentences` sentences (index pages, stubs) are left out."""
    for path in files:
        lines = list(markup_text.sentences(PARAGRAPHS[markup](_read_markup(path))))
        if len(lines) >= min_sentences:
            yield lines


def write_documents(docs, path: str) -> dict:
    """Writes documents in the corpus format; returns their counts."""
    counts = collections.Counter()
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        for lines in docs:
            f.write("\n".join(lines) + "\n\n")
            counts["documents"] += 1
            counts["sentences"] += len(lines)
            counts["words"] += sum(len(line.split()) for line in lines)
    os.replace(path + ".tmp", path)
    counts["bytes"] = os.path.getsize(path)
    return dict(counts)


def _unique_files(paths) -> list[str]:
    """`paths` sorted, each file once: a package's symlinked folders (python3.11-doc's
    usr/share/doc/python3.11-doc/html -> ../python3.11/html) would repeat its documents."""
    by_target = {}
    for path in sorted(paths):
        by_target.setdefault(os.path.realpath(path), path)
    return sorted(by_target.values())


HELDOUT_EVERY = 50  # every 50th document of a package goes to the held-out files


def build_corpus(debs: dict[str, str], work_dir: str, corpus_dir: str, heldout_dir: str,
                 packages=DOC_PACKAGES,
                 on_package: Callable[[str, dict], None] | None = None) -> dict:
    """Unpacks each package's .deb and writes its documents to `corpus_dir/<package>.txt`,
    every `HELDOUT_EVERY`-th to `heldout_dir/<package>.txt` (for held-out pretraining metrics)."""
    os.makedirs(corpus_dir, exist_ok=True)
    os.makedirs(heldout_dir, exist_ok=True)
    summary = {}
    for package in packages:
        deb = debs[package.name]
        name = os.path.basename(deb).split("_", 1)[0]
        tree = os.path.join(work_dir, name)
        shutil.rmtree(tree, ignore_errors=True)
        os.makedirs(tree)
        unpack(deb, tree)
        files = _unique_files(path for path in glob.glob(os.path.join(tree, package.files),
                                                         recursive=True)
                              if not (package.exclude and re.search(package.exclude, path)))
        if not files:
            raise DebianCorpusError(f"{deb} holds no {package.files}")
        docs = list(documents(files, package.markup))
        counts = write_documents((d for i, d in enumerate(docs) if (i + 1) % HELDOUT_EVERY),
                                 os.path.join(corpus_dir, f"{name}.txt"))
        heldout = write_documents((d for i, d in enumerate(docs) if (i + 1) % HELDOUT_EVERY == 0),
                                  os.path.join(heldout_dir, f"{name}.txt"))
        shutil.rmtree(tree, ignore_errors=True)
        summary[name] = {"deb": os.path.basename(deb), "source_files": len(files), **counts,
                         "heldout_documents": heldout.get("documents", 0)}
        if on_package:
            on_package(name, summary[name])
    return summary


# ---------------------------------------------------------------------------------------------
# The sections task


def parse_stanzas(text: str) -> Iterator[dict[str, str]]:
    """Debian control-file stanzas ("Field: value", continuation lines start with a space)."""
    for block in re.split(r"\n\s*\n", text):
        fields, key = {}, None
        for line in block.splitlines():
            if line[:1] in (" ", "\t") and key:
                fields[key] += "\n" + line
            elif ":" in line:
                key, value = line.split(":", 1)
                fields[key] = value.strip()
        if fields:
            yield fields


def description_text(description: str) -> str:
    """A Description field as one line: the synopsis, then the long description's paragraphs
    (" ." lines separate them)."""
    synopsis, _, body = description.partition("\n")
    lines = [line.strip() for line in body.splitlines()]
    text = " ".join("" if line == "." else line for line in lines)
    synopsis = synopsis.strip()
    return re.sub(r"\s+", " ", f"{synopsis}. {text}" if text else synopsis).strip()


def split_of(source: str) -> str:
    """dev for a tenth of the source packages, test for another tenth, train for the rest."""
    bucket = zlib.crc32(source.encode()) % 10
    return "dev" if bucket == 0 else "test" if bucket == 1 else "train"


def section_examples(packages_text: str, translations_text: str,
                     sections=SECTIONS) -> dict[str, list[tuple[str, str, str]]]:
    """{split: [(text, section, package)]} for packages of `sections` with a long English
    description; a description seen before (another package, same text) is left out."""
    descriptions = {}
    for stanza in parse_stanzas(translations_text):
        if "Package" in stanza and "Description-en" in stanza:
            descriptions[(stanza["Package"], stanza.get("Description-md5"))] = stanza["Description-en"]
    examples = {split: [] for split in SPLITS}
    seen = set()
    packages = {}
    for stanza in parse_stanzas(packages_text):
        if "Package" in stanza:
            packages.setdefault(stanza["Package"], stanza)
    for name in sorted(packages):
        stanza = packages[name]
        section = stanza.get("Section", "").rsplit("/", 1)[-1]
        description = descriptions.get((name, stanza.get("Description-md5")))
        if section not in sections or not description or "\n" not in description:
            continue
        text = description_text(description)
        if text in seen:
            continue
        seen.add(text)
        source = stanza.get("Source", name).split()[0]
        examples[split_of(source)].append((text, section, name))
    return examples


def apt_packages_text() -> str:
    return _run(["apt-cache", "dumpavail"], "reading apt's package lists")


def apt_translations_text(lists_dir: str = "/var/lib/apt/lists") -> str:
    """The English long descriptions from apt's lists (any compression apt-helper reads)."""
    files = sorted(glob.glob(os.path.join(lists_dir, "*_i18n_Translation-en*")))
    if not files:
        return ""
    helper = "/usr/lib/apt/apt-helper"
    return "".join(_run([helper, "cat-file", path], f"reading {path}") for path in files)


def write_task(examples: dict, task_dir: str) -> dict:
    """`task_dir/{train,dev,test}.tsv` (columns text, label, package) and labels.txt."""
    os.makedirs(task_dir, exist_ok=True)
    counts = {}
    for split, rows in examples.items():
        path = os.path.join(task_dir, f"{split}.tsv")
        with open(path + ".tmp", "w", encoding="utf-8") as f:
            f.write("text\tlabel\tpackage\n")
            for text, label, package in rows:
                f.write(f"{text}\t{label}\t{package}\n")
        os.replace(path + ".tmp", path)
        counts[split] = dict(collections.Counter(label for _, label, _ in rows))
        counts[split]["total"] = len(rows)
    with open(os.path.join(task_dir, "labels.txt"), "w") as f:
        f.write("\n".join(SECTIONS) + "\n")
    return counts


def sha256_of(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def read_metadata(output_dir: str) -> dict | None:
    path = os.path.join(output_dir, "metadata.json")
    if not os.path.isfile(path):
        return None
    with open(path) as f:
        return json.load(f)


def write_metadata(output_dir: str, metadata: dict) -> None:
    path = os.path.join(output_dir, "metadata.json")
    with open(path + ".tmp", "w") as f:
        json.dump(metadata, f, indent=1)
    os.replace(path + ".tmp", path)


# ---------------------------------------------------------------------------------------------
# The whole build


def _translations_from_apt() -> str:
    """apt's English descriptions; as root, fetched first when the lists lack them."""
    text = apt_translations_text()
    if not text and hasattr(os, "geteuid") and os.geteuid() == 0:
        logging.info("apt's lists have no English descriptions; fetching them "
                     "(apt-get update -o Acquire::Languages=en)")
        _run(["apt-get", "update", "-qq", "-o", "Acquire::Languages=en"],
             "fetching the English package descriptions")
        text = apt_translations_text()
    if not text:
        raise DebianCorpusError(
            "apt's lists hold no English package descriptions: run `apt-get update -o "
            "Acquire::Languages=en` as root, or give --translations_file")
    return text


def build(output_dir: str, *, deb_dir: str | None = None, download: bool = True,
          packages_text: str | None = None, translations_text: str | None = None,
          overwrite: bool = False) -> dict:
    """The corpus (corpus/, heldout/), the sections task (sections/) and metadata.json in
    `output_dir`; returns the metadata. A finished build is kept unless `overwrite`.

    deb_dir: .deb files to use and download into (default output_dir/debs); packages_text /
    translations_text: a Packages index and a Translation-en file's text instead of apt's lists.
    """
    previous = read_metadata(output_dir)
    if previous and previous.get("format") == FORMAT_VERSION and not overwrite:
        logging.info("%s holds a finished build; keeping it (--overwrite builds again)", output_dir)
        return previous
    debs = fetch_debs(DOC_PACKAGES, deb_dir or os.path.join(output_dir, "debs"), download)
    examples = section_examples(packages_text or apt_packages_text(),
                                translations_text or _translations_from_apt())
    if not examples["train"] or not examples["dev"]:
        raise DebianCorpusError("no package of the task's sections has a long English "
                                "description in the package lists")
    corpus = build_corpus(
        debs, os.path.join(output_dir, "unpacked"), os.path.join(output_dir, "corpus"),
        os.path.join(output_dir, "heldout"), on_package=lambda name, counts: logging.info(
            "%s: %d documents, %d sentences", name, counts["documents"], counts["sentences"]))
    sections = write_task(examples, os.path.join(output_dir, "sections"))
    metadata = {"format": FORMAT_VERSION, "corpus": corpus, "sections": sections,
                "labels": list(SECTIONS),
                "task_sha256": {split: sha256_of(os.path.join(output_dir, "sections",
                                                              f"{split}.tsv"))
                                for split in SPLITS}}
    write_metadata(output_dir, metadata)
    return metadata
