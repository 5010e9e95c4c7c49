"""The registry of task kinds: names route to one kind, and a new kind needs only its entry."""

import dataclasses

import pytest

from electra_tf.config import FinetuneConfig
from electra_tf.finetuning import api, kinds
from electra_tf.finetuning.common import TaskKind, TaskOptions
from electra_tf.models import ElectraClassifier, ElectraQuestionAnswerer, ElectraTagger
from electra_tf.task_data.classification_data import TaskDataError
from tests.models.helpers import tiny_model_config


def test_every_task_name_belongs_to_exactly_one_kind():
    names = kinds.task_names()
    assert len(names) == len(set(names))
    for name in names:
        assert [k.name for k in kinds.KINDS.values() if k.handles(name)] == [
            kinds.kind_for_task_name(name).name]
    assert {kinds.kind_for_task_name(n).name for n in ("glue/mnli", "csv", "squad/v2.0", "mrqa",
                                                       "chunk", "ner")} == set(kinds.KINDS)


def test_an_unknown_task_name_lists_the_known_ones():
    with pytest.raises(TaskDataError, match=r"unknown task 'sst'.*glue/sst2.*squad/v1\.1.*ner"):
        api.load_task("sst")


def test_glue_names_go_to_the_glue_reader_which_knows_aliases_and_names_the_tasks():
    with pytest.raises(TaskDataError, match=r"no train\.tsv for GLUE SST-2"):
        api.load_task("glue/sst", data_dir="unused")  # an alias of glue/sst2
    with pytest.raises(TaskDataError, match=r"unknown GLUE task 'glue/nope' \(known: cola"):
        api.load_task("glue/nope", data_dir="unused")


def test_kinds_give_their_original_sequence_lengths():
    assert kinds.task_overrides("squad/v1.1") == ["finetune.max_seq_length=512"]
    assert kinds.task_overrides("ner") == ["finetune.max_seq_length=256"]
    assert kinds.task_overrides("glue/rte") == kinds.task_overrides(None) == []


@pytest.mark.parametrize("kind, card, expected_class, expected", [
    ("classification", {"task": "glue/rte", "labels": ["a", "b", "c"]}, ElectraClassifier,
     {"num_labels": 3, "regression": False}),
    ("classification", {"task": "glue/stsb", "labels": None}, ElectraClassifier,
     {"num_labels": 1, "regression": True}),
    ("qa", {"task": "squad/v2.0"}, ElectraQuestionAnswerer,
     {"beam_size": FinetuneConfig().qa.beam_size}),
    ("tagging", {"task": "ner", "tags": ["O", "S-PER"]}, ElectraTagger, {"num_tags": 2}),
])
def test_a_kind_rebuilds_the_model_a_task_card_describes(kind, card, expected_class, expected):
    config = dataclasses.replace(FinetuneConfig(), model=tiny_model_config())
    model = kinds.kind_named(kind).build_model(card, config)
    assert type(model) is expected_class
    for name, value in expected.items():
        assert getattr(model, name) == value


def test_a_new_kind_is_one_registry_entry(monkeypatch):
    loaded = []

    def load(name, options):
        loaded.append((name, options))
        return "toy data"

    toy = TaskKind(name="toy", task_names=("toy/one",), load=load, make_job=None,
                   model_class=ElectraClassifier, model_arguments=lambda card, config: {},
                   export=None, default_max_seq_length=64)
    monkeypatch.setitem(kinds.KINDS, "toy", toy)
    assert "toy/one" in kinds.task_names()
    assert api.load_task("toy/one", data_dir="d") == "toy data"
    assert loaded == [("toy/one", TaskOptions(data_dir="d"))]
    assert kinds.task_overrides("toy/one") == ["finetune.max_seq_length=64"]
    assert kinds.kind_named("toy") is toy
