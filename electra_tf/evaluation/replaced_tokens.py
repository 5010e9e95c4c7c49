"""What a pretrained ELECTRA learned, at a glance: in a few held-out sentences, the tokens its
generator replaced and its discriminator's probability for each.

    from electra_tf.evaluation.replaced_tokens import read_examples, show_replaced_tokens

    model = electra_tf.load("runs/electra_demo")
    batch = read_examples("runs/electra_demo/data/heldout_tfrecords", model)
    print(show_replaced_tokens(model, batch, "runs/electra_demo/data/vocab.txt"))

prints, for each sentence, the text with WordPiece pieces joined, `[original→sample 0.97]` where
the generator put `sample` in place of `original` (0.97: the discriminator's probability that the
token was replaced) and `{token 0.71}` where it flags a token that was not replaced (a false
alarm), then the mean probability of the replaced and of the other tokens: a small model ranks
the replacements well (held-out AUC) long before it pushes them past 0.5. The same model, batch
and vocabulary print the same text: the generator samples with the objective's seed at step 0.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

import numpy as np
import tensorflow as tf

from electra_tf.pretraining_data import pipeline, word_masking
from electra_tf.text.vocab_files import load_tokens
from electra_tf.errors import UserError

SEQUENCE_MARKERS = ("[CLS]", "[SEP]", "[PAD]")  # never chosen for replacement


@dataclasses.dataclass
class Detections:
    """One corrupted batch and the discriminator's verdicts, numpy arrays [batch, seq]."""

    original_ids: np.ndarray  # int
    corrupted_ids: np.ndarray  # int: the originals with the generator's samples
    replaced_probability: np.ndarray  # float: sigmoid of the discriminator's logit
    input_mask: np.ndarray  # int: 1 for real tokens


def detect_replacements(model, batch: Mapping[str, tf.Tensor], step: int = 0) -> Detections:
    """Runs the generator and the discriminator of an `ElectraPretrainer` on a masked batch
    (`electra_tf.pretraining_data.pipeline.make_dataset`'s dict, [batch, seq] and [batch, N] tensors),
    sampling with the objective's seed at `step`."""
    if getattr(model, "discriminator", None) is None:
        raise ValueError("this pretrainer has no replaced-token discriminator (the MLM baseline "
                         "and the replace_mlm / all_tokens_mlm variants): nothing to show")
    outputs = model.compute_objective(dict(batch), step=step, training=False)
    return Detections(
        original_ids=outputs["original_ids"].numpy(),
        corrupted_ids=outputs["corrupted_ids"].numpy(),
        replaced_probability=tf.sigmoid(tf.cast(outputs["disc_logits"], tf.float32)).numpy(),
        input_mask=np.asarray(batch["input_mask"]))


def show_replaced_tokens(model, batch: Mapping[str, tf.Tensor],
                         vocabulary: Sequence[str] | str, *, num_examples: int = 3,
                         max_tokens: int | None = 64, threshold: float = 0.5,
                         width: int = 100) -> str:
    """The first `num_examples` examples of a masked batch as text a person reads at a glance.

    Args:
      model: a trained `ElectraPretrainer` (with a discriminator).
      batch: masked examples (`read_examples`, or a batch of `pipeline.make_dataset`).
      vocabulary: the tokens, or the vocab.txt or SentencePiece model they came from.
      num_examples: how many of the batch's examples to show.
      max_tokens: show the first this many tokens of each example (None: all).
      threshold: the probability above which a token counts as flagged "replaced".
      width: the column at which lines wrap.
    Returns:
      A legend line, one numbered paragraph per example, and a line with the mean probability
      of the replaced tokens and of the others, and how many of each pass `threshold`.
    """
    if isinstance(vocabulary, str):
        vocabulary = load_tokens(vocabulary)
    first = {key: value[:num_examples] for key, value in batch.items()}
    return format_detections(detect_replacements(model, first), vocabulary,
                             max_tokens=max_tokens, threshold=threshold, width=width)


def format_detections(detections: Detections, vocabulary: Sequence[str], *,
                      max_tokens: int | None = 64, threshold: float = 0.5,
                      width: int = 100) -> str:
    """`show_replaced_tokens`' text for every example of `detections`."""
    lines = [f"legend: [original→sample p] the generator's replacement, p the discriminator's "
             f"probability of \"replaced\"; {{token p}} a false alarm (not replaced, "
             f"p > {threshold:g})"]
    probabilities = {True: [], False: []}  # replaced or not: the discriminator's p of each
    for row in range(detections.original_ids.shape[0]):
        words = []  # display units: a word with its pieces joined, or a [SEP]
        positions = np.flatnonzero(detections.input_mask[row])
        for position in positions[:max_tokens]:
            original = _token(vocabulary, detections.original_ids[row, position])
            sample = _token(vocabulary, detections.corrupted_ids[row, position])
            probability = float(detections.replaced_probability[row, position])
            if original in SEQUENCE_MARKERS:
                words.append(original)
                continue
            if sample != original:
                probabilities[True].append(probability)
                text = f"[{original}→{sample} {probability:.2f}]"
            else:
                probabilities[False].append(probability)
                text = (f"{{{original} {probability:.2f}}}" if probability > threshold
                        else original)
            if original.startswith("##") and words and words[-1] not in SEQUENCE_MARKERS:
                words[-1] += text if text != original else original[2:]
            else:
                words.append(text)
        words = _drop_sequence_markers(words)
        if max_tokens is not None and len(positions) > max_tokens:
            words.append("…")
        lines += _wrap(f"{row + 1}.", words, width)
    lines.append("; ".join(_summary(name, probabilities[replaced], threshold) for name, replaced
                           in (("replaced tokens", True), ("other tokens", False))))
    return "\n".join(lines)


def read_examples(data: str, model, num_examples: int = 3,
                  max_seq_length: int | None = None,
                  vocab_file: str | None = None) -> dict[str, tf.Tensor]:
    """The first `num_examples` examples of TFRecord shards (a glob, comma-separated globs or a
    directory), masked with `model.objective` as in evaluation: one masked batch.

    `max_seq_length` defaults to the one in the data's metadata.json; `vocab_file` finds the
    words for whole-word and span masking.
    """
    files = pipeline.list_shards(data)
    if max_seq_length is None:
        lengths = {metadata.get("max_seq_length")
                   for metadata in pipeline.read_data_metadata(files).values()} - {None}
        if len(lengths) != 1:
            raise UserError(f"cannot tell the max_seq_length of {data} from its metadata.json: "
                            "pass max_seq_length")
        max_seq_length = lengths.pop()
    is_continuation = (word_masking.continuation_pieces_of(vocab_file)
                       if vocab_file and model.objective.masking != "token" else None)
    dataset = pipeline.make_dataset(files, num_examples, max_seq_length, model.objective,
                                    training=False, is_continuation=is_continuation)
    for batch in dataset.take(1):
        return batch
    raise UserError(f"{data} holds fewer than {num_examples} examples")


def _summary(name: str, probabilities: list[float], threshold: float) -> str:
    """e.g. "replaced tokens: 27, mean p 0.29, 2 above 0.5"."""
    if not probabilities:
        return f"{name}: none"
    above = sum(p > threshold for p in probabilities)
    return (f"{name}: {len(probabilities)}, mean p {np.mean(probabilities):.2f}, "
            f"{above} above {threshold:g}")


def _token(vocabulary: Sequence[str], token_id) -> str:
    token_id = int(token_id)
    return vocabulary[token_id] if 0 <= token_id < len(vocabulary) else f"<{token_id}>"


def _drop_sequence_markers(words: list[str]) -> list[str]:
    """Drops [CLS], [PAD] and the final [SEP]; a [SEP] between segments stays."""
    words = [word for word in words if word not in ("[CLS]", "[PAD]")]
    while words and words[-1] == "[SEP]":
        words.pop()
    return words


def _wrap(label: str, words: list[str], width: int) -> list[str]:
    """Greedy wrapping that never splits a word (a marked token holds a space)."""
    indent = " " * (len(label) + 1)
    lines, line = [], label
    for word in words:
        if len(line) + 1 + len(word) > width and line.strip() != label:
            lines.append(line)
            line = indent + word
        else:
            line += " " + word
    lines.append(line)
    return lines
