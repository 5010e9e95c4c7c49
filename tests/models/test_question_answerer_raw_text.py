"""The question answerer on raw text: fit on (questions, contexts) and answers, predict answers."""

import keras
import numpy as np
import pytest

from electra_tf.finetuning.question_answering import answer
from electra_tf.models import ElectraQuestionAnswerer
from electra_tf.preprocessing.question_answerer import ElectraQuestionAnswererPreprocessor
from electra_tf.task_data.squad_features import QAFeaturizer
from electra_tf.task_data.squad import SquadExample, whitespace_split
from tests.models.helpers import tiny_model_config

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "who", "when", "wrote", "it", "?", "ann",
         "bob", "in", "1990", "2001", "was", "written", "by", "the", "book", ".", "play", "##ing"]
QUESTIONS = ["who wrote it?", "when was it written?", "who wrote the book?",
             "when was the book written?"] * 2
CONTEXTS = ["it was written by Ann in 1990.", "it was written by Ann in 1990.",
            "the book was written by Bob in 2001.", "the book was written by Bob in 2001.",
            "Bob wrote it in 2001.", "Bob wrote it in 2001.", "Ann wrote the book in 1990.",
            "Ann wrote the book in 1990."]
ANSWERS = ["Ann", "1990", "Bob", "2001", "Bob", "2001", "Ann", "1990"]
LENGTH = 24


def preprocessor(**settings):
    settings = {"sequence_length": LENGTH, "doc_stride": 4, "max_query_length": 8, **settings}
    return ElectraQuestionAnswererPreprocessor.from_vocabulary(VOCAB, **settings)


def answerer(seed=0, **settings):
    keras.utils.set_random_seed(seed)
    return ElectraQuestionAnswerer(tiny_model_config(vocab_size=len(VOCAB)), beam_size=3,
                                   preprocessor=preprocessor(**settings))


def labels():
    return {"answer_start": [c.index(a) for c, a in zip(CONTEXTS, ANSWERS)],
            "answer_text": ANSWERS}


@pytest.mark.slow
def test_fit_on_text_trains_as_on_run_finetunings_features():
    by_text, by_features = answerer(), answerer()
    examples = [SquadExample(str(i), q, whitespace_split(c)[0], a, *[
        next(k for k, w in enumerate(whitespace_split(c)[0]) if w.startswith(a))] * 2)
        for i, (q, c, a) in enumerate(zip(QUESTIONS, CONTEXTS, ANSWERS))]
    windows = list(QAFeaturizer(VOCAB, max_seq_length=LENGTH, doc_stride=4, max_query_length=8)
                   .featurize(examples, is_training=True))
    assert len(windows) == len(examples)  # one window each: the same batches both ways
    features = {name: np.stack([getattr(w, name) for w in windows])
                for name in ("input_ids", "input_mask", "segment_ids")}
    targets = {"start_positions": np.array([w.start_position for w in windows]),
               "end_positions": np.array([w.end_position for w in windows]),
               "is_impossible": np.zeros(len(windows), np.float32)}
    assert (targets["start_positions"] > 0).all()
    for model in (by_text, by_features):
        model.compile(optimizer=keras.optimizers.SGD(0.01))
    text = by_text.fit((QUESTIONS, CONTEXTS), labels(), batch_size=4, epochs=2, shuffle=False,
                       verbose=0)
    feature = by_features.fit(features, targets, batch_size=4, epochs=2, shuffle=False, verbose=0)
    np.testing.assert_allclose(text.history["loss"], feature.history["loss"], rtol=1e-5)


@pytest.mark.slow
def test_predict_gives_the_answers_of_the_squad_decoding(tmp_path):
    model = answerer(max_query_length=4, sequence_length=12)  # several windows per context
    model.compile(optimizer=keras.optimizers.Adam(3e-3))
    model.fit((QUESTIONS, CONTEXTS), labels(), batch_size=4, epochs=3, verbose=0)
    vocab_file = tmp_path / "vocab.txt"
    vocab_file.write_text("\n".join(VOCAB) + "\n")
    want = answer(model, str(vocab_file), QUESTIONS, CONTEXTS, max_seq_length=12, doc_stride=4,
                  max_query_length=4, n_best_size=5, max_answer_length=5)
    got = model.answer(QUESTIONS, CONTEXTS, n_best_size=5, max_answer_length=5, batch_size=3)
    assert [g["answer"] for g in got] == [w["answer"] for w in want]
    for g, w in zip(got, want):
        assert [e["text"] for e in g["nbest"]] == [e["text"] for e in w["nbest"]]
        np.testing.assert_allclose(g["answerable_logit"], w["answerable_logit"], rtol=1e-4,
                                   atol=1e-5)
    predicted = model.predict((QUESTIONS, CONTEXTS))
    assert predicted.shape == (len(QUESTIONS),) and all(isinstance(a, str) for a in predicted)
    assert all(a in c or a == "empty" for a, c in zip(predicted, CONTEXTS))


@pytest.mark.slow
def test_it_learns_to_answer_from_text():
    model = answerer()
    model.compile(optimizer=keras.optimizers.Adam(3e-3))
    model.fit((QUESTIONS * 4, CONTEXTS * 4), {k: v * 4 for k, v in labels().items()},
              batch_size=8, epochs=15, verbose=0)
    predicted = model.predict((QUESTIONS, CONTEXTS))
    assert sum(p.lower() == a.lower() for p, a in zip(predicted, ANSWERS)) >= 6, predicted


def test_saved_with_its_preprocessor(tmp_path):
    model = answerer(doc_stride=3)
    path = str(tmp_path / "qa.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    assert isinstance(loaded.preprocessor, ElectraQuestionAnswererPreprocessor)
    assert loaded.preprocessor.doc_stride == 3
    assert list(loaded.predict((QUESTIONS[:2], CONTEXTS[:2]))) == list(
        model.predict((QUESTIONS[:2], CONTEXTS[:2])))


def test_bad_text_input_is_refused_clearly():
    model = answerer()
    model.compile(optimizer="sgd")
    with pytest.raises(ValueError, match="'answer_start'.*'answer_text'"):
        model.fit((QUESTIONS, CONTEXTS), ANSWERS, verbose=0)
    with pytest.raises(ValueError, match=r"x=\(questions, contexts\)"):
        model.predict(QUESTIONS)
    bare = ElectraQuestionAnswerer(tiny_model_config(vocab_size=len(VOCAB)), beam_size=3)
    with pytest.raises(ValueError, match="ElectraQuestionAnswererPreprocessor.from_vocabulary"):
        bare.predict((QUESTIONS, CONTEXTS))
