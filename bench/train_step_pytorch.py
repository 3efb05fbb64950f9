#!/usr/bin/python3
"""PyTorch eager reference for sieve's contrastive training step (the C++ train-step benchmark).

One timed step is what sentence-transformers does for MultipleNegativesRankingLoss with in-batch
negatives only: forward B anchors and B positives in train mode (dropout on), mean-pool over the
attention mask, L2-normalise, loss = cross_entropy(scale * A @ P.T, arange(B)), backward,
clip_grad_norm_(1.0), AdamW step (weight decay on all but bias/LayerNorm parameters, torch's
default betas/eps as sieve's C++ trainer uses), zero_grad. Every text is exactly --seq-len tokens:
[CLS]=101, random ids in [1000, vocab), [SEP]=102; the attention mask is all ones.

The encoder is a minimal BERT in plain torch.nn that follows Hugging Face's BertModel module by
module (word + position + token_type embeddings, LayerNorm, dropout; per layer separate
query/key/value projections, additive mask (1 - mask) * finfo.min, dropout on the attention
probabilities, post-LN residual blocks, GELU (erf) FFN) and uses its parameter names, so a Hugging
Face model.safetensors loads with strict names. `transformers` is not needed; safetensors files are
read with the `safetensors` package if it is importable, else parsed by hand (F32/F16/BF16/F64).

A sample is one anchor-positive pair: samples_per_second = timed_steps * B / seconds.

Threads and BLAS (see docs/benchmarks.md): Debian's torch does its matrix products in the system
OpenBLAS, whose thread pool torch.set_num_threads does not reach. --threads N sets both torch's
OpenMP pool and OpenBLAS's pool to N; --torch-threads/--blas-threads override one of them
(--threads 2 --torch-threads 1 is sieve's own split). By default, like sieve, the script
re-executes itself with OPENBLAS_CORETYPE=SkylakeX (or Haswell) when OpenBLAS 0.3.21 falls back to
its generic Prescott kernels on this CPU; --blas-core off gives PyTorch out of the box. The JSON
reports the thread counts, the OpenBLAS core and OMP_WAIT_POLICY that were in effect.

Usage (Debian's PyTorch, i.e. /usr/bin/python3):
  /usr/bin/python3 bench/train_step_pytorch.py --model DIR [--batch-size 32] [--seq-len 64]
      [--steps 20] [--warmup-steps 3] [--threads 2] [--lr 2e-5] [--scale 10] [--seed 42]
      [--device cpu] [--json] [--torch-threads K] [--blas-threads M] [--blas-core auto|off|NAME]
      [--omp-wait-policy default|active|passive]
  /usr/bin/python3 bench/train_step_pytorch.py --model DIR --random ...   # no weights, random init
Embedding check (eval mode, mean pooling, compared with `sieve embed`; exits 1 above --check-tol):
  /usr/bin/python3 bench/train_step_pytorch.py --model DIR --check-text "the dog bit the man"
      [--check-ids 101,1996,...,102] [--sieve build/sieve] [--check-tol 1e-4]
  Without --check-ids the ids come from `sieve tokenize`; the reference vector always comes from
  `sieve embed --model DIR TEXT` (or from --check-reference FILE holding its JSON output line).
"""
import argparse
import json
import math
import os
import statistics
import struct
import subprocess
import sys
import time


def _env_before_torch(argv):
    """Settings read only when libgomp / OpenBLAS load, so they go in the environment before
    `import torch`: --omp-wait-policy (OMP_WAIT_POLICY) and --blas-core NAME (OPENBLAS_CORETYPE).
    --blas-core auto is handled after the import (it needs OpenBLAS's own answer): see
    _maybe_reexec_for_blas_core."""
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--omp-wait-policy", default="default")
    pre.add_argument("--blas-core", default="auto")
    known, _ = pre.parse_known_args(argv)
    if known.omp_wait_policy.lower() in ("active", "passive"):
        os.environ["OMP_WAIT_POLICY"] = known.omp_wait_policy.upper()
    if known.blas_core.lower() not in ("auto", "off"):
        os.environ["OPENBLAS_CORETYPE"] = known.blas_core


if __name__ == "__main__":
    _env_before_torch(sys.argv[1:])

import torch  # noqa: E402
from torch import nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

CLS_ID, SEP_ID = 101, 102


# ----------------------------------------------------------------------------------------------
# safetensors
# ----------------------------------------------------------------------------------------------
_ST_DTYPES = {
    "F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16, "F64": torch.float64,
    "I64": torch.int64, "I32": torch.int32, "I16": torch.int16, "I8": torch.int8, "U8": torch.uint8,
    "BOOL": torch.bool,
}


def read_safetensors(path):
    """{name: tensor}; uses the safetensors package when present, else parses the format."""
    try:
        from safetensors.torch import load_file  # type: ignore
        return load_file(path)
    except ImportError:
        pass
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n].decode("utf-8"))
    base = 8 + n
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dtype = _ST_DTYPES.get(info["dtype"])
        if dtype is None:
            raise ValueError(f"{path}: tensor {name}: unsupported dtype {info['dtype']}")
        begin, end = info["data_offsets"]
        raw = bytearray(data[base + begin:base + end])  # writable copy; the format is little-endian
        t = torch.frombuffer(raw, dtype=dtype) if end > begin else torch.empty(0, dtype=dtype)
        if sys.byteorder != "little" and t.element_size() > 1:
            t = t.view(torch.uint8).view(-1, t.element_size()).flip(1).contiguous().view(dtype).view(-1)
        out[name] = t.reshape(info["shape"]).clone()
    return out


# ----------------------------------------------------------------------------------------------
# Minimal BERT (Hugging Face BertModel structure and parameter names)
# ----------------------------------------------------------------------------------------------
class Config:
    def __init__(self, d):
        self.vocab_size = d.get("vocab_size", 30522)
        self.hidden_size = d.get("hidden_size", 768)
        self.num_hidden_layers = d.get("num_hidden_layers", 12)
        self.num_attention_heads = d.get("num_attention_heads", 12)
        self.intermediate_size = d.get("intermediate_size", 3072)
        self.hidden_act = d.get("hidden_act", "gelu")
        self.hidden_dropout_prob = d.get("hidden_dropout_prob", 0.1)
        self.attention_probs_dropout_prob = d.get("attention_probs_dropout_prob", 0.1)
        self.max_position_embeddings = d.get("max_position_embeddings", 512)
        self.type_vocab_size = d.get("type_vocab_size", 2)
        self.layer_norm_eps = d.get("layer_norm_eps", 1e-12)
        pet = d.get("position_embedding_type", "absolute")
        if pet != "absolute":
            raise ValueError(f"position_embedding_type {pet!r} is not supported (absolute only)")


def activation(name):
    if name == "gelu":
        return lambda x: F.gelu(x)  # erf form, as HF's "gelu"
    if name in ("gelu_new", "gelu_pytorch_tanh", "gelu_fast"):
        return lambda x: F.gelu(x, approximate="tanh")
    if name == "relu":
        return F.relu
    raise ValueError(f"hidden_act {name!r} is not supported")


class BertEmbeddings(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.word_embeddings = nn.Embedding(c.vocab_size, c.hidden_size, padding_idx=0)
        self.position_embeddings = nn.Embedding(c.max_position_embeddings, c.hidden_size)
        self.token_type_embeddings = nn.Embedding(c.type_vocab_size, c.hidden_size)
        self.LayerNorm = nn.LayerNorm(c.hidden_size, eps=c.layer_norm_eps)
        self.dropout = nn.Dropout(c.hidden_dropout_prob)

    def forward(self, input_ids, token_type_ids):
        seq = input_ids.shape[1]
        position_ids = torch.arange(seq, device=input_ids.device).unsqueeze(0)
        x = self.word_embeddings(input_ids) + self.token_type_embeddings(token_type_ids)
        x = x + self.position_embeddings(position_ids)
        return self.dropout(self.LayerNorm(x))


class BertSelfAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.heads = c.num_attention_heads
        self.head_size = c.hidden_size // c.num_attention_heads
        self.query = nn.Linear(c.hidden_size, c.hidden_size)
        self.key = nn.Linear(c.hidden_size, c.hidden_size)
        self.value = nn.Linear(c.hidden_size, c.hidden_size)
        self.dropout = nn.Dropout(c.attention_probs_dropout_prob)

    def split(self, x):
        b, l, _ = x.shape
        return x.view(b, l, self.heads, self.head_size).permute(0, 2, 1, 3)

    def forward(self, x, mask_bias):
        q, k, v = self.split(self.query(x)), self.split(self.key(x)), self.split(self.value(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_size) + mask_bias
        probs = self.dropout(F.softmax(scores, dim=-1))
        ctx = torch.matmul(probs, v).permute(0, 2, 1, 3).contiguous()
        return ctx.view(ctx.shape[0], ctx.shape[1], -1)


class BertSelfOutput(nn.Module):  # also BertOutput's structure
    def __init__(self, c, d_in):
        super().__init__()
        self.dense = nn.Linear(d_in, c.hidden_size)
        self.LayerNorm = nn.LayerNorm(c.hidden_size, eps=c.layer_norm_eps)
        self.dropout = nn.Dropout(c.hidden_dropout_prob)

    def forward(self, h, residual):
        return self.LayerNorm(self.dropout(self.dense(h)) + residual)


class BertAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.self = BertSelfAttention(c)
        self.output = BertSelfOutput(c, c.hidden_size)

    def forward(self, x, mask_bias):
        return self.output(self.self(x, mask_bias), x)


class BertIntermediate(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c.hidden_size, c.intermediate_size)
        self.act = activation(c.hidden_act)

    def forward(self, x):
        return self.act(self.dense(x))


class BertLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.attention = BertAttention(c)
        self.intermediate = BertIntermediate(c)
        self.output = BertSelfOutput(c, c.intermediate_size)

    def forward(self, x, mask_bias):
        a = self.attention(x, mask_bias)
        return self.output(self.intermediate(a), a)


class BertEncoder(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.layer = nn.ModuleList(BertLayer(c) for _ in range(c.num_hidden_layers))

    def forward(self, x, mask_bias):
        for layer in self.layer:
            x = layer(x, mask_bias)
        return x


class BertPooler(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c.hidden_size, c.hidden_size)

    def forward(self, x):
        return torch.tanh(self.dense(x[:, 0]))


class BertModel(nn.Module):
    """Returns the last hidden state. The pooler (present only if the checkpoint has one, as
    add_pooling_layer) is computed like HF does but unused by mean pooling (gets no gradient)."""

    def __init__(self, c, pooler=False):
        super().__init__()
        self.config = c
        self.embeddings = BertEmbeddings(c)
        self.encoder = BertEncoder(c)
        self.pooler = BertPooler(c) if pooler else None

    def forward(self, input_ids, attention_mask, token_type_ids=None):
        if token_type_ids is None:
            token_type_ids = torch.zeros_like(input_ids)
        x = self.embeddings(input_ids, token_type_ids)
        dtype = x.dtype
        mask_bias = (1.0 - attention_mask[:, None, None, :].to(dtype)) * torch.finfo(dtype).min
        x = self.encoder(x, mask_bias)
        if self.pooler is not None:
            self.pooler(x)
        return x


def mean_pool_normalize(hidden, mask):
    m = mask.unsqueeze(-1).to(hidden.dtype)
    pooled = (hidden * m).sum(1) / m.sum(1).clamp(min=1e-9)
    return F.normalize(pooled, p=2, dim=1)


def load_model(args):
    with open(os.path.join(args.model, "config.json")) as f:
        cfg = Config(json.load(f))
    st_path = os.path.join(args.model, "model.safetensors")
    if args.random:
        torch.manual_seed(args.seed)
        model = BertModel(cfg)
        for mod in model.modules():  # HF's _init_weights
            if isinstance(mod, (nn.Linear, nn.Embedding)):
                mod.weight.data.normal_(0.0, 0.02)
            if isinstance(mod, nn.Linear):
                mod.bias.data.zero_()
            if isinstance(mod, nn.LayerNorm):
                mod.weight.data.fill_(1.0)
                mod.bias.data.zero_()
        return model, "random"
    if not os.path.exists(st_path):
        sys.exit(f"{st_path} not found (pass --random for a randomly initialised model)")
    state = read_safetensors(st_path)
    prefixes = ("bert.", "model.", "0.auto_model.")
    fixed = {}
    for k, v in state.items():
        for p in prefixes:
            if k.startswith(p):
                k = k[len(p):]
                break
        if k.startswith(("embeddings.", "encoder.", "pooler.")):
            fixed[k] = v.to(torch.float32)
    model = BertModel(cfg, pooler="pooler.dense.weight" in fixed)
    fixed.pop("embeddings.position_ids", None)
    missing, unexpected = model.load_state_dict(fixed, strict=False)
    if missing or unexpected:
        sys.exit(f"weights do not match the model: missing {missing}, unexpected {unexpected}")
    return model, st_path


# ----------------------------------------------------------------------------------------------
# Embedding check against `sieve embed`
# ----------------------------------------------------------------------------------------------
def _openblas_libs():
    """ctypes handles of the OpenBLAS libraries loaded in this process (Debian's torch does its
    Linear/matmul products through the system BLAS, a separate library with its own threads)."""
    import ctypes
    try:
        with open("/proc/self/maps") as f:
            paths = sorted({ln.split()[-1] for ln in f if "blas" in ln.split()[-1]})
    except OSError:
        return []
    libs = []
    for path in paths:
        try:
            lib = ctypes.CDLL(path)
            lib.openblas_get_num_threads  # noqa: B018  (AttributeError if not OpenBLAS)
            libs.append(lib)
        except (OSError, AttributeError):
            continue
    return libs


def openblas_corename():
    import ctypes
    for lib in _openblas_libs():
        try:
            lib.openblas_get_corename.restype = ctypes.c_char_p
            return lib.openblas_get_corename().decode()
        except AttributeError:
            continue
    return None


def _cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            for ln in f:
                if ln.startswith("flags"):
                    return set(ln.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def _maybe_reexec_for_blas_core(mode):
    """As sieve does (src/model/threads.cpp): Debian 12's OpenBLAS 0.3.21 falls back to its
    generic "Prescott" kernels on CPUs it does not know (e.g. Sapphire Rapids), several times
    slower; the kernel table is chosen at load time, so re-execute with OPENBLAS_CORETYPE set."""
    if mode != "auto" or os.environ.get("OPENBLAS_CORETYPE") or openblas_corename() != "Prescott":
        return
    flags = _cpu_flags()
    core = ("SkylakeX" if {"avx512f", "avx512bw", "avx512vl", "avx512dq"} <= flags else
            "Haswell" if {"avx2", "fma"} <= flags else None)
    if core is None:
        return
    os.environ["OPENBLAS_CORETYPE"] = core
    sys.stdout.flush()
    os.execv(sys.executable, [sys.executable] + sys.argv)


def set_blas_threads(n):
    """torch.set_num_threads does not reach OpenBLAS's pool: set it too. Returns the BLAS thread
    count, or None when torch does not use OpenBLAS."""
    got = None
    for lib in _openblas_libs():
        lib.openblas_set_num_threads(int(n))
        got = lib.openblas_get_num_threads()
    return got


def default_sieve():
    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.join(os.path.dirname(here), "build", "sieve")


def run_check(args, model, device):
    if args.check_ids:
        ids = [int(t) for t in args.check_ids.split(",") if t.strip()]
    else:
        out = subprocess.run([args.sieve, "tokenize", "--model", args.model, args.check_text],
                             check=True, capture_output=True, text=True).stdout
        ids = json.loads(out.strip().splitlines()[0])["ids"]
    if args.check_reference:
        with open(args.check_reference) as f:
            ref_line = f.read()
    else:
        ref_line = subprocess.run([args.sieve, "embed", "--model", args.model, "--threads",
                                   str(args.threads), args.check_text],
                                  check=True, capture_output=True, text=True).stdout
    ref = torch.tensor(json.loads(ref_line.strip().splitlines()[0])["embedding"], dtype=torch.float64)
    pooling_cfg = os.path.join(args.model, "1_Pooling", "config.json")
    if os.path.exists(pooling_cfg):
        with open(pooling_cfg) as f:
            pc = json.load(f)
        if not pc.get("pooling_mode_mean_tokens", True):
            print(f"warning: {pooling_cfg} does not select mean pooling; sieve embed uses it, "
                  "this check uses mean pooling", file=sys.stderr)
    model.eval()
    with torch.no_grad():
        input_ids = torch.tensor([ids], device=device)
        mask = torch.ones_like(input_ids)
        emb = mean_pool_normalize(model(input_ids, mask), mask)[0].double().cpu()
    diff = (emb - ref).abs().max().item() if emb.shape == ref.shape else float("inf")
    ok = diff < args.check_tol
    result = {"check": "embedding", "text": args.check_text, "ids": ids, "dim": emb.numel(),
              "ref_dim": ref.numel(), "max_abs_diff": diff, "cosine": F.cosine_similarity(emb, ref, dim=0).item()
              if emb.shape == ref.shape else None, "tol": args.check_tol, "ok": ok}
    print(json.dumps(result) if args.json else
          f"embedding check: {len(ids)} ids, dim {emb.numel()}, max |diff| {diff:.3e} "
          f"(tol {args.check_tol:g}), cosine {result['cosine']}: {'OK' if ok else 'FAIL'}")
    return 0 if ok else 1


# ----------------------------------------------------------------------------------------------
# Benchmark
# ----------------------------------------------------------------------------------------------
def make_batch(gen, b, seq, vocab, device):
    lo = 1000 if vocab > 1000 else 103  # small test vocabularies: anything past the specials
    if vocab <= lo:
        raise SystemExit(f"vocab_size {vocab} is too small for random batches")
    ids = torch.randint(lo, vocab, (b, seq), generator=gen)
    ids[:, 0] = CLS_ID
    ids[:, -1] = SEP_ID
    return ids.to(device), torch.ones(b, seq, dtype=torch.long, device=device)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True, help="Hugging Face model directory (config.json, model.safetensors)")
    ap.add_argument("--random", action="store_true", help="random init instead of loading model.safetensors")
    ap.add_argument("--batch-size", type=int, default=32, help="anchor-positive pairs per step")
    ap.add_argument("--seq-len", type=int, default=64, help="tokens per text, [CLS] and [SEP] included")
    ap.add_argument("--steps", type=int, default=20, help="timed steps")
    ap.add_argument("--warmup-steps", type=int, default=3, help="untimed steps before timing")
    ap.add_argument("--threads", type=int, default=2,
                    help="torch.set_num_threads(N); also OpenBLAS's pool unless --blas-threads")
    ap.add_argument("--torch-threads", type=int,
                    help="override torch's (OpenMP) pool only, e.g. 1 with --threads 2 = sieve's split")
    ap.add_argument("--blas-threads", type=int, help="OpenBLAS pool size (default: --threads)")
    ap.add_argument("--blas-core", default="auto",
                    help="auto: re-exec with OPENBLAS_CORETYPE=SkylakeX/Haswell when OpenBLAS picked its "
                    "generic Prescott kernels (as sieve does); off: leave OpenBLAS alone; or a core name")
    ap.add_argument("--omp-wait-policy", default="default", choices=["default", "active", "passive"],
                    help="set OMP_WAIT_POLICY before torch loads (default: leave the environment alone)")
    ap.add_argument("--lr", type=float, default=2e-5)
    ap.add_argument("--weight-decay", type=float, default=0.01)
    ap.add_argument("--scale", type=float, default=10.0, help="MNRL similarity scale")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--device", default="cpu", help="cpu, cuda, cuda:N")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    ap.add_argument("--check-text", help="instead of benchmarking, compare the eval-mode embedding "
                    "of TEXT with `sieve embed` and exit (1 if max |diff| >= --check-tol)")
    ap.add_argument("--check-ids", help="comma-separated token ids of --check-text (default: sieve tokenize)")
    ap.add_argument("--check-reference", help="file with sieve embed's JSON line (default: run sieve embed)")
    ap.add_argument("--check-tol", type=float, default=1e-4)
    ap.add_argument("--sieve", default=default_sieve(), help="sieve binary for the check (default: %(default)s)")
    args = ap.parse_args()

    _maybe_reexec_for_blas_core(args.blas_core.lower())
    torch_threads = args.torch_threads if args.torch_threads else args.threads
    torch.set_num_threads(torch_threads)
    blas_threads = set_blas_threads(args.blas_threads if args.blas_threads else args.threads)
    device = torch.device(args.device)
    model, source = load_model(args)
    model.to(device)
    c = model.config

    if args.check_text is not None:
        sys.exit(run_check(args, model, device))

    if args.seq_len < 2 or args.seq_len > c.max_position_embeddings:
        sys.exit(f"--seq-len must be in [2, {c.max_position_embeddings}]")
    torch.manual_seed(args.seed)
    gen = torch.Generator().manual_seed(args.seed)
    b = args.batch_size
    a_ids, a_mask = make_batch(gen, b, args.seq_len, c.vocab_size, device)
    p_ids, p_mask = make_batch(gen, b, args.seq_len, c.vocab_size, device)
    labels = torch.arange(b, device=device)

    no_decay = ("bias", "LayerNorm.weight", "LayerNorm.bias")
    named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    groups = [
        {"params": [p for n, p in named if not any(nd in n for nd in no_decay)], "weight_decay": args.weight_decay},
        {"params": [p for n, p in named if any(nd in n for nd in no_decay)], "weight_decay": 0.0},
    ]
    opt = torch.optim.AdamW(groups, lr=args.lr)
    model.train()
    sync = (lambda: torch.cuda.synchronize(device)) if device.type == "cuda" else (lambda: None)

    def step():
        a = mean_pool_normalize(model(a_ids, a_mask), a_mask)
        p = mean_pool_normalize(model(p_ids, p_mask), p_mask)
        loss = F.cross_entropy(args.scale * (a @ p.t()), labels)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss

    losses, times = [], []
    for i in range(args.warmup_steps + args.steps):
        sync()
        t0 = time.perf_counter()
        loss = step()
        sync()
        dt = time.perf_counter() - t0
        losses.append(loss.item())
        if i >= args.warmup_steps:
            times.append(dt)

    total = sum(times)
    res = {
        "impl": "pytorch-eager", "torch": torch.__version__, "device": str(device), "threads": args.threads,
        "torch_threads": torch.get_num_threads(), "blas_threads": blas_threads,
        "openblas_core": openblas_corename(), "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY", "default"), "batch_size": b, "seq_len": args.seq_len, "steps": args.steps, "warmup_steps": args.warmup_steps,
        "samples_per_second": round(args.steps * b / total, 3) if total > 0 else None,
        "ms_per_step": round(1000 * total / len(times), 3) if times else None,
        "ms_per_step_p50": round(1000 * statistics.median(times), 3) if times else None,
        "seconds": round(total, 4), "loss_first": round(losses[0], 5) if losses else None,
        "loss_last": round(losses[-1], 5) if losses else None,
        "model": {"hidden": c.hidden_size, "layers": c.num_hidden_layers, "heads": c.num_attention_heads,
                  "ffn": c.intermediate_size, "vocab": c.vocab_size, "act": c.hidden_act,
                  "params": sum(p.numel() for p in model.parameters())},
        "weights": source, "lr": args.lr, "scale": args.scale, "seed": args.seed,
    }
    if args.json:
        print(json.dumps(res))
    else:
        m = res["model"]
        print(f"pytorch-eager train step (torch {res['torch']}, {device}, {args.threads} threads: "
              f"torch {res['torch_threads']}, OpenBLAS {blas_threads} ({res['openblas_core']})): "
              f"BERT hidden {m['hidden']} x {m['layers']} layers, {m['heads']} heads, ffn {m['ffn']}, "
              f"vocab {m['vocab']}; batch {b} pairs x {args.seq_len} tokens")
        print(f"  {res['samples_per_second']} samples/s, {res['ms_per_step']} ms/step mean, "
              f"{res['ms_per_step_p50']} ms/step p50 over {args.steps} steps "
              f"(loss {res['loss_first']} -> {res['loss_last']})")


if __name__ == "__main__":
    main()
