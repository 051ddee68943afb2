#!/usr/bin/env python3
"""Instruction mix of a kernel's dot-product blocks, read from its SASS (no GPU needed).

A session without a GPU can still count what a kernel change does to the instructions per weight:
this splits one kernel's SASS into basic blocks (at branches and branch targets) and prints every
block that holds dot-product instructions (IDP dp4a, HFMA2, FFMA), with its instruction count and
the most frequent opcodes. Counts are static: a block's instructions, not how often it runs.

    python3 docs/probes/sass_blocks.py build/cuda/cuda/CMakeFiles/decodebench_cuda.dir/kernels/gemv_stream.cu.o \
        --kernel 'gemv_ring_kernelILNS_10WeightTypeE2ELb1ELi8ELi8E'
    python3 docs/probes/sass_blocks.py FILE --list          # the kernels in FILE

FILE is an object or cubin (read with cuobjdump -sass; CUDA's toolkit has it, and so does PyPI's
nvidia-cuda-cuobjdump wheel: `pip download --no-deps nvidia-cuda-cuobjdump`, unzip, and pass
--cuobjdump PATH or put it on PATH) or a text file cuobjdump already wrote.
"""

import argparse
import collections
import re
import shutil
import subprocess
import sys

DOT_OPS = ("IDP", "HFMA2", "FFMA", "HMMA", "IMMA")


def read_sass(path, cuobjdump):
    """The SASS text of `path`: an object/cubin run through cuobjdump, or text as is."""
    with open(path, "rb") as f:
        head = f.read(4)
    if head != b"\x7fELF":
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    tool = cuobjdump or shutil.which("cuobjdump")
    if tool is None:
        sys.exit("sass_blocks: no cuobjdump (pass --cuobjdump PATH; see the docstring)")
    done = subprocess.run([tool, "-sass", path], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"sass_blocks: {tool} -sass {path} failed: {done.stderr.strip()}")
    return done.stdout


def kernels(sass):
    """{mangled name: its SASS text}."""
    out = {}
    for part in re.split(r"\n\s+Function : ", sass)[1:]:
        name = part.split("\n", 1)[0].strip()
        out[name] = part
    return out


def basic_blocks(text):
    """Lists of instructions (predicates kept), split at branch targets and after branches."""
    lines = re.findall(r"/\*([0-9a-f]{4,})\*/\s+([^;]*);", text)
    targets = set()
    for _, ins in lines:
        m = re.search(r"\bBRA(?:\.\S+)? (0x[0-9a-f]+)", ins)
        if m:
            targets.add(int(m.group(1), 16))
    blocks, cur = [], []
    for addr, ins in lines:
        if int(addr, 16) in targets and cur:
            blocks.append(cur)
            cur = []
        cur.append(ins.strip())
        if re.search(r"\b(BRA|EXIT|RET)\b", ins):
            blocks.append(cur)
            cur = []
    if cur:
        blocks.append(cur)
    return blocks


def opcode(ins):
    """The opcode without predicate and modifiers: '@!P0 IDP.4A.S8.S8 R1, ...' -> 'IDP'."""
    ins = re.sub(r"^@!?U?P\w+\s+", "", ins)
    return ins.split()[0].split(".")[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("file", help="object, cubin or cuobjdump -sass text")
    ap.add_argument("--kernel", help="a substring of the mangled kernel name (one match)")
    ap.add_argument("--list", action="store_true", help="list the kernels and exit")
    ap.add_argument("--cuobjdump", help="path of cuobjdump")
    ap.add_argument("--top", type=int, default=12, help="opcodes shown per block (default 12)")
    args = ap.parse_args()
    ks = kernels(read_sass(args.file, args.cuobjdump))
    if not ks:
        sys.exit(f"sass_blocks: no kernel found in {args.file}")
    if args.list or not args.kernel:
        for name in ks:
            print(name)
        return
    found = [n for n in ks if args.kernel in n]
    if len(found) != 1:
        listed = "" if not found else ":\n  " + "\n  ".join(found[:20])
        sys.exit(f"sass_blocks: '{args.kernel}' matches {len(found)} kernels{listed}")
    name = found[0]
    print(name)
    for i, block in enumerate(basic_blocks(ks[name])):
        ops = collections.Counter(opcode(x) for x in block)
        # HFMA2 -RZ, RZ, ... is the compiler's way of moving a constant, not arithmetic.
        moves = sum(1 for x in block if opcode(x) == "HFMA2" and "-RZ, RZ" in x)
        dots = {k: ops[k] - (moves if k == "HFMA2" else 0) for k in DOT_OPS}
        dots = {k: v for k, v in dots.items() if v}
        if not dots:
            continue
        mix = ", ".join(f"{k} {v}" for k, v in ops.most_common(args.top))
        print(f"block {i}: {len(block)} instructions, dot {dots} | {mix}")


if __name__ == "__main__":
    main()
