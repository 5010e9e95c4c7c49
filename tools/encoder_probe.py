#!/usr/bin/env python
"""Representation statistics per layer and linear probes of a frozen encoder (a diagnostic tool,
not part of the package; docs/pretraining_value.md's probe table comes from it).

  python tools/encoder_probe.py runs/A,random:runs/A --task_dir data/debian/sections \
      --vocab_file data/debian/vocab.txt --n 1000

Per layer (embeddings, then each transformer layer), on the dev texts: the mean cosine between
token vectors of different positions and texts, between [CLS] vectors and between mean-pooled
vectors of different texts, the mean token norm; and the dev accuracy of a logistic regression
(standardised features) trained on the [CLS] or the mean vector of N training texts (the subset
of tools/finetune_trials.py, seed 0).
"""
import argparse, json
import numpy as np
import tensorflow as tf
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler
from electra_tf.finetuning import api
from electra_tf.finetuning.source import resolve_source, restore_encoder
from electra_tf.finetuning.classification import ClassificationJob
from electra_tf.finetuning.common import batched_inputs
import finetune_trials
from finetune_trials import subtask


def hidden_states(model, features, batch=256):
    dataset, n = batched_inputs(features, batch)
    per_layer = None
    enc = model.encoder
    for inputs in dataset:
        ids, mask, seg = (tf.cast(inputs[k], tf.int32) for k in ("input_ids", "input_mask", "segment_ids"))
        x = enc.embeddings(ids, seg, training=False)
        if enc.embeddings_project is not None:
            x = enc.embeddings_project(x)
        states = [x]
        for layer in enc.transformer_layers:
            x = layer(x, padding_mask=mask, training=False)
            states.append(x)
        m = tf.cast(mask, tf.float32)[:, :, None]
        cls = [s[:, 0].numpy() for s in states]
        mean = [(tf.reduce_sum(s * m, 1) / tf.reduce_sum(m, 1)).numpy() for s in states]
        tokens = [tf.boolean_mask(s, mask > 0).numpy() for s in states]
        chunk = list(zip(cls, mean, tokens))
        per_layer = chunk if per_layer is None else [
            tuple(np.concatenate([a, b]) for a, b in zip(p, c)) for p, c in zip(per_layer, chunk)]
    return [(c[:n], m[:n], t) for c, m, t in per_layer]


def mean_cosine(v, rng, pairs=20000):
    v = v / (np.linalg.norm(v, axis=-1, keepdims=True) + 1e-9)
    i, j = rng.integers(0, len(v), pairs), rng.integers(0, len(v), pairs)
    keep = i != j
    return float(np.mean(np.sum(v[i[keep]] * v[j[keep]], -1)))


def analyse(encoder, n, seed=0):
    random_init = encoder.startswith("random:")
    src = resolve_source(encoder.split(":", 1)[1] if random_init else encoder)
    config = api.resolve_finetune_config(src, "finetune/small", ["finetune.max_seq_length=128"])
    job = ClassificationJob(subtask(n, seed), config, src.vocab_file or finetune_trials.ARGS.vocab_file)
    import keras
    keras.utils.set_random_seed(seed)
    model = job.build_model()
    if not random_init:
        restore_encoder(model.encoder, src)
    rng = np.random.default_rng(0)
    train = hidden_states(model, job.train)
    dev = hidden_states(model, job.eval_splits["dev"])
    ytr, ydev = job.train["labels"], job.eval_splits["dev"]["labels"]
    rows = []
    for layer, ((ctr, mtr, _), (cdv, mdv, tdv)) in enumerate(zip(train, dev)):
        row = {"encoder": encoder, "layer": layer,
               "token_cos": mean_cosine(tdv, rng), "cls_cos": mean_cosine(cdv, rng),
               "mean_cos": mean_cosine(mdv, rng),
               "token_norm": float(np.linalg.norm(tdv, axis=-1).mean())}
        for name, (xtr, xdv) in (("cls", (ctr, cdv)), ("mean", (mtr, mdv))):
            scaler = StandardScaler().fit(xtr)
            clf = LogisticRegression(max_iter=2000, C=1.0).fit(scaler.transform(xtr), ytr)
            row[f"probe_{name}"] = 100 * float((clf.predict(scaler.transform(xdv)) == ydev).mean())
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("encoders")
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--task_dir", required=True)
    ap.add_argument("--vocab_file")
    ap.add_argument("--out", default="encoder_probe.jsonl")
    a = finetune_trials.ARGS = ap.parse_args()
    for enc in a.encoders.split(","):
        for row in analyse(enc, a.n):
            with open(a.out, "a") as f:
                f.write(json.dumps(row) + "\n")
