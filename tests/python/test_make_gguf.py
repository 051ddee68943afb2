"""`decodebench make-gguf` files read by the Python gguf package (the reader llama.cpp ships).

Run from the repository root: python3 tests/python/test_make_gguf.py (CTest does, label python).
DECODEBENCH_BIN names the built decodebench binary. Exit status 77 (CTest: skipped) when the
`gguf` package (or numpy) is not installed, or when DECODEBENCH_BIN is not set.

What is checked: gguf.GGUFReader opens every file; metadata keys, their GGUF value types and
values follow the shape (gguf-facts.md §3); tensor names, types and dims (ne0 first) are those
llama.cpp's loaders expect, including the Q4_K_M mix; tensor data starts aligned; and
gguf.quants.dequantize of tensors of every storage type equals, bit for bit, what decodebench's
own CPU dequantizer gives (`decodebench inspect FILE --dump NAME --dump-out PATH`).
"""
import os
import pathlib
import subprocess
import sys
import tempfile
import unittest

try:
    import gguf
    import numpy as np
except ImportError as e:  # reported by the __main__ block below
    gguf = None
    IMPORT_ERROR = e

# A tiny shape whose rows are whole blocks of 256 (every --dtype fits): qwen2.5-7b has Q/K/V
# biases (written as qwen2), smollm2-135m has none and tied embeddings (written as llama).
SHAPE = ["--layers", "3", "--hidden", "256", "--heads", "4", "--kv-heads", "2", "--ffn", "512",
         "--vocab", "300", "--context", "512"]
PER_LAYER = ["attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "ffn_norm", "ffn_gate",
             "ffn_up", "ffn_down"]
T = None  # gguf.GGMLQuantizationType, set in main


def binary() -> str:
    return os.environ.get("DECODEBENCH_BIN", "")


def decodebench(*args) -> subprocess.CompletedProcess:
    proc = subprocess.run([binary(), *map(str, args)], capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        raise AssertionError(f"decodebench {' '.join(map(str, args))} exited {proc.returncode}:\n"
                             f"{proc.stdout}{proc.stderr}")
    return proc


def field(reader, key):
    """(value types, contents) of a metadata key; AssertionError when it is missing."""
    f = reader.fields.get(key)
    if f is None:
        raise AssertionError(f"metadata key {key} is missing")
    return [t.name for t in f.types], f.contents()


class MakeGguf(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory()
        self.tmp = pathlib.Path(self._tmp.name)

    def tearDown(self):
        self._tmp.cleanup()

    def make(self, preset: str, dtype: str, name: str, *extra) -> pathlib.Path:
        out = self.tmp / name
        decodebench("make-gguf", "--preset", preset, *SHAPE, "--dtype", dtype, "--seed", "5",
                    "--out", out, "-q", *extra)
        return out

    def ours(self, path: pathlib.Path, tensor: str) -> "np.ndarray":
        """decodebench's dequantization of `tensor`, as raw f32."""
        dump = self.tmp / (tensor + ".f32")
        decodebench("inspect", path, "--dump", tensor, "--dump-out", dump)
        return np.fromfile(dump, dtype="<f4")

    def test_metadata_names_types_and_shapes_qwen2_q4_k_m(self):
        path = self.make("qwen2.5-7b", "q4_k_m", "q.gguf")
        r = gguf.GGUFReader(path)
        self.assertEqual(field(r, "GGUF.version")[1], 3)
        self.assertEqual(field(r, "general.architecture"), (["STRING"], "qwen2"))
        self.assertEqual(field(r, "general.file_type"), (["UINT32"], 15))  # MOSTLY_Q4_K_M
        self.assertEqual(field(r, "general.quantization_version"), (["UINT32"], 2))
        expect_u32 = {"block_count": 3, "embedding_length": 256, "feed_forward_length": 512,
                      "attention.head_count": 4, "attention.head_count_kv": 2,
                      "context_length": 512, "rope.dimension_count": 64, "vocab_size": 300}
        for key, value in expect_u32.items():
            self.assertEqual(field(r, f"qwen2.{key}"), (["UINT32"], value), key)
        self.assertEqual(field(r, "qwen2.rope.freq_base"), (["FLOAT32"], 1e6))
        types, eps = field(r, "qwen2.attention.layer_norm_rms_epsilon")
        self.assertEqual(types, ["FLOAT32"])
        self.assertEqual(np.float32(eps), np.float32(1e-6))
        self.assertNotIn("qwen2.attention.key_length", r.fields, "head_dim = hidden/heads")
        # Filler tokenizer: one entry per embedding row, the last one the control token EOS.
        self.assertEqual(field(r, "tokenizer.ggml.model"), (["STRING"], "gpt2"))
        tokens = field(r, "tokenizer.ggml.tokens")[1]
        self.assertEqual(len(tokens), 300)
        self.assertEqual(len(set(tokens)), 300, "duplicate token strings")
        self.assertEqual(tokens[ord("A")], "A")
        self.assertEqual(tokens[ord(" ")], "\u0120")
        self.assertEqual(tokens[-1], "<|endoftext|>")
        token_types = field(r, "tokenizer.ggml.token_type")[1]
        self.assertEqual(token_types[-1], 3)
        self.assertEqual(set(token_types[:-1]), {1})
        self.assertEqual(field(r, "tokenizer.ggml.merges")[1], [])
        self.assertEqual(field(r, "tokenizer.ggml.eos_token_id"), (["UINT32"], 299))
        self.assertEqual(field(r, "tokenizer.ggml.bos_token_id"), (["UINT32"], 299))

        tensors = {t.name: t for t in r.tensors}
        names = ["token_embd.weight", "output_norm.weight", "output.weight"]
        for layer in range(3):
            names += [f"blk.{layer}.{n}.weight" for n in PER_LAYER]
            names += [f"blk.{layer}.attn_{n}.bias" for n in "qkv"]
        self.assertEqual(sorted(tensors), sorted(names))
        # Q4_K_M with 3 layers: attn_v and ffn_down are Q6_K in layer 2 (the last eighth).
        q6 = {"output.weight", "blk.2.attn_v.weight", "blk.2.ffn_down.weight"}
        for name, t in tensors.items():
            if name.endswith("norm.weight") or name.endswith(".bias"):
                want = T.F32
            else:
                want = T.Q6_K if name in q6 else T.Q4_K
            self.assertEqual(t.tensor_type, want, name)
        rows = {"attn_q": 256, "attn_k": 128, "attn_v": 128, "attn_output": 256, "ffn_gate": 512,
                "ffn_up": 512, "ffn_down": 256}
        cols = {"attn_output": 256, "ffn_down": 512}
        for name, t in tensors.items():
            kind = name.split(".")[-2]
            if name.endswith(".bias"):
                want = [rows[kind]]
            elif kind in ("attn_norm", "ffn_norm", "output_norm"):
                want = [256]
            elif kind in ("token_embd", "output"):
                want = [256, 300]
            else:
                want = [cols.get(kind, 256), rows[kind]]
            self.assertEqual(list(t.shape), want, name)
            self.assertEqual(t.data_offset % 32, 0, name)

    def test_llama_file_without_biases_and_tied(self):
        path = self.make("smollm2-135m", "q8_0", "l.gguf")
        r = gguf.GGUFReader(path)
        self.assertEqual(field(r, "general.architecture")[1], "llama")
        self.assertEqual(field(r, "llama.block_count")[1], 3)
        self.assertEqual(field(r, "general.file_type")[1], 7)  # MOSTLY_Q8_0
        names = {t.name for t in r.tensors}
        self.assertNotIn("output.weight", names, "tied embeddings: no LM head tensor")
        self.assertFalse(any(n.endswith(".bias") for n in names))
        self.assertEqual({t.tensor_type for t in r.tensors}, {T.F32, T.Q8_0})

    def test_dequantize_equals_ours_for_every_type(self):
        cases = [("f32", T.F32), ("f16", T.F16), ("bf16", T.BF16), ("q8_0", T.Q8_0),
                 ("q4_0", T.Q4_0), ("q4_1", T.Q4_1), ("q5_0", T.Q5_0), ("q5_1", T.Q5_1),
                 ("q4_k", T.Q4_K), ("q5_k", T.Q5_K), ("q6_k", T.Q6_K)]
        for dtype, qtype in cases:
            with self.subTest(dtype=dtype):
                path = self.make("smollm2-135m", dtype, f"{dtype}.gguf", "--layers", "1")
                r = gguf.GGUFReader(path)
                tensors = {t.name: t for t in r.tensors}
                for name in ("blk.0.attn_q.weight", "blk.0.ffn_down.weight", "token_embd.weight",
                             "blk.0.attn_norm.weight"):
                    t = tensors[name]
                    self.assertEqual(t.tensor_type, T.F32 if "norm" in name else qtype, name)
                    theirs = gguf.quants.dequantize(t.data, t.tensor_type).astype("<f4").ravel()
                    mine = self.ours(path, name)
                    self.assertEqual(mine.size, int(t.n_elements), name)
                    self.assertEqual(mine.size, theirs.size, name)
                    self.assertTrue(np.array_equal(mine, theirs),
                                    f"{dtype} {name}: max |diff| {np.max(np.abs(mine - theirs))}")

    def test_dequantize_equals_ours_in_the_q4_k_m_mix(self):
        path = self.make("qwen2.5-7b", "q4_k_m", "mix.gguf")
        r = gguf.GGUFReader(path)
        tensors = {t.name: t for t in r.tensors}
        for name, qtype in (("blk.2.attn_v.weight", T.Q6_K), ("blk.1.attn_v.weight", T.Q4_K),
                            ("output.weight", T.Q6_K), ("blk.0.attn_q.bias", T.F32)):
            t = tensors[name]
            self.assertEqual(t.tensor_type, qtype, name)
            theirs = gguf.quants.dequantize(t.data, t.tensor_type).astype("<f4").ravel()
            self.assertTrue(np.array_equal(self.ours(path, name), theirs), name)
        # The synthetic weights are uniform in (-s, s) with s = sqrt(3 / fan_in) for projections;
        # the LM head's 4·sqrt(3 / hidden). A sanity check that the file holds those values.
        lm_head = gguf.quants.dequantize(tensors["output.weight"].data, T.Q6_K)
        bound = 4 * (3 / 256) ** 0.5
        self.assertLessEqual(float(np.max(np.abs(lm_head))), bound * 1.01)
        self.assertGreater(float(np.std(lm_head)), bound / 3 ** 0.5 * 0.9)


if __name__ == "__main__":
    if gguf is None:
        print(f"SKIP: the gguf package is not importable ({IMPORT_ERROR}); "
              "run scripts/setup or pip install gguf numpy", file=sys.stderr)
        sys.exit(77)
    if not binary() or not pathlib.Path(binary()).is_file():
        print("SKIP: DECODEBENCH_BIN does not name the built decodebench binary", file=sys.stderr)
        sys.exit(77)
    T = gguf.GGMLQuantizationType
    unittest.main()
