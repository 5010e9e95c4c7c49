"""Extractive question answering (SQuAD 1.1 / 2.0): the discriminator's encoder under a span head.

Call: a dict of int `input_ids`, `input_mask`, `segment_ids` [batch, seq] (`[CLS] question [SEP]
context [SEP]`, segment 1 from the context on) -> the head's inference outputs, computed in the
graph: `start_top_index`, `start_top_log_probs` [batch, k], `end_top_index`, `end_top_log_probs`
[batch, k, k] and `answerable_logit` [batch] (see `electra_tf.models.span_heads`).

Labels: a dict of `start_positions`, `end_positions` (int [batch], token positions; 0 = [CLS] for
windows without the answer and for unanswerable questions) and `is_impossible` (float [batch]).
The loss is the head's per-example loss, summed over the batch as the original (or averaged).

With a preprocessor (`ElectraQuestionAnswererPreprocessor`) the model also takes raw text:
`fit(x=(questions, contexts), y={"answer_start": character offsets, "answer_text": texts})`
trains on every window, and `predict((questions, contexts))` returns the answer texts,
decoded over all windows as the SQuAD evaluation decodes (`answer` gives scores and n-best).
"""

import keras
import numpy as np
import tensorflow as tf

from electra_tf.models import raw_text
from electra_tf.models.question_answers import answer_questions
from electra_tf.models.span_heads import SPAN_HEADS
from electra_tf.models.task_model import TASK_HEAD_SCOPE, TaskModel
from electra_tf.preprocessing.question_answerer import ElectraQuestionAnswererPreprocessor

ANSWER_LABELS = ("answer_start", "answer_text")


@keras.saving.register_keras_serializable(package="electra_tf")
class ElectraQuestionAnswerer(TaskModel):
    """ELECTRA with the original's joint span head (`head="joint"`) or BERT's (`"independent"`).

    Inputs, outputs and labels: see the module docstring.

    Args:
      model_config: the encoder's sizes, an `electra_tf.config.ModelConfig` (default: its
        defaults). `from_preset` takes them from the pretrained directory.
      head: "joint" (the original's XLNet-style head: the end conditioned on the start) or
        "independent" (BERT's: start and end each from a linear unit).
      beam_size: k, the starts (and ends per start) kept by the in-graph beam search.
      answerable_weight: weight of the answerability (null) loss.
      loss_reduction: "sum" of the per-example losses over the global batch (the original's)
        or "mean".
      **kwargs: `keras.Model` arguments (`name`, `dtype`, ...).

    Example:

    ```python
    model = ElectraQuestionAnswerer.from_preset("runs/small", beam_size=5)  # pretrained encoder
    inputs = {"input_ids": tf.constant([[101, 7, 102, 8, 9, 102]]),
              "input_mask": tf.ones([1, 6], tf.int32),
              "segment_ids": tf.constant([[0, 0, 0, 1, 1, 1]])}
    labels = {"start_positions": tf.constant([3]), "end_positions": tf.constant([4]),
              "is_impossible": tf.constant([0.0])}
    model.compile(optimizer="adam")
    model.fit(inputs, labels, epochs=1)
    model(inputs)["end_top_index"].shape  # (1, 5, 5); decode with electra_tf.finetuning
    ```
    """

    preprocessor_cls = ElectraQuestionAnswererPreprocessor

    def __init__(self, model_config=None, head="joint", beam_size=20, answerable_weight=0.5,
                 loss_reduction="sum", **kwargs):
        super().__init__(model_config, loss_reduction, **kwargs)
        if head not in SPAN_HEADS:
            raise ValueError(f"head must be one of {sorted(SPAN_HEADS)}, got {head!r}")
        self.head_type = head
        self.beam_size = beam_size
        self.answerable_weight = answerable_weight
        self.head = SPAN_HEADS[head](beam_size, answerable_weight, dtype=self.dtype_policy,
                                     name=TASK_HEAD_SCOPE)
        self.start_accuracy = keras.metrics.Mean(name="start_accuracy")
        self.build_layers(self.head)

    def call(self, inputs, training=False):
        return self.head(self.encode(inputs, training=training), inputs["input_mask"],
                         inputs["segment_ids"])

    def training_outputs(self, inputs, labels, training):
        """Start and end logits [batch, seq] (the end conditioned on the gold start) and the
        answerable logit [batch]."""
        return self.head(self.encode(inputs, training=training), inputs["input_mask"],
                         inputs["segment_ids"], start_positions=labels["start_positions"],
                         training=training)

    def per_example_loss(self, labels, outputs):
        return self.head.loss(outputs, labels["start_positions"], labels["end_positions"],
                              labels["is_impossible"])

    def task_metrics(self):
        return [self.start_accuracy]

    def update_task_metrics(self, labels, outputs, sample_weight):
        predicted = tf.argmax(outputs["start_logits"], -1, output_type=tf.int32)
        correct = tf.cast(tf.equal(predicted, tf.cast(labels["start_positions"], tf.int32)), tf.float32)
        self.start_accuracy.update_state(correct, sample_weight=sample_weight)

    def check_labels(self, labels):
        if not isinstance(labels, dict) or set(labels) != set(ANSWER_LABELS):
            raise ValueError(
                "the question answerer's labels for raw text are a dict {'answer_start': the "
                "answer's character offset in the context (-1: no answer), 'answer_text': the "
                f"answer ('' for none)}}, got {type(labels).__name__}"
                + (f" with keys {sorted(labels)}" if isinstance(labels, dict) else ""))

    def predict(self, x, batch_size=None, **kwargs):
        """Features -> the beam outputs (as `call`); `(questions, contexts)` -> their answer
        texts, a numpy array of str [batch] ("empty" when no span survives the filters)."""
        if not raw_text.holds_strings(x):
            return super().predict(x, batch_size=batch_size, **kwargs)
        return np.array([a["answer"] for a in self.answer(*self._questions_and_contexts(x),
                                                             batch_size=batch_size or 32)],
                        dtype=object)

    def answer(self, questions, contexts, *, n_best_size=20, max_answer_length=30,
               batch_size=32) -> list[dict]:
        """Answers each question about its context with every window of the context: [{"answer",
        "score" (the joint log-probability), "answerable_logit" (the smallest over the windows;
        above -2.75 means "no answer" for SQuAD 2.0), "nbest"}] in order."""
        raw_text.check_preprocessor(self, questions)
        return answer_questions(self, questions, contexts, n_best_size=n_best_size,
                                max_answer_length=max_answer_length, batch_size=batch_size)

    @staticmethod
    def _questions_and_contexts(x):
        if not (isinstance(x, tuple) and len(x) == 2):
            raise ValueError("the question answerer predicts from x=(questions, contexts)")
        return x

    def task_config(self):
        return {"head": self.head_type, "beam_size": self.beam_size,
                "answerable_weight": self.answerable_weight}
