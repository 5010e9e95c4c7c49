"""Classification task data: the generic table reader, the GLUE readers and submission files.

Every GLUE fixture is written in its task's real download layout (header or not, column
positions and names, test files without labels), with quotes that must not be read as CSV
quoting and trailing spaces that must be kept.
"""

import dataclasses
import logging
import os

import numpy as np
import pytest

from electra_tf.task_data import glue
from electra_tf.task_data.classification_data import Example, TaskDataError, read_table

PARSE = "( ( The cat ) ( sat . ) )"
TREE = "(ROOT (S (NP (DT The) (NN cat)) (VP (VBD sat)) (. .)))"
MNLI_HEAD = ["index", "promptID", "pairID", "genre", "sentence1_binary_parse",
             "sentence2_binary_parse", "sentence1_parse", "sentence2_parse", "sentence1",
             "sentence2"]
STSB_HEAD = ["index", "genre", "filename", "year", "old_index", "source1", "source2",
             "sentence1", "sentence2"]
MRPC_STRINGS = ["#1 ID", "#2 ID", "#1 String", "#2 String"]


@dataclasses.dataclass
class GlueFixture:
    files: dict[str, list[list[str]]]        # path under the GLUE root -> rows
    expected: dict[str, list[tuple]]         # split -> (guid, text_a, text_b, label)


def mnli_row(index, genre, premise, hypothesis, *labels):
    return [str(index), f"{index}1", f"{index}1n", genre, PARSE, PARSE, TREE, TREE, premise,
            hypothesis, *labels]


GLUE_FIXTURES = {
    "cola": GlueFixture(
        files={
            "CoLA/train.tsv": [
                ["gj04", "1", "", "Our friends won't buy this analysis, let alone the next one."],
                ["gj04", "0", "*", 'They drank the "pub.'],
            ],
            "CoLA/dev.tsv": [["clc95", "1", "", "The sailors rode the breeze clear of the rocks."]],
            "CoLA/test.tsv": [["index", "sentence"], ["0", "Bill whistled past the house."],
                              ["1", "The car honked its way down the road."]],
        },
        expected={
            "train": [("train-0", "Our friends won't buy this analysis, let alone the next one.",
                       None, "1"),
                      ("train-1", 'They drank the "pub.', None, "0")],
            "dev": [("dev-0", "The sailors rode the breeze clear of the rocks.", None, "1")],
            "test": [("0", "Bill whistled past the house.", None, None),
                     ("1", "The car honked its way down the road.", None, None)],
        }),
    "sst2": GlueFixture(
        files={
            "SST-2/train.tsv": [["sentence", "label"],
                                ["hide new secretions from the parental units ", "0"],
                                ['the "home alone " formula is a charming journey . ', "1"]],
            "SST-2/dev.tsv": [["sentence", "label"], ["it 's a charming journey . ", "1"]],
            "SST-2/test.tsv": [["index", "sentence"], ["0", "uneasy mishmash of styles ."],
                               ["1", "a poor -- if durable -- imitation ."]],
        },
        expected={
            "train": [("train-0", "hide new secretions from the parental units ", None, "0"),
                      ("train-1", 'the "home alone " formula is a charming journey . ', None,
                       "1")],
            "dev": [("dev-0", "it 's a charming journey . ", None, "1")],
            "test": [("0", "uneasy mishmash of styles .", None, None),
                     ("1", "a poor -- if durable -- imitation .", None, None)],
        }),
    "mrpc": GlueFixture(
        files={
            "MRPC/train.tsv": [
                ["Quality", *MRPC_STRINGS],
                ["1", "702876", "702977", 'Amrozi accused his brother , whom he called " the '
                 'witness " .', 'Referring to him as only " the witness " , Amrozi accused him .'],
                ["0", "2108705", "2108831", "Yucaipa owned Dominick 's before selling it .",
                 "Yucaipa bought Dominick 's in 1995 ."],
            ],
            "MRPC/dev.tsv": [["Quality", *MRPC_STRINGS],
                             ["1", "1355540", "1355592", "The pie business does n't fit .",
                              '" The pie business does not fit ."']],
            "MRPC/test.tsv": [["index", *MRPC_STRINGS],
                              ["0", "1089874", "1089925", "PCCW 's officer will report to So .",
                               "Mike Butcher will report to So ."],
                              ["1", "3019446", "3019327", "Two automakers said sales declined .",
                               "Sales at GM and Ford declined ."]],
        },
        expected={
            "train": [("train-0", 'Amrozi accused his brother , whom he called " the witness " .',
                       'Referring to him as only " the witness " , Amrozi accused him .', "1"),
                      ("train-1", "Yucaipa owned Dominick 's before selling it .",
                       "Yucaipa bought Dominick 's in 1995 .", "0")],
            "dev": [("dev-0", "The pie business does n't fit .", '" The pie business does not '
                     'fit ."', "1")],
            "test": [("0", "PCCW 's officer will report to So .",
                      "Mike Butcher will report to So .", None),
                     ("1", "Two automakers said sales declined .",
                      "Sales at GM and Ford declined .", None)],
        }),
    "stsb": GlueFixture(
        files={
            "STS-B/train.tsv": [
                [*STSB_HEAD, "score"],
                ["0", "main-captions", "MSRvid", "2012test", "0001", "none", "none",
                 "A plane is taking off.", "An air plane is taking off.", "5.000"],
                ["1", "main-captions", "MSRvid", "2012test", "0004", "none", "none",
                 "A man is playing a large flute.", "A man is playing a flute.", "3.800"],
            ],
            "STS-B/dev.tsv": [[*STSB_HEAD, "score"],
                              ["0", "main-captions", "MSRvid", "2012test", "0000", "none", "none",
                               "A man with a hard hat is dancing.",
                               "A man wearing a hard hat is dancing.", "0.250"]],
            "STS-B/test.tsv": [STSB_HEAD,
                               ["0", "main-captions", "MSRvid", "2012test", "0024", "none",
                                "none", "A girl is styling her hair.",
                                "A girl is brushing her hair."],
                               ["1", "main-news", "headlines", "2016", "0001", "none", "none",
                                "Men play soccer.", "Boys are playing soccer."]],
        },
        expected={
            "train": [("train-0", "A plane is taking off.", "An air plane is taking off.", 5.0),
                      ("train-1", "A man is playing a large flute.", "A man is playing a flute.",
                       3.8)],
            "dev": [("dev-0", "A man with a hard hat is dancing.",
                     "A man wearing a hard hat is dancing.", 0.25)],
            "test": [("0", "A girl is styling her hair.", "A girl is brushing her hair.", None),
                     ("1", "Men play soccer.", "Boys are playing soccer.", None)],
        }),
    "qqp": GlueFixture(
        files={
            "QQP/train.tsv": [
                ["id", "qid1", "qid2", "question1", "question2", "is_duplicate"],
                ["133273", "213221", "213222", "How is the life of a math student?",
                 "Which level of preparation is enough for the exam?", "0"],
                ["363362", "How can I get a \"free\" domain?"],
                ["402555", "536040", "536041", "How do I control my emotions?",
                 "How do you control your emotions?", "1"],
            ],
            "QQP/dev.tsv": [["id", "qid1", "qid2", "question1", "question2", "is_duplicate"],
                            ["40066", "72393", "72394", "What is the best way to learn Python?",
                             "How do I learn Python?", "1"]],
            "QQP/test.tsv": [["id", "question1", "question2"],
                             ["0", "Why do rockets look white?", "Why are rockets white?"],
                             ["1", "Is Java hard?", "Is Python easy?"]],
        },
        expected={
            "train": [("train-0", "How is the life of a math student?",
                       "Which level of preparation is enough for the exam?", "0"),
                      ("train-1", "How do I control my emotions?",
                       "How do you control your emotions?", "1")],
            "dev": [("dev-0", "What is the best way to learn Python?", "How do I learn Python?",
                     "1")],
            "test": [("0", "Why do rockets look white?", "Why are rockets white?", None),
                     ("1", "Is Java hard?", "Is Python easy?", None)],
        }),
    "mnli": GlueFixture(
        files={
            "MNLI/train.tsv": [
                [*MNLI_HEAD, "label1", "gold_label"],
                mnli_row(0, "government", "Conceptually cream skimming has two dimensions.",
                         "Product and geography are what make cream skimming work. ",
                         "neutral", "neutral"),
                mnli_row(1, "telephone", "you know during the season i guess",
                         "You lose the things to the following level.", "entailment",
                         "entailment"),
            ],
            "MNLI/dev_matched.tsv": [
                [*MNLI_HEAD, "label1", "label2", "label3", "label4", "label5", "gold_label"],
                mnli_row(0, "slate", "The new rights are nice enough",
                         "Everyone really likes the newest benefits ", "neutral", "entailment",
                         "neutral", "neutral", "neutral", "neutral"),
            ],
            "MNLI/dev_mismatched.tsv": [
                [*MNLI_HEAD, "label1", "label2", "label3", "label4", "label5", "gold_label"],
                mnli_row(0, "letters", "Your contribution helped make it possible.",
                         "Your contributions were of no help.", "contradiction",
                         "contradiction", "contradiction", "neutral", "contradiction",
                         "contradiction"),
            ],
            "MNLI/test_matched.tsv": [
                MNLI_HEAD,
                mnli_row(0, "travel", "Hierbas and frigola are names worth keeping a look-out for.",
                         "Hierbas is a name worth looking out for."),
                mnli_row(1, "fiction", "The bride waited.", "Nobody waited."),
            ],
            "MNLI/test_mismatched.tsv": [
                MNLI_HEAD,
                mnli_row(0, "nineeleven", "What have you decided, what are you going to do?",
                         "So what's your decision?"),
            ],
            "diagnostic/diagnostic.tsv": [
                ["index", "sentence1", "sentence2"],
                ["0", "The cat sat on the mat.", "The cat did not sit on the mat."],
                ["1", "The cat did not sit on the mat.", "The cat sat on the mat."],
            ],
        },
        expected={
            "train": [("train-0", "Conceptually cream skimming has two dimensions.",
                       "Product and geography are what make cream skimming work. ", "neutral"),
                      ("train-1", "you know during the season i guess",
                       "You lose the things to the following level.", "entailment")],
            "dev_matched": [("dev_matched-0", "The new rights are nice enough",
                             "Everyone really likes the newest benefits ", "neutral")],
            "dev_mismatched": [("dev_mismatched-0", "Your contribution helped make it possible.",
                                "Your contributions were of no help.", "contradiction")],
            "test_matched": [("0", "Hierbas and frigola are names worth keeping a look-out for.",
                              "Hierbas is a name worth looking out for.", None),
                             ("1", "The bride waited.", "Nobody waited.", None)],
            "test_mismatched": [("0", "What have you decided, what are you going to do?",
                                 "So what's your decision?", None)],
            "diagnostic": [("0", "The cat sat on the mat.", "The cat did not sit on the mat.",
                            None),
                           ("1", "The cat did not sit on the mat.", "The cat sat on the mat.",
                            None)],
        }),
    "qnli": GlueFixture(
        files={
            "QNLI/train.tsv": [["index", "question", "sentence", "label"],
                               ["0", "When did the third Digimon series begin?",
                                "Digimon Tamers takes a darker approach.", "not_entailment"],
                               ["1", "Which missile batteries often have individual launchers?",
                                "Missile batteries have individual launchers.", "entailment"]],
            "QNLI/dev.tsv": [["index", "question", "sentence", "label"],
                             ["0", "What came into force after the new constitution?",
                              "The Treaty came into force.", "entailment"]],
            "QNLI/test.tsv": [["index", "question", "sentence"],
                              ["0", "What organization is devoted to Jihad?",
                               "For some decades prior to the First Palestine Intifada ."]],
        },
        expected={
            "train": [("train-0", "When did the third Digimon series begin?",
                       "Digimon Tamers takes a darker approach.", "not_entailment"),
                      ("train-1", "Which missile batteries often have individual launchers?",
                       "Missile batteries have individual launchers.", "entailment")],
            "dev": [("dev-0", "What came into force after the new constitution?",
                     "The Treaty came into force.", "entailment")],
            "test": [("0", "What organization is devoted to Jihad?",
                      "For some decades prior to the First Palestine Intifada .", None)],
        }),
    "rte": GlueFixture(
        files={
            "RTE/train.tsv": [["index", "sentence1", "sentence2", "label"],
                              ["0", "No Weapons of Mass Destruction Found in Iraq Yet.",
                               "Weapons of Mass Destruction Found in Iraq.", "not_entailment"]],
            "RTE/dev.tsv": [["index", "sentence1", "sentence2", "label"],
                            ["0", "Dana Reeve died of lung cancer.", "Dana Reeve is dead.",
                             "entailment"]],
            "RTE/test.tsv": [["index", "sentence1", "sentence2"],
                             ["0", "Mangla was an urban center.", "Mangla was a city."],
                             ["1", "Bob sang.", "Bob is mute."]],
        },
        expected={
            "train": [("train-0", "No Weapons of Mass Destruction Found in Iraq Yet.",
                       "Weapons of Mass Destruction Found in Iraq.", "not_entailment")],
            "dev": [("dev-0", "Dana Reeve died of lung cancer.", "Dana Reeve is dead.",
                     "entailment")],
            "test": [("0", "Mangla was an urban center.", "Mangla was a city.", None),
                     ("1", "Bob sang.", "Bob is mute.", None)],
        }),
    "wnli": GlueFixture(
        files={
            "WNLI/train.tsv": [["index", "sentence1", "sentence2", "label"],
                               ["0", "I stuck a pin through a carrot. When I pulled the pin out, "
                                "it had a hole.", "The carrot had a hole.", "1"]],
            "WNLI/dev.tsv": [["index", "sentence1", "sentence2", "label"],
                             ["0", "The drain is clogged with hair. It has to be cleaned.",
                              "The hair has to be cleaned.", "0"]],
            "WNLI/test.tsv": [["index", "sentence1", "sentence2"],
                              ["0", "Maude and Dora had seen the trains rushing across the "
                               "prairie.", "Horses ran away when Maude saw them."]],
        },
        expected={
            "train": [("train-0", "I stuck a pin through a carrot. When I pulled the pin out, "
                       "it had a hole.", "The carrot had a hole.", "1")],
            "dev": [("dev-0", "The drain is clogged with hair. It has to be cleaned.",
                     "The hair has to be cleaned.", "0")],
            "test": [("0", "Maude and Dora had seen the trains rushing across the prairie.",
                      "Horses ran away when Maude saw them.", None)],
        }),
}

SUBMISSION_NAMES = {("cola", "test"): "CoLA.tsv", ("sst2", "test"): "SST-2.tsv",
                    ("mrpc", "test"): "MRPC.tsv", ("stsb", "test"): "STS-B.tsv",
                    ("qqp", "test"): "QQP.tsv", ("mnli", "test_matched"): "MNLI-m.tsv",
                    ("mnli", "test_mismatched"): "MNLI-mm.tsv", ("mnli", "diagnostic"): "AX.tsv",
                    ("qnli", "test"): "QNLI.tsv", ("rte", "test"): "RTE.tsv",
                    ("wnli", "test"): "WNLI.tsv"}


def write_file(path, text, mode="w"):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, mode, **({} if "b" in mode else {"encoding": "utf-8", "newline": ""})) as f:
        f.write(text)
    return str(path)


def write_glue(root, task_name):
    for relative, rows in GLUE_FIXTURES[task_name].files.items():
        write_file(os.path.join(root, relative), "".join("\t".join(r) + "\n" for r in rows))
    return str(root)


def as_tuples(examples):
    return [(e.guid, e.text_a, e.text_b, e.label) for e in examples]


# ---------------------------------------------------------------------------------------------
# GLUE files


@pytest.mark.parametrize("task_name", list(GLUE_FIXTURES))
def test_glue_splits_read_as_the_original_reads_them(tmp_path, task_name):
    root = write_glue(tmp_path, task_name)
    task = glue.get_task(task_name)
    assert set(GLUE_FIXTURES[task_name].expected) == set(task.splits)
    for split, expected in GLUE_FIXTURES[task_name].expected.items():
        from_root = glue.read_glue_split(task_name, root, split)
        from_task_dir = glue.read_glue_split(task, os.path.join(root, task.directory), split)
        assert as_tuples(from_root) == expected, split
        assert from_task_dir == from_root


@pytest.mark.parametrize("task_name", list(GLUE_FIXTURES))
def test_glue_submission_files(tmp_path, task_name):
    root = write_glue(tmp_path / "glue", task_name)
    task = glue.get_task(task_name)
    for split in task.test_splits:
        examples = glue.read_glue_split(task, root, split)
        if task.is_regression:
            predictions = [-0.5, 5.7, 2.34567][:len(examples)]
            labels = ["0.000", "5.000", "2.346"][:len(examples)]
        else:
            labels = predictions = [task.labels[-1 - i % len(task.labels)]
                                    for i in range(len(examples))]
        path = glue.write_submission(task_name, split, examples, predictions, tmp_path / "out")
        assert os.path.basename(path) == SUBMISSION_NAMES[task_name, split]
        with open(path, encoding="utf-8", newline="") as f:
            lines = f.read().split("\n")
        ids = [guid for guid, *_ in GLUE_FIXTURES[task_name].expected[split]]
        assert lines == ["id\tlabel"] + [f"{i}\t{label}" for i, label in zip(ids, labels)] + [""]


def test_glue_task_table():
    assert set(glue.GLUE_TASKS) == {"cola", "sst2", "mrpc", "stsb", "qqp", "mnli", "qnli",
                                    "rte", "wnli"}
    assert {name for name, t in glue.GLUE_TASKS.items() if t.double_unordered} == {"mrpc", "stsb"}
    assert {name for name, t in glue.GLUE_TASKS.items() if t.default_epochs == 10} == {"rte",
                                                                                       "stsb"}
    assert glue.get_task("stsb").label_range == (0.0, 5.0)
    assert glue.get_task("stsb").metric == "pearson_spearman"
    assert glue.get_task("cola").metric == "mcc"
    assert glue.get_task("qqp").metric == glue.get_task("mrpc").metric == "f1_accuracy"
    assert glue.get_task("mnli").labels == ("contradiction", "entailment", "neutral")
    for alias, name in [("glue/cola", "cola"), ("CoLA", "cola"), ("sst-2", "sst2"),
                        ("sst", "sst2"), ("SST-2", "sst2"), ("sts-b", "stsb"), ("sts", "stsb"),
                        ("glue/mnli", "mnli")]:
        assert glue.get_task(alias).name == name
    assert set(glue.SUBMISSION_FILES.items()) == set(SUBMISSION_NAMES.items())


def test_mnli_dev_is_dev_matched(tmp_path):
    root = write_glue(tmp_path, "mnli")
    examples = glue.read_glue_split("mnli", root, "dev")
    assert as_tuples(examples) == GLUE_FIXTURES["mnli"].expected["dev_matched"]


def test_diagnostic_next_to_the_task_files(tmp_path):
    write_glue(tmp_path, "mnli")
    os.rename(tmp_path / "diagnostic" / "diagnostic.tsv", tmp_path / "MNLI" / "diagnostic.tsv")
    examples = glue.read_glue_split("mnli", tmp_path / "MNLI", "diagnostic")
    assert as_tuples(examples) == GLUE_FIXTURES["mnli"].expected["diagnostic"]


def test_qqp_skips_lines_with_missing_fields_and_warns(tmp_path, caplog):
    root = write_glue(tmp_path, "qqp")
    with caplog.at_level(logging.WARNING):
        examples = glue.read_glue_split("qqp", root, "train")
    assert len(examples) == 2
    assert "skipped 1 line(s)" in caplog.text
    assert examples[1].line == 4


def test_a_short_line_is_an_error_outside_qqp(tmp_path):
    write_glue(tmp_path, "rte")
    with open(tmp_path / "RTE" / "dev.tsv", "a", encoding="utf-8") as f:
        f.write("1\tonly one sentence\n")
    with pytest.raises(TaskDataError, match=r"dev\.tsv line 3 has 2 fields, no column 2"):
        glue.read_glue_split("rte", tmp_path, "dev")


# ---------------------------------------------------------------------------------------------
# Generic reader


def test_csv_with_header_quotes_and_names(tmp_path):
    path = write_file(tmp_path / "reviews.csv",
                      'id,review,summary,label\n'
                      '7,"Good, really good","short, sweet",pos\n'
                      '8,"He said ""meh""\nand left",,neg\n'
                      '9,Fine,ok,pos\n')
    examples = read_table(path, text_a_column="review", text_b_column="summary",
                          label_column="label", labels=["neg", "pos"], split="dev")
    assert examples == [
        Example("dev-0", "Good, really good", "short, sweet", "pos", line=2),
        Example("dev-1", 'He said "meh"\nand left', "", "neg", line=3),
        Example("dev-2", "Fine", "ok", "pos", line=5),
    ]
    by_id = read_table(path, text_a_column=1, label_column="label", id_column="id")
    assert [(e.guid, e.text_b, e.label) for e in by_id] == [("7", None, "pos"), ("8", None, "neg"),
                                                            ("9", None, "pos")]


def test_tsv_by_index_without_header(tmp_path):
    path = write_file(tmp_path / "pairs.tsv", 'a "quoted\tb one\t1\r\n\r\nc\td\t0\r\n')
    examples = read_table(path, text_a_column=0, text_b_column="1", label_column=-1)
    assert as_tuples(examples) == [("train-0", 'a "quoted', "b one", "1"),
                                   ("train-1", "c", "d", "0")]
    assert [e.line for e in examples] == [1, 3]


def test_header_true_with_index_columns_and_bom(tmp_path):
    path = write_file(tmp_path / "x.tsv", "\ufeffsentence\tlabel\nhello\t2.5\n")
    assert as_tuples(read_table(path, text_a_column=0, label_column=1, header=True,
                                regression=True)) == [("train-0", "hello", None, 2.5)]
    assert as_tuples(read_table(path, text_a_column="sentence", label_column="label")) == [
        ("train-0", "hello", None, "2.5")]


def test_jsonl_by_key_with_regression_labels(tmp_path):
    path = write_file(tmp_path / "sts.jsonl",
                      '{"s1": "A cat.", "s2": "A dog.", "score": 1.5}\n\n'
                      '{"s1": "Rain.", "s2": "Rain!", "score": "4"}\n')
    examples = read_table(path, text_a_column="s1", text_b_column="s2", label_column="score",
                          regression=True, label_range=(0.0, 5.0))
    assert as_tuples(examples) == [("train-0", "A cat.", "A dog.", 1.5),
                                   ("train-1", "Rain.", "Rain!", 4.0)]
    assert [e.line for e in examples] == [1, 3]


def test_jsonl_integer_labels_and_file_format(tmp_path):
    path = write_file(tmp_path / "data.txt", '{"text": "yes", "label": 1}\n')
    examples = read_table(path, text_a_column="text", label_column="label", labels=["0", "1"],
                          file_format="jsonl")
    assert as_tuples(examples) == [("train-0", "yes", None, "1")]
    with pytest.raises(TaskDataError, match=r"cannot tell the format of .*data\.txt"):
        read_table(path, text_a_column="text")


# ---------------------------------------------------------------------------------------------
# Errors


def test_unknown_task():
    with pytest.raises(TaskDataError, match=r"unknown GLUE task 'glue/colaa' \(known: cola, "
                                            r"sst2, mrpc, stsb, qqp, mnli, qnli, rte, wnli\)"):
        glue.get_task("glue/colaa")


def test_unknown_split(tmp_path):
    with pytest.raises(TaskDataError, match=r"GLUE task rte has no split 'dev_matched' "
                                            r"\(splits: train, dev, test\)"):
        glue.read_glue_split("rte", tmp_path, "dev_matched")


def test_data_dir_without_the_split_file(tmp_path):
    write_file(tmp_path / "RTE" / "train.tsv", "index\tsentence1\tsentence2\tlabel\n")
    write_file(tmp_path / "RTE" / "readme.txt", "")
    with pytest.raises(TaskDataError) as error:
        glue.read_glue_split("rte", tmp_path, "dev")
    message = str(error.value)
    assert f"no dev.tsv for GLUE RTE dev in {tmp_path / 'RTE'}" in message
    assert "it holds: readme.txt, train.tsv" in message
    with pytest.raises(TaskDataError, match=r"no train\.tsv for GLUE CoLA train in .*"
                                            r"\(it holds: RTE\)"):
        glue.read_glue_split("cola", tmp_path, "train")
    with pytest.raises(TaskDataError, match=r"no diagnostic\.tsv for GLUE AX in .*MNLI"):
        glue.read_glue_split("mnli", tmp_path / "MNLI", "diagnostic")


def test_missing_column_names_the_existing_ones(tmp_path):
    path = write_file(tmp_path / "a.csv", "text,label\nhi,1\nho\n")
    with pytest.raises(TaskDataError, match=r"a\.csv has no column 'sentence' "
                                            r"\(columns: text, label\)"):
        read_table(path, text_a_column="sentence")
    with pytest.raises(TaskDataError, match=r"a\.csv line 3 has 1 fields, no column 1"):
        read_table(path, text_a_column="text", label_column=1)
    jsonl = write_file(tmp_path / "b.jsonl", '{"text": "hi"}\n')
    with pytest.raises(TaskDataError, match=r"b\.jsonl line 1 has no key 'label' \(keys: text\)"):
        read_table(jsonl, text_a_column="text", label_column="label")


def test_label_not_in_labels(tmp_path):
    path = write_file(tmp_path / "nli.tsv", "s1\ts2\tlabel\na\tb\tentailment\nc\td\tneutrall\n")
    with pytest.raises(TaskDataError, match=r"nli\.tsv line 3: label 'neutrall' is not one of "
                                            r"'contradiction', 'entailment', 'neutral'"):
        read_table(path, text_a_column="s1", text_b_column="s2", label_column="label",
                   labels=glue.NLI_THREE_WAY)


def test_non_numeric_regression_label(tmp_path):
    path = write_file(tmp_path / "sts.csv", "a,b,score\nx,y,4.2\nx,y,high\n")
    with pytest.raises(TaskDataError, match=r"sts\.csv line 3: label 'high' is not a number"):
        read_table(path, text_a_column="a", text_b_column="b", label_column="score",
                   regression=True)


@pytest.mark.parametrize("text", ["", "sentence\tlabel\n", "sentence\tlabel\n\n\n"])
def test_empty_split(tmp_path, text):
    path = write_file(tmp_path / "dev.tsv", text)
    with pytest.raises(TaskDataError, match=r"dev\.tsv holds no examples$"):
        read_table(path, text_a_column="sentence", label_column="label")


@pytest.mark.parametrize("bom, offset", [(b"", 18), (b"\xef\xbb\xbf", 21)])
def test_not_utf8_names_file_and_byte_offset(tmp_path, bom, offset):
    data = bom + "sentence\tlabel\ncafé\t1\n".encode("latin-1")
    path = write_file(tmp_path / "latin1.tsv", data, mode="wb")
    with pytest.raises(TaskDataError, match=rf"latin1\.tsv is not UTF-8: invalid byte 0xe9 at "
                                            rf"byte offset {offset}$"):
        read_table(path, text_a_column="sentence")


def test_missing_file(tmp_path):
    with pytest.raises(TaskDataError, match=r"task data file not found: .*nowhere\.tsv"):
        read_table(str(tmp_path / "nowhere.tsv"), text_a_column=0)


def test_names_need_a_header(tmp_path):
    path = write_file(tmp_path / "x.tsv", "a\tb\n")
    with pytest.raises(TaskDataError, match=r"column names \('b'\) need a header line"):
        read_table(path, text_a_column=0, label_column="b", header=False)


def test_submission_errors(tmp_path):
    examples = [Example("0", "a", None, None)]
    with pytest.raises(ValueError, match="1 examples but 2 predictions"):
        glue.write_submission("cola", "test", examples, ["0", "1"], tmp_path)
    with pytest.raises(ValueError, match=r"'dev' is not submitted"):
        glue.write_submission("cola", "dev", examples, ["0"], tmp_path)
    with pytest.raises(ValueError, match=r"prediction 'positive' is not one of 0, 1"):
        glue.write_submission("sst2", "test", examples, ["positive"], tmp_path)


# ---------------------------------------------------------------------------------------------
# TFDS (mocked: no download, no network)


@pytest.mark.parametrize("task_name, split", [("cola", "dev"), ("stsb", "train"),
                                              ("mnli", "dev_mismatched"), ("qnli", "test"),
                                              ("mnli", "diagnostic")])
def test_tfds_random_mock(no_network, task_name, split):
    tfds = pytest.importorskip("tensorflow_datasets")
    task = glue.get_task(task_name)
    with tfds.testing.mock_data(num_examples=3):
        examples = glue.read_tfds_split(task_name, split)
    assert len(examples) == 3
    for example in examples:
        assert isinstance(example.text_a, str)
        assert (example.text_b is None) == (task_name == "cola")
        if split in task.test_splits:
            assert example.label is None and example.guid.isdigit()
        elif task.is_regression:
            assert isinstance(example.label, float)
        else:
            assert example.label in task.labels and example.guid.startswith(f"{split}-")


def _fixed_mock(records):
    """An `as_dataset_fn` for `tfds.testing.mock_data` that yields `records` for any split."""
    import tensorflow as tf

    def as_dataset(self, *args, **kwargs):
        return tf.data.Dataset.from_tensor_slices(
            {key: np.array(values) for key, values in records.items()})
    return as_dataset


@pytest.mark.parametrize("task_name, labels, expected", [
    ("mnli", [0, 1, 2], ["entailment", "neutral", "contradiction"]),
    ("cola", [0, 1, 1], ["0", "1", "1"]),
    ("wnli", [0, 1, 0], ["0", "1", "0"]),
    ("mrpc", [1, 0, 1], ["1", "0", "1"]),
])
def test_tfds_labels_map_by_class_name(no_network, task_name, labels, expected):
    tfds = pytest.importorskip("tensorflow_datasets")
    key_a, key_b = glue._TFDS_TEXT_FEATURES[task_name]
    records = {key_a: [b"caf\xc3\xa9", b"b", b"c"], "label": np.array(labels, np.int64),
               "idx": np.array([5, 6, 7], np.int32)}
    if key_b:
        records[key_b] = [b"x", b"y", b"z"]
    split = "dev_matched" if task_name == "mnli" else "dev"
    with tfds.testing.mock_data(as_dataset_fn=_fixed_mock(records)):
        examples = glue.read_tfds_split(task_name, split)
    assert [e.label for e in examples] == expected
    assert [e.guid for e in examples] == [f"{split}-5", f"{split}-6", f"{split}-7"]
    assert examples[0].text_a == "café"


def test_tfds_test_split_labels_are_none(no_network):
    tfds = pytest.importorskip("tensorflow_datasets")
    records = {"sentence1": [b"a"], "sentence2": [b"b"], "label": np.array([-1.0], np.float32),
               "idx": np.array([42], np.int32)}
    with tfds.testing.mock_data(as_dataset_fn=_fixed_mock(records)):
        examples = glue.read_tfds_split("sts-b", "test")
    assert examples == [Example("42", "a", "b", None)]
    assert glue.tfds_source("mnli", "dev") == ("glue/mnli", "validation_matched")
    assert glue.tfds_source("mnli", "diagnostic") == ("glue/ax", "test")
    assert glue.tfds_source("rte", "dev") == ("glue/rte", "validation")
