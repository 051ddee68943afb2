#!/usr/bin/env bash
# Packs what ring-ab.sh needs on the GPU host into FOLDER (default .devbin, which git ignores), so
# one `run` of the device tool can carry it (about 38 MB): the gzipped decodebench, test_gemv,
# test_backend, test_attention and test_argmax of BUILD (default build/cuda, built for sm_90), the
# backend tests' GGUF fixtures (the GPU host has no gguf package), the cluster_pdl probe, ring-ab.sh
# itself and unpack.sh. On the GPU host:
#   bash FOLDER/unpack.sh /tmp/b && OUT=$OUT bash FOLDER/ring-ab.sh /tmp/b split|rows4|q6k
# With TRACE_BUILD, a build of docs/probes/kernel-timeline.patch (README.md there), its decodebench
# goes in too (about 10 MB more: 48 MB in all), as decodebench-trace; kernel_timeline.py and
# sm_balance.py, which read its files, always go in: ring-ab.sh timeline and spread run them.
# Usage: bash docs/probes/bundle.sh [BUILD] [FOLDER] [TRACE_BUILD]
set -euo pipefail
build=${1:-build/cuda}
dir=${2:-.devbin}
trace=${3:-}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
mkdir -p "$dir/fx"
for pair in app/decodebench:decodebench tests/decodebench.test.cuda.gemv:test_gemv \
  tests/decodebench.test.cuda.backend:test_backend \
  tests/decodebench.test.cuda.attention:test_attention \
  tests/decodebench.test.cuda.argmax:test_argmax; do
  src="$build/${pair%%:*}"
  [ -x "$src" ] || { echo "bundle.sh: $src is missing: build it first (ninja -C $build)" >&2; exit 1; }
  gzip -9 -c "$src" > "$dir/${pair##*:}.gz"
done
for arch in llama qwen2 qwen3; do
  python3 "$root/tests/fixtures/write_arch_gguf.py" --arch "$arch" "$dir/fx/$arch.gguf" > /dev/null
done
cp "$here/ring-ab.sh" "$here/kernel_timeline.py" "$here/sm_balance.py" "$dir/"
rm -f "$dir/decodebench-trace.gz"
if [ -n "$trace" ]; then
  [ -x "$trace/app/decodebench" ] ||
    { echo "bundle.sh: $trace/app/decodebench is missing: build the probe first" >&2; exit 1; }
  gzip -9 -c "$trace/app/decodebench" > "$dir/decodebench-trace.gz"
fi
# The cluster-under-PDL probe (round 31), when nvcc is here: ring-ab.sh attn runs it.
nvcc=${NVCC:-/usr/local/cuda/bin/nvcc}
if [ -x "$nvcc" ]; then
  "$nvcc" -std=c++20 -O3 -arch=sm_90 "$here/cluster_pdl.cu" -o "$dir/cluster_pdl.bin"
  gzip -9 -f "$dir/cluster_pdl.bin"
fi
git -C "$root" rev-parse --short HEAD > "$dir/COMMIT"
cat > "$dir/unpack.sh" <<'UNPACK'
#!/usr/bin/env bash
# Unpacks this bundle's binaries and fixtures into $1 (bundle.sh wrote it).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$1/fx"
for b in decodebench test_gemv test_backend test_attention test_argmax; do
  gunzip -c "$here/$b.gz" > "$1/$b"
  chmod +x "$1/$b"
done
cp "$here"/fx/*.gguf "$1/fx/"
if [ -f "$here/decodebench-trace.gz" ]; then
  gunzip -c "$here/decodebench-trace.gz" > "$1/decodebench-trace"
  chmod +x "$1/decodebench-trace"
fi
cp "$here/kernel_timeline.py" "$here/sm_balance.py" "$1/"
if [ -f "$here/cluster_pdl.bin.gz" ]; then
  gunzip -c "$here/cluster_pdl.bin.gz" > "$1/cluster_pdl"
  chmod +x "$1/cluster_pdl"
fi
echo "unpacked the build of $(cat "$here/COMMIT") into $1"
UNPACK
echo "bundle.sh: $dir holds the build of $(cat "$dir/COMMIT"): $(du -sh "$dir" | cut -f1)"
