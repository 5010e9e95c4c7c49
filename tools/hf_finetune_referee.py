#!/usr/bin/env python
r"""Referee: fine-tune an electra_tf pretraining run in Hugging Face PyTorch.

When electra_tf fine-tuning of a pretrained run looks wrong (e.g. worse than random init), this
script fine-tunes the *same weights* on the *same examples* (same token ids, same training
subset) with an independent implementation: the run is converted with
`python -m electra_tf.convert_checkpoint --to hf` and trained with
`transformers.ElectraForSequenceClassification` and a plain PyTorch loop. If the referee
reproduces electra_tf's numbers, the result is a property of the pretrained weights; if it
does not, suspect electra_tf's fine-tuning path. A diagnostic tool, not part of the package.

Usage:

  python tools/hf_finetune_referee.py --run runs/mini \
      --vocab_file data/debian/vocab.txt --task_dir data/debian/sections \
      --labels_count 300 --epochs 10 --lr 1e-3 --seeds 0,1 --out referee.jsonl
  # the same config with random weights (HF's initialisation)
  python tools/hf_finetune_referee.py --random_like runs/mini ...
  # a particular checkpoint, HF's own classification head, electra_tf's optimizer
  python tools/hf_finetune_referee.py --run RUN/checkpoints/ckpt-800 --head hf \
      --optimizer electra ...

What is reproduced from electra_tf (see electra_tf/finetuning/runner.py, classification.py and
training/optimizer.py):
  * token ids: electra_tf's own featurization (ClassificationJob) of the TaskData;
  * training subset: the first --labels_count train rows after
    the subset `python -m electra_tf.study` fine-tunes on (electra_tf.study.plan.training_subset);
  * steps = ceil(N / batch) * epochs, warmup = int(steps * warmup_proportion); the batches are
    cut from a stream of per-epoch permutations (seeded), always full, as electra_tf's
    shuffle().repeat().batch(drop_remainder=True);
  * loss: cross-entropy summed over the batch (loss_reduction "sum"); global-norm clip 1.0;
  * layer-wise LR decay: multiplier decay ** (n_layers + 2 - depth) with depth 0 for the
    embeddings (and embeddings_project), i + 1 for layer i and n_layers + 2 for the head
    (so head 1, top layer decay^2, embeddings decay^(n+2); --fix_off_by_one: top layer decay^1);
    it scales the whole update, weight decay included (torch AdamW does the same per group);
  * weight decay 0.01 on every parameter whose name does not match LayerNorm|layer_norm|bias;
  * --head linear (default): dropout(0.1) + one Linear on [CLS] (Glorot-uniform weight, zero
    bias), electra_tf's ClassificationHead; --head hf: HF's dense+GELU+dropout+dense head.

--optimizer adamw (default) is the standard HF recipe: torch.optim.AdamW (bias-corrected,
eps 1e-6) with HF's linear schedule (warmup to the peak over the warmup steps, then linear decay
to 0). NOTE electra_tf's fine-tuning (like the original ELECTRA) uses Adam *without* bias
correction and lr(t) = lr0 * (1 - t/T) * min(1, t/W); in a short run this makes its steps
several times larger than torch AdamW's at the same --lr. --optimizer electra reproduces that
(no bias correction, eps outside the sqrt, decoupled weight decay scaled by the LR, electra_tf's
schedule) to separate "implementation" from "optimizer recipe".

Before training, for a pretrained run, the converted HF encoder's output is compared with
electra_tf's own encoder on a few dev examples (--no_check_conversion skips it).

Output: one JSON line per seed appended to --out; a summary line with the medians.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

DEFAULT_CACHE = os.path.join(tempfile.gettempdir(), "electra_tf_hf_referee")
NO_DECAY = re.compile(r"LayerNorm|layer_norm|bias")


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="See the module docstring for what is reproduced.")
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--run", help="electra_tf pretraining run dir, or RUN/checkpoints/ckpt-N")
    src.add_argument("--random_like", help="run dir whose model config is used, random weights")
    ap.add_argument("--vocab_file", default=None, help="default: the run's own")
    ap.add_argument("--task_dir", required=True,
                    help="train.tsv, dev.tsv, test.tsv (+ labels.txt) with text/label columns")
    ap.add_argument("--labels_file", default=None, help="default: TASK_DIR/labels.txt")
    ap.add_argument("--text_column", default="text")
    ap.add_argument("--label_column", default="label")
    ap.add_argument("--labels_count", type=int, default=0,
                    help="training subset size N (0: the whole train set)")
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--lr", type=float, default=1e-4)
    ap.add_argument("--epochs", type=float, default=3.0)
    ap.add_argument("--layerwise_decay", type=float, default=0.8, help="0 turns it off")
    ap.add_argument("--fix_off_by_one", action="store_true",
                    help="layer-wise decay with the top layer at decay^1 (electra issue #51)")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--max_seq_length", type=int, default=128)
    ap.add_argument("--warmup_proportion", type=float, default=0.1)
    ap.add_argument("--weight_decay", type=float, default=0.01)
    ap.add_argument("--clip_norm", type=float, default=1.0)
    ap.add_argument("--head", choices=("linear", "hf"), default="linear")
    ap.add_argument("--head_dropout", type=float, default=0.1, help="--head linear's dropout")
    ap.add_argument("--optimizer", choices=("adamw", "electra"), default="adamw",
                    help="adamw: torch.optim.AdamW + HF linear schedule; electra: electra_tf's "
                         "Adam without bias correction and its warmup x decay schedule")
    ap.add_argument("--loss_reduction", choices=("sum", "mean"), default="sum")
    ap.add_argument("--eval_batch", type=int, default=256)
    ap.add_argument("--hf_cache", default=DEFAULT_CACHE,
                    help="where converted HF directories are kept (reused when present)")
    ap.add_argument("--no_check_conversion", action="store_true")
    ap.add_argument("--threads", type=int, default=1, help="torch / TF CPU threads")
    ap.add_argument("--out", default="referee_results.jsonl")
    return ap.parse_args(argv)


# ---- conversion ------------------------------------------------------------------------------

def convert_to_hf(source, vocab_file: str | None, cache_root: str) -> str:
    """The HF discriminator directory of `source` (an EncoderSource), converted once and cached.

    convert_checkpoint takes a run directory and uses its latest checkpoint; to convert a given
    ckpt-N a temporary run directory is staged with symlinks to config.yaml and that checkpoint.
    """
    ckpt = os.path.abspath(source.checkpoint)
    stamp = "".join(f"{f}:{os.path.getmtime(os.path.join(os.path.dirname(ckpt), f))};"
                    for f in sorted(os.listdir(os.path.dirname(ckpt)))
                    if f.startswith(os.path.basename(ckpt) + "."))
    digest = hashlib.sha1(f"{ckpt}|{stamp}".encode()).hexdigest()[:10]
    name = f"{os.path.basename(os.path.abspath(source.directory))}-{os.path.basename(ckpt)}-{digest}"
    out = os.path.join(cache_root, name)
    disc = os.path.join(out, "discriminator")
    if os.path.isfile(os.path.join(disc, "model.safetensors")):
        print(f"[referee] using cached HF conversion {disc}", flush=True)
        return disc
    os.makedirs(cache_root, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache_root, prefix=".stage-") as stage:
        run = os.path.join(stage, "run")
        os.makedirs(os.path.join(run, "checkpoints"))
        os.symlink(os.path.join(os.path.abspath(source.directory), "config.yaml"),
                   os.path.join(run, "config.yaml"))
        prefix = os.path.basename(ckpt)
        for f in os.listdir(os.path.dirname(ckpt)):
            if f.startswith(prefix + "."):
                os.symlink(os.path.join(os.path.dirname(ckpt), f), os.path.join(run, "checkpoints", f))
        with open(os.path.join(run, "checkpoints", "checkpoint"), "w") as f:
            f.write(f'model_checkpoint_path: "{prefix}"\nall_model_checkpoint_paths: "{prefix}"\n')
        tmp_out = os.path.join(stage, "hf")
        cmd = [sys.executable, "-m", "electra_tf.convert_checkpoint", "--from", "electra_tf",
               "--input", run, "--to", "hf", "--output_dir", tmp_out]
        if vocab_file:
            cmd += ["--vocab_file", vocab_file]
        print("[referee] " + " ".join(cmd), flush=True)
        t0 = time.time()
        env = dict(os.environ, CUDA_VISIBLE_DEVICES="", TF_NUM_INTRAOP_THREADS="1",
                   TF_NUM_INTEROP_THREADS="1")
        subprocess.run(cmd, check=True, env=env)
        print(f"[referee] converted in {time.time() - t0:.1f}s", flush=True)
        if os.path.exists(out):  # a concurrent conversion won
            return disc
        os.rename(tmp_out, out)
    return disc


# ---- model -----------------------------------------------------------------------------------

def make_linear_head(torch, hidden: int, num_labels: int, dropout: float):
    nn = torch.nn

    class LinearClsHead(nn.Module):
        """electra_tf's ClassificationHead: dropout on [CLS], one Dense (Glorot-uniform, zero bias)."""

        def __init__(self):
            super().__init__()
            self.dropout = nn.Dropout(dropout)
            self.out_proj = nn.Linear(hidden, num_labels)
            nn.init.xavier_uniform_(self.out_proj.weight)
            nn.init.zeros_(self.out_proj.bias)

        def forward(self, features, **kwargs):
            return self.out_proj(self.dropout(features[:, 0]))

    return LinearClsHead()


def build_model(args, torch, hf_dir, model_config, num_labels, seed):
    import transformers
    from transformers import ElectraConfig, ElectraForSequenceClassification

    # hides the load report's expected MISSING classifier.* / UNEXPECTED discriminator_predictions.*
    # (missing encoder keys are checked below)
    transformers.logging.set_verbosity_error()
    torch.manual_seed(seed)
    if hf_dir is None:  # --random_like
        from electra_tf.convert.hf import hf_config

        cfg = hf_config(model_config, "discriminator")
        cfg.pop("architectures", None)
        cfg.pop("model_type", None)
        model = ElectraForSequenceClassification(ElectraConfig(**cfg, num_labels=num_labels))
    else:
        model, info = ElectraForSequenceClassification.from_pretrained(
            hf_dir, num_labels=num_labels, output_loading_info=True)
        missing = [k for k in info.get("missing_keys", []) if not k.startswith("classifier.")]
        if missing:
            raise SystemExit(f"[referee] converted weights miss encoder keys: {missing}")
    if args.head == "linear":
        model.classifier = make_linear_head(torch, model.config.hidden_size, num_labels,
                                            args.head_dropout)
    return model.float()


def layer_depth(name: str, num_layers: int) -> int:
    """electra_tf's depth (training/optimizer.py layer_depth) for an HF parameter name."""
    if name.startswith(("electra.embeddings.", "electra.embeddings_project.")):
        return 0
    m = re.match(r"electra\.encoder\.layer\.(\d+)\.", name)
    if m:
        return int(m.group(1)) + 1
    if name.startswith("classifier."):
        return num_layers + 2
    raise ValueError(f"no layer depth for parameter {name!r}")


def param_groups(model, args, num_layers):
    top = num_layers + 1 if args.fix_off_by_one else num_layers + 2
    groups = {}
    for name, p in model.named_parameters():
        if not p.requires_grad:
            continue
        mult = 1.0
        if args.layerwise_decay > 0:
            mult = args.layerwise_decay ** max(0, top - min(layer_depth(name, num_layers), top))
        wd = 0.0 if NO_DECAY.search(name) else args.weight_decay
        g = groups.setdefault((mult, wd), {"params": [], "names": [], "lr": args.lr * mult,
                                           "weight_decay": wd, "lr_mult": mult})
        g["params"].append(p)
        g["names"].append(name)
    return list(groups.values())


def make_electra_adam(torch):
    class ElectraAdam(torch.optim.Optimizer):
        """electra_tf's AdamWeightDecay (bias_correction False): m, v without bias correction,
        p -= lr * (m / (sqrt(v) + eps) + wd * p)."""

        def __init__(self, params, lr, betas=(0.9, 0.999), eps=1e-6, weight_decay=0.0):
            super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay))

        @torch.no_grad()
        def step(self):
            for group in self.param_groups:
                b1, b2 = group["betas"]
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    state = self.state[p]
                    if not state:
                        state["m"] = torch.zeros_like(p)
                        state["v"] = torch.zeros_like(p)
                    m, v = state["m"], state["v"]
                    m.mul_(b1).add_(p.grad, alpha=1 - b1)
                    v.mul_(b2).addcmul_(p.grad, p.grad, value=1 - b2)
                    update = m / (v.sqrt() + group["eps"])
                    if group["weight_decay"]:
                        update = update + group["weight_decay"] * p
                    p.sub_(group["lr"] * update)

    return ElectraAdam


def lr_factor(optimizer: str, total: int, warmup: int):
    if optimizer == "electra":  # electra_tf WarmupLinearDecay: decay x warmup, together
        def f(t):
            lr = 1.0 - min(t, total) / total
            return lr * min(1.0, t / warmup) if warmup > 0 else lr
    else:  # transformers.get_linear_schedule_with_warmup
        def f(t):
            if t < warmup:
                return t / max(1, warmup)
            return max(0.0, (total - t) / max(1, total - warmup))
    return f


# ---- data ------------------------------------------------------------------------------------

def batch_stream(n: int, batch: int, seed: int):
    """Index batches from per-epoch permutations chained together, always full (electra_tf:
    shuffle(n, seed, reshuffle_each_iteration).repeat().batch(drop_remainder=True))."""
    rng = np.random.RandomState(seed)
    pending = np.zeros([0], np.int64)
    while True:
        while len(pending) < batch:
            pending = np.concatenate([pending, rng.permutation(n)])
        yield pending[:batch]
        pending = pending[batch:]


def to_torch(torch, features, idx=None):
    sel = (lambda a: a) if idx is None else (lambda a: a[idx])
    return dict(input_ids=torch.as_tensor(sel(features["input_ids"]), dtype=torch.long),
                attention_mask=torch.as_tensor(sel(features["input_mask"]), dtype=torch.long),
                token_type_ids=torch.as_tensor(sel(features["segment_ids"]), dtype=torch.long))


def evaluate(torch, model, features, batch):
    model.eval()
    preds = []
    with torch.no_grad():
        for i in range(0, len(features["labels"]), batch):
            idx = np.arange(i, min(i + batch, len(features["labels"])))
            preds.append(model(**to_torch(torch, features, idx)).logits.argmax(-1).numpy())
    model.train()
    return 100.0 * float(np.mean(np.concatenate(preds) == features["labels"]))


def check_conversion(torch, run, hf_dir, features, num_labels):
    """Max |electra_tf encoder - HF encoder| over the real tokens of 8 dev examples."""
    from transformers import ElectraModel

    from electra_tf.finetuning import api

    tf_model = api.build_classifier(run, num_labels=num_labels)
    inputs = {k: features[k][:8] for k in ("input_ids", "input_mask", "segment_ids")}
    ours = np.asarray(tf_model.encode(inputs, training=False))
    hf = ElectraModel.from_pretrained(hf_dir).float().eval()
    with torch.no_grad():
        theirs = hf(**to_torch(torch, features, np.arange(8))).last_hidden_state.numpy()
    mask = inputs["input_mask"].astype(bool)
    diff = float(np.max(np.abs(ours[mask] - theirs[mask])))
    scale = float(np.max(np.abs(ours[mask])))
    print(f"[referee] conversion check: max |electra_tf - HF| encoder output = {diff:.2e} "
          f"(max |output| {scale:.2f})", flush=True)
    if diff > 1e-3 * max(1.0, scale):
        print("[referee] WARNING: the converted model does not reproduce electra_tf's encoder",
              flush=True)
    return diff


# ---- main ------------------------------------------------------------------------------------

def main(argv=None):
    args = parse_args(argv)
    import tensorflow as tf
    import torch

    torch.set_num_threads(args.threads)
    try:
        torch.set_num_interop_threads(args.threads)
    except RuntimeError:
        pass
    tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    tf.config.threading.set_inter_op_parallelism_threads(args.threads)
    tf.config.set_visible_devices([], "GPU")

    from electra_tf.finetuning import api
    from electra_tf.finetuning.classification import ClassificationJob
    from electra_tf.finetuning.source import resolve_source
    from electra_tf.study.plan import ALL, training_subset

    run = args.run or args.random_like
    source = resolve_source(run)
    vocab_file = args.vocab_file or source.vocab_file
    if not vocab_file:
        raise SystemExit("no vocabulary found with the run: give --vocab_file")
    config = api.resolve_finetune_config(source, "finetune/small",
                                [f"finetune.max_seq_length={args.max_seq_length}"])
    num_layers = config.model.num_layers

    labels_file = args.labels_file or os.path.join(args.task_dir, "labels.txt")
    with open(labels_file) as f:
        labels = [line.strip() for line in f if line.strip()]
    common = dict(text_a_column=args.text_column, label_column=args.label_column, labels=labels)
    task = api.load_task("csv", data_dir=args.task_dir, **common)
    test_path = next((os.path.join(args.task_dir, f"test.{e}") for e in ("tsv", "csv", "jsonl")
                      if os.path.isfile(os.path.join(args.task_dir, f"test.{e}"))), None)
    eval_splits = {"dev": task.eval_splits["dev"]}
    if test_path:
        eval_splits["test"] = api.load_task("csv", data_dir=args.task_dir, dev_file=test_path,
                                            **common).eval_splits["dev"]

    def subtask(n, seed):  # the training subset `python -m electra_tf.study` uses
        train = training_subset(list(task.train), n or ALL, seed)
        return dataclasses.replace(task, train=train, eval_splits={})

    t0 = time.time()
    eval_job = ClassificationJob(dataclasses.replace(task, train=task.train[:1],
                                                     eval_splits=eval_splits), config, vocab_file)
    sizes = ", ".join(f"{k} {len(v['labels'])}" for k, v in eval_job.eval_splits.items())
    print(f"[referee] featurized {sizes} in {time.time() - t0:.1f}s", flush=True)

    hf_dir = None
    if args.run:
        hf_dir = convert_to_hf(source, vocab_file, args.hf_cache)
        if not args.no_check_conversion:
            check_conversion(torch, run, hf_dir, eval_job.eval_splits["dev"], len(labels))

    results = []
    for seed in [int(s) for s in args.seeds.split(",")]:
        job = ClassificationJob(subtask(args.labels_count, seed), config, vocab_file)
        train = job.train
        n = job.num_train
        per_epoch = math.ceil(n / args.batch)
        total = max(1, int(per_epoch * args.epochs))
        warmup = int(total * args.warmup_proportion)

        model = build_model(args, torch, hf_dir, config.model, len(labels), seed)
        groups = param_groups(model, args, num_layers)
        opt_groups = [{k: g[k] for k in ("params", "lr", "weight_decay")} for g in groups]
        if args.optimizer == "electra":
            opt = make_electra_adam(torch)(opt_groups, lr=args.lr, betas=(0.9, 0.999), eps=1e-6)
        else:
            opt = torch.optim.AdamW(opt_groups, lr=args.lr, betas=(0.9, 0.999), eps=1e-6)
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_factor(args.optimizer, total, warmup))
        params = [p for p in model.parameters() if p.requires_grad]

        t1 = time.time()
        model.train()
        stream = batch_stream(n, args.batch, seed)
        losses = []
        for step in range(total):
            idx = next(stream)
            logits = model(**to_torch(torch, train, idx)).logits
            y = torch.as_tensor(train["labels"][idx], dtype=torch.long)
            loss = torch.nn.functional.cross_entropy(logits, y, reduction=args.loss_reduction)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            if args.clip_norm > 0:
                torch.nn.utils.clip_grad_norm_(params, args.clip_norm)
            opt.step()
            sched.step()
            losses.append(loss.item() / (len(idx) if args.loss_reduction == "sum" else 1))
        train_seconds = time.time() - t1
        accs = {split: evaluate(torch, model, feats, args.eval_batch)
                for split, feats in eval_job.eval_splits.items()}
        record = {
            "run": os.path.abspath(run), "random_like": bool(args.random_like),
            "checkpoint": None if args.random_like else os.path.basename(source.checkpoint),
            "n": n, "lr": args.lr, "epochs": args.epochs, "head": args.head,
            "optimizer": args.optimizer, "layerwise_decay": args.layerwise_decay,
            "fix_off_by_one": args.fix_off_by_one, "batch": args.batch,
            "max_seq_length": args.max_seq_length, "steps": total, "warmup": warmup,
            "seed": seed, "dev_acc": round(accs["dev"], 2),
            "test_acc": round(accs["test"], 2) if "test" in accs else None,
            "final_train_loss": round(float(np.mean(losses[-per_epoch:])), 4),
            "train_seconds": round(train_seconds, 1), "seconds": round(time.time() - t1, 1),
        }
        results.append(record)
        print(json.dumps(record), flush=True)
        with open(args.out, "a") as f:
            f.write(json.dumps(record) + "\n")

    def med(key):
        vals = [r[key] for r in results if r[key] is not None]
        return f"{statistics.median(vals):.2f}" if vals else "n/a"

    what = f"random_like {run}" if args.random_like else f"{run} ({results[0]['checkpoint']})"
    print(f"[referee] SUMMARY {what}: n={results[0]['n']} lr={args.lr} epochs={args.epochs} "
          f"head={args.head} optimizer={args.optimizer} seeds={args.seeds}: median dev "
          f"{med('dev_acc')} test {med('test_acc')} "
          f"(dev {[r['dev_acc'] for r in results]}, test {[r['test_acc'] for r in results]})",
          flush=True)


if __name__ == "__main__":
    main()
