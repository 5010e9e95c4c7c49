#!/usr/bin/env python
"""Quick fine-tuning trials of pretrained encoders on a table task (a diagnostic tool, not part
of the package; docs/pretraining_value.md's fine-tuning tables come from it).

  python tools/finetune_trials.py runs/D,random:runs/D --task_dir data/debian/sections \
      --vocab_file data/debian/vocab.txt --labels 300,1000 --epochs 10,6 --seeds 0,1,2 --lr 1e-3

An encoder is a run directory or a checkpoint prefix (RUN/checkpoints/ckpt-N); `random:RUN` is
RUN's model sizes with random weights. Each trial: the first N training rows after
random.Random(1000 + seed).shuffle, `finetune/small` with the learning rate, epochs and
length 128 (and --extra overrides), the encoder restored, `model.fit`, dev accuracy. --pooling
mean replaces the [CLS] vector by the mean over tokens; a suffix +embonly keeps only the
pretrained embeddings (the transformer layers re-initialised). One JSON line per trial.
"""
import argparse, dataclasses, json, os, random, time
import tensorflow as tf
import keras
from electra_tf.finetuning import api
from electra_tf.finetuning.source import resolve_source, restore_encoder
from electra_tf.finetuning.classification import ClassificationJob
from electra_tf.training.optimizer import create_optimizer
from electra_tf.finetuning.runner import steps_for

ARGS = None


def labels(task_dir):
    with open(os.path.join(task_dir, "labels.txt")) as f:
        return [line.strip() for line in f if line.strip()]

_TASK = None


def task():
    global _TASK
    if _TASK is None:
        _TASK = api.load_task("csv", data_dir=ARGS.task_dir, text_a_column="text", label_column="label",
                              labels=labels(ARGS.task_dir))
    return _TASK


def subtask(n, seed):
    t = task()
    train = list(t.train)
    random.Random(1000 + seed).shuffle(train)
    return dataclasses.replace(t, train=train[:n] if n else train)


def mean_pool_head(model):
    head = model.head
    def call(sequence_output, training=False, mask=None):
        m = tf.cast(model._mask, sequence_output.dtype)[:, :, None]
        pooled = tf.reduce_sum(sequence_output * m, 1) / tf.reduce_sum(m, 1)
        return tf.cast(head.output_dense(head.dropout(pooled, training=training)), tf.float32)
    orig_call = model.call
    def model_call(inputs, training=False):
        model._mask = inputs["input_mask"]
        return orig_call(inputs, training=training)
    head.call = call
    model.call = model_call


def trial(encoder, n, seed, lr, epochs, pooling="cls", extra=()):
    random_init = encoder.startswith("random:")
    src = resolve_source(encoder.split(":", 1)[1] if random_init else encoder)
    config = api.resolve_finetune_config(src, "finetune/small", [
        f"optimizer.learning_rate={lr}", f"finetune.num_train_epochs={epochs}",
        "finetune.max_seq_length=128", *extra])
    job = ClassificationJob(subtask(n, seed), config, src.vocab_file or ARGS.vocab_file)
    per_epoch, total, warmup = steps_for(job, config)
    opt = dataclasses.replace(config.optimizer, train_steps=total, warmup_steps=warmup)
    keras.utils.set_random_seed(seed)
    model = job.build_model()
    if pooling.startswith("mean"):
        mean_pool_head(model)
    model.compile(optimizer=create_optimizer(opt, config.model.num_layers))
    if not random_init:
        restore_encoder(model.encoder, src)
        if pooling.endswith("+embonly"):  # keep only the pretrained embeddings
            keras.utils.set_random_seed(seed + 77)
            fresh = job.build_model()
            for a, b in zip(model.encoder.transformer_layers, fresh.encoder.transformer_layers):
                for va, vb in zip(a.weights, b.weights):
                    va.assign(vb)
    t0 = time.time()
    model.fit(job.train_dataset(config.finetune.train_batch_size, seed), steps_per_epoch=total,
              epochs=1, verbose=0)
    acc = job.evaluate(model, 256)["dev"]["accuracy"]
    return {"encoder": encoder, "n": n, "seed": seed, "lr": lr, "epochs": epochs,
            "pooling": pooling, "extra": list(extra), "steps": total, "acc": acc,
            "seconds": round(time.time() - t0, 1)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("encoders")
    ap.add_argument("--labels", default="1000")
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--lr", default="1e-3")
    ap.add_argument("--epochs", default="6")
    ap.add_argument("--pooling", default="cls")
    ap.add_argument("--extra", action="append", default=[])
    ap.add_argument("--task_dir", required=True, help="train/dev .tsv (text, label) + labels.txt")
    ap.add_argument("--vocab_file", help="for runs that keep no vocab.txt")
    ap.add_argument("--out", default="finetune_trials.jsonl")
    global ARGS
    a = ARGS = ap.parse_args()
    for n, epochs in zip([int(x) for x in a.labels.split(",")],
                         [float(x) for x in a.epochs.split(",")] * 10):
        for lr in [float(x) for x in a.lr.split(",")]:
            for pooling in a.pooling.split(","):
                for enc in a.encoders.split(","):
                    for seed in [int(s) for s in a.seeds.split(",")]:
                        r = trial(enc, n, seed, lr, epochs, pooling, a.extra)
                        print(json.dumps(r), flush=True)
                        with open(a.out, "a") as f:
                            f.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main()
