r"""Scores SQuAD predictions made by anything, as the official v1.1 and v2.0 scripts do.

  python -m electra_tf.evaluate_squad --data_file dev-v1.1.json --predictions_file predictions.json
  python -m electra_tf.evaluate_squad --data_file dev-v2.0.json --predictions_file predictions.json \
      --null_odds_file null_odds.json [--null_threshold -2.75]

Prints one JSON object. The data file's `version` field picks the script: v1.1 gives
`exact_match` and `f1`; v2.0 gives `exact`, `f1`, `total`, `HasAns_*`, `NoAns_*` and, with a
null-odds file, `best_exact`, `best_exact_thresh`, `best_f1`, `best_f1_thresh`.

`--null_odds_file` maps question id -> no-answer score (the official script's "na_prob"; for
ELECTRA the answerability head's logit, written by run_finetuning as null_odds.json). A question
whose score is above `--null_threshold` counts as answered with "" (ELECTRA's -2.75 by default,
a logit; the official script's default 1.0 is for probabilities).
"""

from __future__ import annotations

import json
import sys

from absl import flags

from electra_tf import console
from electra_tf.errors import UserError
from electra_tf.evaluation import squad_metrics

console.setup(__name__)  # first: TensorFlow reads its C++ log level when it loads

FLAGS = flags.FLAGS
flags.DEFINE_string("data_file", None, "The official SQuAD JSON (dev-v1.1.json or dev-v2.0.json).")
flags.DEFINE_string("predictions_file", None, "JSON object: question id -> predicted answer text.")
flags.DEFINE_string("null_odds_file", None, "v2.0 only: JSON object question id -> no-answer score.")
flags.DEFINE_float("null_threshold", -2.75, "v2.0: a question whose null odds exceed this counts "
                   "as answered with no answer.")
flags.DEFINE_string("output_file", None, "Also write the JSON object here.")


class EvaluationError(UserError):
    """Inputs that cannot be scored."""


def _read_json(path: str, what: str):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        raise EvaluationError(f"{what} not found: {path}") from None
    except json.JSONDecodeError as e:
        raise EvaluationError(f"{what} {path} is not JSON: {e}") from None


def _id_to_value(value, path: str, what: str, kind) -> dict:
    if not isinstance(value, dict) or not all(isinstance(v, kind) for v in value.values()):
        raise EvaluationError(f"{path} is not a {what} file: expected a JSON object mapping each "
                              f"question id to a {'string' if kind is str else 'number'}")
    return value


def squad_version(dataset: dict, path: str) -> str:
    """"v1.1" or "v2.0" from an official file's `version` field."""
    version = str(dataset.get("version", "")).lstrip("v")
    if version in ("1.1", "1.0"):
        return "v1.1"
    if version == "2.0":
        return "v2.0"
    raise EvaluationError(f"{path} has version {dataset.get('version')!r}; expected 1.1 or v2.0 "
                          f"(the official files' `version` field)")


def evaluate_files(data_file: str, predictions_file: str, null_odds_file: str | None = None,
                   null_threshold: float = -2.75) -> dict:
    """The official scores of `predictions_file` on `data_file`, version from the data file."""
    dataset = _read_json(data_file, "data file")
    if not isinstance(dataset, dict) or not isinstance(dataset.get("data"), list):
        raise EvaluationError(f"{data_file} is not a SQuAD file: it has no \"data\" list")
    version = squad_version(dataset, data_file)
    predictions = _id_to_value(_read_json(predictions_file, "predictions file"),
                               predictions_file, "predictions", str)
    if version == "v1.1" and null_odds_file:
        raise EvaluationError(f"{data_file} is SQuAD v1.1; --null_odds_file is for v2.0")
    null_odds = None
    if null_odds_file:
        null_odds = _id_to_value(_read_json(null_odds_file, "null odds file"), null_odds_file,
                                 "null odds", (int, float))
        missing = [qid for qid in predictions if qid not in null_odds]
        if missing:
            raise EvaluationError(f"{null_odds_file} has no score for {len(missing)} predicted "
                                  f"question(s), e.g. {missing[0]!r}")
    try:
        if version == "v1.1":
            return squad_metrics.evaluate_v1(dataset["data"], predictions)
        return squad_metrics.evaluate_v2(dataset["data"], predictions, null_odds,
                                         null_threshold if null_odds else 1.0)
    except (KeyError, TypeError) as e:
        raise EvaluationError(f"{data_file} is not in SQuAD's format (missing key {e})") from None
    except ValueError as e:
        raise EvaluationError(f"{predictions_file}: {e}") from None


def main(argv):
    if len(argv) > 1:
        sys.exit(f"error: unexpected arguments {argv[1:]}; see --help")
    if not FLAGS.data_file or not FLAGS.predictions_file:
        sys.exit("error: --data_file and --predictions_file are required")
    try:
        result = evaluate_files(FLAGS.data_file, FLAGS.predictions_file, FLAGS.null_odds_file,
                                FLAGS.null_threshold)
    except EvaluationError as e:
        sys.exit(f"error: {e}")
    text = json.dumps(result)
    print(text)
    if FLAGS.output_file:
        with open(FLAGS.output_file, "w", encoding="utf-8") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    console.run(main)
