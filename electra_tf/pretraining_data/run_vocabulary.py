"""The vocabulary a pretraining run trains with: the data's, checked against every other source.

The ids of [PAD] [CLS] [SEP] [MASK] decide which tokens are masked and which never are, and the
vocabulary size decides the embedding table: a mismatch with the data trains on the wrong tokens
without any error. So the run takes them from the data's `metadata.json` (written by
`build_pretraining_dataset`), checks every other source given against it (the metadata of the
other data directories, `--vocab_file`, values the user set in the config) and refuses any
disagreement. Without metadata it takes `--vocab_file`; with neither it refuses to guess unless
told to assume BERT's uncased vocabulary.
"""

from __future__ import annotations

import dataclasses

from electra_tf.pretraining_data import pretraining_records as records
from electra_tf.text import vocab_files
from electra_tf.text.tokenization import SpecialIds
from electra_tf.errors import UserError

BERT_UNCASED_SIZE = 30522
BERT_UNCASED_IDS = SpecialIds(pad=0, unk=100, cls=101, sep=102, mask=103)
# Config fields and the special token each one holds.
CONFIG_TOKEN_FIELDS = {"pad_token_id": "pad", "cls_token_id": "cls", "sep_token_id": "sep",
                       "mask_token_id": "mask"}


class VocabularyMismatch(UserError):
    """Sources of a run's vocabulary that disagree, or none at all."""


@dataclasses.dataclass(frozen=True)
class RunVocabulary:
    """Size and special ids of a vocabulary, and where they came from.

    Attributes:
      size: number of tokens.
      ids: ids of [PAD] [UNK] [CLS] [SEP] [MASK]; None when the source does not say (metadata
        written by hand or by older tools).
      source: for messages, e.g. "the metadata.json of data/" or "--vocab_file vocab.txt".
      sha256: of the vocab.txt, when known.
      vocab_file: a vocab.txt holding it, when one is known to exist.
    """

    size: int
    ids: SpecialIds | None
    source: str
    sha256: str | None = None
    vocab_file: str | None = None

    def describe(self) -> str:
        ids = "" if self.ids is None else ", " + " ".join(
            f"[{name.upper()}]={getattr(self.ids, name)}" for name in ("cls", "sep", "mask"))
        digest = f", sha256 {self.sha256[:12]}..." if self.sha256 else ""
        return f"{self.source}: {self.size:,} tokens{ids}{digest}"


BERT_UNCASED = RunVocabulary(BERT_UNCASED_SIZE, BERT_UNCASED_IDS,
                             "BERT's uncased vocabulary (--assume_bert_vocabulary)")


def from_metadata(directory: str, metadata: dict) -> RunVocabulary | None:
    """The vocabulary a build's metadata records; None if it records none."""
    if "vocab_size" not in metadata:
        return None
    ids = metadata.get("special_token_ids")
    return RunVocabulary(metadata["vocab_size"], SpecialIds(**ids) if ids else None,
                         f"the metadata.json of {directory}", metadata.get("vocab_sha256"),
                         metadata.get("vocab_file"))


def from_vocab_file(path: str) -> RunVocabulary:
    """A WordPiece vocab.txt or a SentencePiece model (`vocab_files`)."""
    return RunVocabulary(len(vocab_files.load_tokens(path)), vocab_files.load_special_ids(path),
                         f"--vocab_file {path}", records.vocab_sha256(path), path)


def _agree(a: RunVocabulary, b: RunVocabulary) -> bool:
    if a.sha256 and b.sha256:
        return a.sha256 == b.sha256
    return a.size == b.size and (a.ids is None or b.ids is None or a.ids == b.ids)


def resolve(metadata_by_directory: dict[str, dict], vocab_file: str | None,
            assume_bert_vocabulary: bool = False) -> RunVocabulary:
    """The run's vocabulary from the data's metadata and `vocab_file` (module docstring).

    Raises VocabularyMismatch when two sources disagree, or when none gives the special ids
    and `assume_bert_vocabulary` is False.
    """
    sources = [v for d, m in metadata_by_directory.items() if (v := from_metadata(d, m))]
    if vocab_file:
        sources.append(from_vocab_file(vocab_file))
    if not any(source.ids for source in sources):
        if not assume_bert_vocabulary:
            raise VocabularyMismatch(
                "neither a metadata.json of the data nor a --vocab_file gives the ids of [CLS] "
                "[SEP] [MASK]: pass --vocab_file with the vocab.txt the data was built with, or "
                f"--assume_bert_vocabulary for BERT's uncased vocabulary ({BERT_UNCASED_SIZE:,} "
                "tokens, [CLS]=101 [SEP]=102 [MASK]=103)")
        sources.append(BERT_UNCASED)
    for i, first in enumerate(sources):
        for other in sources[i + 1:]:
            if not _agree(first, other):
                raise VocabularyMismatch(
                    f"the vocabularies disagree: {first.describe()}; {other.describe()}. Pretrain "
                    "with the vocab.txt the data was built with (or rebuild the data)")
    chosen = sources[-1] if vocab_file else next(source for source in sources if source.ids)
    if chosen.vocab_file and not vocab_file:
        import tensorflow as tf
        if not tf.io.gfile.exists(chosen.vocab_file):  # the build's vocab.txt, moved since
            chosen = dataclasses.replace(chosen, vocab_file=None)
    return chosen


def check_user_settings(vocabulary: RunVocabulary, settings: dict[str, int]) -> None:
    """VocabularyMismatch if a value the user set disagrees with the vocabulary.

    Args:
      settings: config keys the user set explicitly, e.g. {"model.vocab_size": 30522,
        "objective.mask_token_id": 103}. A vocab_size larger than the vocabulary is allowed
        (padding rows of the embedding table, never produced by the data); smaller is not.
    """
    size = settings.get("model.vocab_size")
    if size is not None and size < vocabulary.size:
        raise VocabularyMismatch(f"model.vocab_size={size} is smaller than the vocabulary of "
                                 f"{vocabulary.describe()}")
    for field, token in CONFIG_TOKEN_FIELDS.items():
        value = settings.get(f"objective.{field}")
        if value is not None and value != getattr(vocabulary.ids, token):
            raise VocabularyMismatch(
                f"objective.{field}={value}, but in {vocabulary.describe()} "
                f"[{token.upper()}] is {getattr(vocabulary.ids, token)}; drop the setting "
                "(the run takes the ids from the data)")
