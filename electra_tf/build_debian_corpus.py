r"""Builds a real pretraining corpus and a real downstream task from Debian's package archive.

  python -m electra_tf.build_debian_corpus --output_dir data/debian

writes
  data/debian/corpus/<package>.txt   Python's, Linux's and Perl's documentation as plain text
                                      (one sentence per line, a blank line between documents)
  data/debian/heldout/<package>.txt  every 50th document, left out of the corpus (held-out
                                      pretraining metrics: build its records with the same vocab)
  data/debian/sections/{train,dev,test}.tsv, labels.txt
                                      the "sections" task: a package's archive section (8 labels)
                                      from its long description; columns text, label, package
  data/debian/metadata.json           package versions, counts, checksums

The .deb files are fetched with `apt-get download` into data/debian/debs/ (kept: a second run
reuses them) and unpacked with `dpkg-deb`; the task reads apt's package lists and their English
descriptions (when the lists lack them and the command runs as root, it fetches them with
`apt-get update -o Acquire::Languages=en`). A finished build is not redone: the command prints
what it holds (--overwrite builds again). Then, for example:

  python -m electra_tf.build_vocab --corpus 'data/debian/corpus/*.txt' --vocab_size 8000 \
      --output data/debian/vocab.txt
  python -m electra_tf.build_pretraining_dataset --corpus 'data/debian/corpus/*.txt' \
      --vocab_file data/debian/vocab.txt --output_dir data/debian/records --max_seq_length 128
"""

from __future__ import annotations

import os
import sys

from absl import flags

from electra_tf import console
from electra_tf.corpora import debian
from electra_tf.errors import exit_on_user_error

console.setup(__name__)  # first: TensorFlow reads its C++ log level when it loads

FLAGS = flags.FLAGS
flags.DEFINE_string("output_dir", "data/debian", "Where to write the corpus, the task and the "
                    "downloaded .deb files.")
flags.DEFINE_string("deb_dir", None, "Folder of .deb files to use (and to download missing "
                    "ones into). Default: <output_dir>/debs.")
flags.DEFINE_bool("download", True, "Download missing .deb files with apt-get; with "
                  "--nodownload they must be in --deb_dir.")
flags.DEFINE_string("packages_file", None, "A Packages index to read sections from, instead of "
                    "apt's lists (`apt-cache dumpavail`).")
flags.DEFINE_string("translations_file", None, "A Translation-en file (uncompressed) to read "
                    "long descriptions from, instead of apt's lists.")
flags.DEFINE_bool("overwrite", False, "Build again even if --output_dir holds a finished build.")


def _summary(metadata: dict, output_dir: str) -> str:
    lines = []
    for name, counts in metadata["corpus"].items():
        lines.append(f"corpus {name}: {counts['documents']:,} documents, "
                     f"{counts['sentences']:,} sentences, {counts['words']:,} words, "
                     f"{counts['bytes'] / 1e6:.1f} MB")
    task = metadata["sections"]
    lines.append("task sections (8 labels): " + ", ".join(
        f"{split} {task[split]['total']:,}" for split in ("train", "dev", "test")))
    lines.append(f"corpus files: {os.path.join(output_dir, 'corpus', '*.txt')}")
    lines.append(f"task files:   {os.path.join(output_dir, 'sections', '{train,dev,test}.tsv')}")
    return "\n".join(lines)


def build(output_dir: str) -> dict:

    def read(path):
        if not path:
            return None
        with open(path, encoding="utf-8") as f:
            return f.read()

    return debian.build(output_dir, deb_dir=FLAGS.deb_dir, download=FLAGS.download,
                        packages_text=read(FLAGS.packages_file),
                        translations_text=read(FLAGS.translations_file),
                        overwrite=FLAGS.overwrite)


def main(argv):
    if len(argv) > 1:
        sys.exit(f"error: unexpected arguments: {' '.join(argv[1:])}")

    def run():
        print(_summary(build(FLAGS.output_dir), FLAGS.output_dir), flush=True)
        return 0

    return exit_on_user_error(run)


if __name__ == "__main__":
    console.run(main)
