"""Answer texts from raw questions and contexts: the question answerer's `predict` on strings.

The preprocessor (`electra_tf.preprocessing.question_answerer`) cuts each context into windows
in the graph; the model's span head runs its beam search in the graph; the answers are decoded
over all windows of an example as the SQuAD evaluation decodes them
(`electra_tf.evaluation.squad_decoding.decode_example`: max-context starts only, at most
`max_answer_length` tokens, aligned back to the context's words), so they equal
`run_finetuning`'s predictions for the same examples.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from electra_tf.evaluation.squad_decoding import RawResult, decode_example
from electra_tf.preprocessing.sentencepiece_tokenizer import ElectraSentencePieceTokenizer
from electra_tf.task_data.squad import SquadExample, whitespace_split
from electra_tf.task_data.squad_features import SquadFeature

MODEL_INPUTS = ("input_ids", "input_mask", "segment_ids")
BEAM_OUTPUTS = ("start_top_index", "start_top_log_probs", "end_top_index", "end_top_log_probs",
                "answerable_logit")


def answer_questions(model, questions, contexts, *, n_best_size=20, max_answer_length=30,
                     batch_size=32) -> list[dict]:
    """[{"answer", "score" (the best span's joint log-probability), "answerable_logit" (the
    smallest over the windows; above -2.75 means "no answer" for SQuAD 2.0), "nbest"}], one per
    question, in order."""
    questions, contexts = _texts(questions), _texts(contexts)
    if len(questions) != len(contexts):
        raise ValueError(f"{len(questions)} questions but {len(contexts)} contexts")
    preprocessor = model.preprocessor
    vocabulary = preprocessor.tokenizer.get_vocabulary()
    # a SentencePiece tokenizer has no case setting: its pieces are mapped back to the words
    sentencepiece = isinstance(preprocessor.tokenizer, ElectraSentencePieceTokenizer)
    lower_case = bool(getattr(preprocessor.tokenizer, "lowercase", False))
    answers = []
    for first in range(0, len(questions), batch_size):
        batch = slice(first, first + batch_size)
        features = {name: value.numpy() for name, value in
                    preprocessor(x=(questions[batch], contexts[batch])).items()}
        beam = _beam(model, features, batch_size)
        windows = [[] for _ in contexts[batch]]
        for row, example in enumerate(features["example_index"]):
            windows[example].append(row)
        for example, (question, context) in enumerate(zip(questions[batch], contexts[batch])):
            squad_example = SquadExample(str(example), question, whitespace_split(context)[0],
                                         context_text=context)
            rows = windows[example]
            text, nbest, null_odds = decode_example(
                squad_example, [_window(features, row, vocabulary, k)
                                for k, row in enumerate(rows)],
                [RawResult(k, *(beam[name][row] for name in BEAM_OUTPUTS))
                 for k, row in enumerate(rows)],
                n_best_size=n_best_size, max_answer_length=max_answer_length,
                lower_case=lower_case, sentencepiece=sentencepiece)
            answers.append({"answer": text, "score": nbest[0]["start_log_prob"]
                            + nbest[0]["end_log_prob"], "answerable_logit": null_odds,
                            "nbest": nbest})
    return answers


def _texts(values) -> list[str]:
    values = values.numpy() if isinstance(values, tf.Tensor) else values
    values = [values] if isinstance(values, (str, bytes)) else list(np.ravel(values))
    return [v.decode() if isinstance(v, bytes) else str(v) for v in values]


def _beam(model, features, batch_size) -> dict:
    """The span head's beam outputs for every window: numpy arrays [windows, ...]."""
    outputs = {name: [] for name in BEAM_OUTPUTS}
    for start in range(0, len(features["input_ids"]), batch_size):
        result = model({name: features[name][start:start + batch_size] for name in MODEL_INPUTS},
                       training=False)
        for name in BEAM_OUTPUTS:
            outputs[name].append(np.asarray(result[name]))
    return {name: (np.concatenate(parts) if parts else np.zeros([0]))
            for name, parts in outputs.items()}


def _window(features, row, vocabulary, index) -> SquadFeature:
    """What `decode_example` reads of a window: its tokens and the context maps."""
    length = int(features["input_mask"][row].sum())
    words = features["token_to_word"][row]
    context = [p for p in range(length) if words[p] >= 0]
    return SquadFeature(
        unique_id=index, example_index=int(features["example_index"][row]),
        doc_span_index=index, tokens=[vocabulary[i] for i in features["input_ids"][row][:length]],
        input_ids=features["input_ids"][row], input_mask=features["input_mask"][row],
        segment_ids=features["segment_ids"][row],
        token_to_orig_map={p: int(words[p]) for p in context},
        token_is_max_context={p: bool(features["token_is_max_context"][row][p]) for p in context})
