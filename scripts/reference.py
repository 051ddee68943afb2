#!/usr/bin/env python3
"""Independent NumPy reference forward pass for llama / qwen2 / qwen3 GGUF models.

Purpose
    The trustworthy side of decodebench's real-model tests: it computes the logits of a token
    sequence with a plain, unoptimised transformer written from the GGUF facts sheet
    (../shared/docs/gguf-facts.md), not from decodebench's C++. The `gguf` package is used only to
    read the file (`gguf.GGUFReader`) and to dequantise tensors (`gguf.quants.dequantize`).

Numerics
    Weights are dequantised once per process (ggml's formulas evaluate in float32, and those f32
    values *are* the model's weights) and kept in memory as float64 (about 1.1 GB for a 135M
    model). Every activation, matmul, norm, RoPE
    angle, softmax and logit is computed in float64; logits are rounded to float32 only on output.

Formulas (facts sheet section in brackets)
    x = E[token]                                                  token_embd rows [4]
    per layer:
      h = RMSNorm(x) * attn_norm, RMSNorm(v) = v / sqrt(mean(v^2) + eps)    [6]
      q, k, v = Wq h (+bq), Wk h (+bk), Wv h (+bv)                 biases: qwen2 [6.9]
      qwen3: q, k RMS-normalised per head with attn_q_norm / attn_k_norm, before RoPE [6.8]
      RoPE on the first n_rot values of each head, angle_i = p * base^(-2i/n_rot) / ff_i * scale,
        (a, b) -> (a cos - b sin, a sin + b cos); pairs (2i, 2i+1) for llama (GGUF q/k rows are
        permuted to Meta order), (i, i + n_rot/2) for qwen2/qwen3 [5]; ff_i = rope_freqs if present
      causal softmax(q k^T / sqrt(dk)) v; query head h reads KV head h // (Hq / Hkv) [6.4, 6.10]
      x += Wo attn
      h = RMSNorm(x) * ffn_norm;  x += W_down(silu(W_gate h) * W_up h) [6.3]
    logits = W_out (RMSNorm(x) * output_norm) (+ output.bias); W_out = token_embd if output.weight
    is absent (tied) [4]

Usage
    scripts/reference.py MODEL.gguf --tokens 1,2,3 [--positions N] [--top 5] [--greedy K]
                         [--json OUT]

    Runs the whole token list as one causal batch and prints, for each of the first N positions
    (default: all, at most 8), the top-k logits. --greedy K then continues greedily for K tokens
    (argmax, lowest id on ties, no stop on end-of-turn) and prints the ids and their text.
    --json OUT writes {"tokens", "positions", "logits" (float32, one row of vocab values per
    position, first N positions), "argmax" (every prompt position), "greedy" (when asked),
    "compute": "float64", "architecture", "model"}. One position's logits take about 0.5 MB of JSON
    for a 49152-token vocabulary, hence the default cap of 8.

Exit status: 0 success; 2 bad arguments, missing file, unsupported architecture / tensor type /
RoPE scaling; 77 numpy or gguf not installed (the test suite reads 77 as "skipped").
"""
import argparse
import json
import math
import os
import sys
import time

# One BLAS thread: the products here are matrix-vector sized, and a multi-threaded OpenBLAS that
# spin-waits on an oversubscribed machine (tests run next to builds) was measured 4x slower.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

try:
    import numpy as np
    import gguf
except ImportError as e:  # pragma: no cover - depends on the environment
    print(f"reference.py: {e}; install them with `pip install numpy gguf`", file=sys.stderr)
    sys.exit(77)
if not hasattr(gguf.ReaderField, "contents"):
    print("reference.py: the installed gguf package is too old (no ReaderField.contents); "
          "`pip install -U gguf`", file=sys.stderr)
    sys.exit(77)

SUPPORTED_ARCHS = ("llama", "qwen2", "qwen3")
DEFAULT_MAX_POSITIONS = 8


_REQUIRED = object()  # marks a metadata key without a default


class InputError(Exception):
    """A problem with the input (file, architecture, arguments): reported with exit status 2."""


class GgufModel:
    """Hyperparameters and lazily dequantised float64 weights of one GGUF file."""

    def __init__(self, path):
        if not os.path.isfile(path):
            raise InputError(f"model file not found: {path}")
        try:
            reader = gguf.GGUFReader(path)
        except Exception as e:  # malformed files raise assorted errors inside gguf
            raise InputError(f"{path}: not a readable GGUF file ({e})") from e
        self.path = path
        self._fields = reader.fields
        self._tensors = {t.name: t for t in reader.tensors}
        self._weights = {}

        self.arch = self._get("general.architecture")
        if self.arch not in SUPPORTED_ARCHS:
            raise InputError(f"{path}: unsupported architecture '{self.arch}' "
                             f"(supported: {', '.join(SUPPORTED_ARCHS)})")
        a = self.arch + "."
        self.n_layers = int(self._get(a + "block_count"))
        self.hidden = int(self._get(a + "embedding_length"))
        self.n_heads = self._uniform(a + "attention.head_count")
        self.n_kv_heads = self._uniform(a + "attention.head_count_kv", self.n_heads)
        self.head_dim = int(self._get(a + "attention.key_length", self.hidden // self.n_heads))
        self.n_rot = int(self._get(a + "rope.dimension_count", self.head_dim))
        self.rope_base = float(self._get(a + "rope.freq_base", 10000.0))
        self.eps = float(self._get(a + "attention.layer_norm_rms_epsilon"))
        self.half_split = self.arch in ("qwen2", "qwen3")  # facts §5: llama is adjacent-pair
        self.qk_norm = self.arch == "qwen3"

        # Linear scaling only (facts §3): freq_scale = 1/factor, factor absent or 0 meaning 1;
        # the type defaults to linear, "none" switches it off; YaRN / LongRoPE are refused.
        scaling = self._get(a + "rope.scaling.type", "linear")
        legacy = self._get(a + "rope.scale_linear", 0.0)
        factor = float(self._get(a + "rope.scaling.factor", legacy))
        if scaling not in ("none", "linear"):
            raise InputError(f"{path}: RoPE scaling '{scaling}' is not supported")
        self.freq_scale = 1.0 if scaling == "none" or factor == 0.0 else 1.0 / factor

        if "token_embd.weight" not in self._tensors:
            raise InputError(f"{path}: missing tensor 'token_embd.weight'")
        self.vocab = int(self._tensors["token_embd.weight"].shape[1])
        self.tied = "output.weight" not in self._tensors
        self.tokens = self._get("tokenizer.ggml.tokens", None)
        self.token_types = self._get("tokenizer.ggml.token_type", None)

        inv = self.rope_base ** (-2.0 * np.arange(self.n_rot // 2, dtype=np.float64) / self.n_rot)
        if "rope_freqs.weight" in self._tensors:
            inv = inv / self.weight("rope_freqs.weight")
        self.inv_freq = inv * self.freq_scale

    def _get(self, key, default=_REQUIRED):
        """Metadata value of `key`; `default` when absent, an error when no default is given."""
        field = self._fields.get(key)
        if field is None:
            if default is _REQUIRED:
                raise InputError(f"{self.path}: missing metadata key '{key}'")
            return default
        return field.contents()

    def _uniform(self, key, default=_REQUIRED):
        """A count that may be written per layer; the reference needs it uniform."""
        value = self._get(key, default)
        if isinstance(value, list):
            if len(set(value)) != 1:
                raise InputError(f"{self.path}: '{key}' varies per layer: not supported")
            value = value[0]
        return int(value)

    def weight(self, name):
        """Dequantised tensor as float64 in NumPy order (a GGUF {cols, rows} matrix is
        (rows, cols): row r = output feature r). Cached, so each tensor is decoded once."""
        w = self._weights.get(name)
        if w is None:
            t = self._tensors.get(name)
            if t is None:
                raise InputError(f"{self.path}: missing tensor '{name}'")
            try:
                # A plain ndarray view of the memmap: slicing np.memmap objects dominated the time.
                w = gguf.quants.dequantize(np.asarray(t.data), t.tensor_type)
            except NotImplementedError as e:
                raise InputError(f"{self.path}: cannot dequantise {name} "
                                 f"({t.tensor_type.name}): {e}") from e
            shape = tuple(int(d) for d in reversed(t.shape))
            w = np.asarray(w, dtype=np.float64).reshape(shape)
            self._weights[name] = w
        return w

    def optional(self, name):
        return self.weight(name) if name in self._tensors else None

    def decode(self, ids):
        """Byte-level (GPT-2) or SentencePiece decoding of ids to text, for display only
        (facts §7); control tokens are not rendered."""
        if not self.tokens:
            return ""
        model = self._get("tokenizer.ggml.model", "")
        out = bytearray()
        for i in ids:
            if self.token_types is not None and self.token_types[i] == 3:  # control
                continue
            piece = self.tokens[i]
            if model == "gpt2":
                out += bytes(_byte_decoder().get(ch, 0x3F) for ch in piece)
            elif piece.startswith("<0x") and piece.endswith(">") and len(piece) == 6:
                out.append(int(piece[3:5], 16))
            else:
                out += piece.replace("\u2581", " ").encode("utf-8")
        return out.decode("utf-8", errors="replace")


_BYTE_DECODER = None


def _byte_decoder():
    """Code point → byte of GPT-2 byte-level BPE: printable bytes map to themselves, the other 68
    bytes in increasing order to U+0100, U+0101, ... (facts §7)."""
    global _BYTE_DECODER
    if _BYTE_DECODER is None:
        kept = (set(range(0x21, 0x7F)) | set(range(0xA1, 0xAD)) | set(range(0xAE, 0x100)))
        table, extra = {}, 0
        for b in range(256):
            if b in kept:
                table[chr(b)] = b
            else:
                table[chr(0x100 + extra)] = b
                extra += 1
        _BYTE_DECODER = table
    return _BYTE_DECODER


def rms_norm(x, w, eps):
    """RMSNorm over the last axis, eps inside the root (facts §6)."""
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def apply_rope(x, positions, m):
    """A copy of x (T, heads, head_dim) rotated for the T positions (facts §5); values past n_rot
    stay as they are."""
    half = m.n_rot // 2
    angle = positions.astype(np.float64)[:, None] * m.inv_freq[None, :]  # (T, half)
    cos = np.cos(angle)[:, None, :]
    sin = np.sin(angle)[:, None, :]
    out = x.copy()
    if m.half_split:
        a, b = x[..., :half], x[..., half:m.n_rot]
        out[..., :half] = a * cos - b * sin
        out[..., half:m.n_rot] = a * sin + b * cos
    else:
        a, b = x[..., 0:m.n_rot:2], x[..., 1:m.n_rot:2]
        out[..., 0:m.n_rot:2] = a * cos - b * sin
        out[..., 1:m.n_rot:2] = a * sin + b * cos
    return out


class Session:
    """A token sequence being extended: the model plus its per-layer K/V history."""

    def __init__(self, model):
        self.m = model
        self.k = [None] * model.n_layers  # (positions, Hkv, dk) per layer
        self.v = [None] * model.n_layers
        self.n = 0

    def forward(self, tokens):
        """Appends `tokens` (positions n, n+1, ...) and returns their logits, shape (T, vocab)."""
        m = self.m
        tokens = np.asarray(tokens, dtype=np.int64)
        if tokens.min() < 0 or tokens.max() >= m.vocab:
            raise InputError(f"token ids must be in [0, {m.vocab})")
        t_new = len(tokens)
        positions = np.arange(self.n, self.n + t_new)
        hq, hkv, dk = m.n_heads, m.n_kv_heads, m.head_dim
        group = hq // hkv

        x = m.weight("token_embd.weight")[tokens]  # (T, D)
        for layer in range(m.n_layers):
            p = f"blk.{layer}."
            h = rms_norm(x, m.weight(p + "attn_norm.weight"), m.eps)
            q = h @ m.weight(p + "attn_q.weight").T
            k = h @ m.weight(p + "attn_k.weight").T
            v = h @ m.weight(p + "attn_v.weight").T
            # qwen2 (and the odd llama) add biases after the projections, before RoPE.
            bq, bk, bv = (m.optional(p + f"attn_{n}.bias") for n in "qkv")
            q = q if bq is None else q + bq
            k = k if bk is None else k + bk
            v = v if bv is None else v + bv
            q = q.reshape(t_new, hq, dk)
            k = k.reshape(t_new, hkv, dk)
            v = v.reshape(t_new, hkv, dk)
            if m.qk_norm:
                q = rms_norm(q, m.weight(p + "attn_q_norm.weight"), m.eps)
                k = rms_norm(k, m.weight(p + "attn_k_norm.weight"), m.eps)
            q = apply_rope(q, positions, m)
            k = apply_rope(k, positions, m)
            self.k[layer] = k if self.k[layer] is None else np.concatenate([self.k[layer], k])
            self.v[layer] = v if self.v[layer] is None else np.concatenate([self.v[layer], v])
            keys = np.repeat(self.k[layer], group, axis=1)  # (S, Hq, dk): head h ← KV h // group
            vals = np.repeat(self.v[layer], group, axis=1)
            scores = np.einsum("thd,shd->hts", q, keys) / math.sqrt(dk)
            key_pos = np.arange(self.n + t_new)
            scores[:, key_pos[None, :] > positions[:, None]] = -np.inf  # causal mask
            scores = scores - scores.max(axis=-1, keepdims=True)
            probs = np.exp(scores)
            probs /= probs.sum(axis=-1, keepdims=True)
            attn = np.einsum("hts,shd->thd", probs, vals).reshape(t_new, hq * dk)
            x = x + attn @ m.weight(p + "attn_output.weight").T

            h = rms_norm(x, m.weight(p + "ffn_norm.weight"), m.eps)
            gate = h @ m.weight(p + "ffn_gate.weight").T
            up = h @ m.weight(p + "ffn_up.weight").T
            x = x + (gate / (1.0 + np.exp(-gate)) * up) @ m.weight(p + "ffn_down.weight").T

        x = rms_norm(x, m.weight("output_norm.weight"), m.eps)
        head = m.weight("token_embd.weight" if m.tied else "output.weight")
        logits = x @ head.T
        bias = m.optional("output.bias")
        if bias is not None:
            logits = logits + bias
        self.n += t_new
        return logits


def parse_tokens(text):
    try:
        ids = [int(s) for s in text.replace(" ", ",").split(",") if s]
    except ValueError as e:
        raise InputError(f"--tokens must be comma-separated integers: {e}") from e
    if not ids:
        raise InputError("--tokens is empty")
    return ids


def format_row(row):
    """A float32 row as a JSON array with the shortest text that round-trips each float32."""
    return "[" + ",".join(str(v) for v in row.astype(np.float32)) + "]"


def run(args):
    started = time.perf_counter()
    tokens = parse_tokens(args.tokens)
    n_show = args.positions if args.positions is not None else min(len(tokens),
                                                                    DEFAULT_MAX_POSITIONS)
    if not 1 <= n_show <= len(tokens):
        raise InputError(f"--positions must be in [1, {len(tokens)}]")
    if args.greedy < 0:
        raise InputError("--greedy must be >= 0")

    model = GgufModel(args.model)
    session = Session(model)
    logits = session.forward(tokens)
    if not np.all(np.isfinite(logits)):
        raise InputError("the forward pass produced non-finite logits (corrupt weights?)")
    argmax = [int(i) for i in np.argmax(logits, axis=-1)]
    for pos in range(n_show):
        row = logits[pos]
        top = np.argsort(-row, kind="stable")[:args.top]
        shown = "  ".join(f"{int(i)}:{row[i]:.4f}" for i in top)
        print(f"pos {pos} token {tokens[pos]}: {shown}")

    greedy = []
    if args.greedy:
        nxt = argmax[-1]
        for _ in range(args.greedy):
            greedy.append(nxt)
            nxt = int(np.argmax(session.forward([nxt])[-1]))
        print("greedy:", " ".join(str(i) for i in greedy))
        print("text:", repr(model.decode(greedy)))
    print(f"reference: {model.arch}, {len(tokens)} prompt + {len(greedy)} greedy tokens, float64, "
          f"{time.perf_counter() - started:.1f} s", file=sys.stderr)

    if args.json:
        head = {"model": os.path.abspath(args.model), "architecture": model.arch,
                "compute": "float64", "tokens": tokens, "positions": n_show, "argmax": argmax}
        if args.greedy:
            head["greedy"] = greedy
        text = json.dumps(head)[:-1]
        rows = ",".join(format_row(logits[pos]) for pos in range(n_show))
        text += ', "logits": [' + rows + "]}\n"
        with open(args.json, "w", encoding="utf-8") as f:
            f.write(text)
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(
        description="NumPy float64 reference forward pass of a llama/qwen2/qwen3 GGUF model.")
    parser.add_argument("model", help="path of the .gguf file")
    parser.add_argument("--tokens", required=True, help="comma-separated token ids")
    parser.add_argument("--positions", type=int,
                        help=f"positions whose logits are printed/stored (default: all, at most "
                             f"{DEFAULT_MAX_POSITIONS})")
    parser.add_argument("--top", type=int, default=5, help="top-k logits printed per position")
    parser.add_argument("--greedy", type=int, default=0, help="greedy continuation length")
    parser.add_argument("--json", help="write tokens, logits and argmax to this JSON file")
    args = parser.parse_args(argv)
    try:
        return run(args)
    except InputError as e:
        print(f"reference.py: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
