#!/usr/bin/env bash
# Round 25's device run for the split ring form (branch round25-split-ring): GPU tests, then the
# 7B steps with each DECODEBENCH_GEMV_RING_LONG shape against the form off ("0": the down
# projections keep the per-warp form, the build then runs main's kernels: their PTX is unchanged),
# alternating so drift shows. Usage on the GPU host, with the binaries of this branch in $1 and
# the GGUF fixtures of the backend tests (tests/fixtures/write_arch_gguf.py --arch A $1/fx/A.gguf
# for llama, qwen2, qwen3, written here: the GPU host has no gguf package) in $1/fx:
#   bash docs/probes/split-ring-ab.sh BIN_DIR   (writes $OUT/*.log; about 8 minutes)
set -u
bin=${1:?binary folder (decodebench, test_gemv, test_backend, fx/)}
out=${OUT:-/tmp/split-ring}
mkdir -p "$out"
start=$SECONDS
"$bin/test_gemv" --gtest_filter='Gemv.Stream*' > "$out/gemv-stream.log" 2>&1
echo "gemv-stream rc=$? $((SECONDS - start))s $(tail -1 "$out/gemv-stream.log")"
"$bin/test_gemv" > "$out/gemv.log" 2>&1
echo "gemv rc=$? $((SECONDS - start))s $(tail -1 "$out/gemv.log")"
DECODEBENCH_BIN="$bin/decodebench" DECODEBENCH_SOURCE_DIR="$PWD" DECODEBENCH_GGUF_FIXTURES="$bin/fx" \
  "$bin/test_backend" > "$out/backend.log" 2>&1
echo "backend rc=$? $((SECONDS - start))s $(tail -1 "$out/backend.log")"
for d in q4_0 q8_0 q4_k_m; do
  "$bin/decodebench" --preset qwen2.5-7b --backend cuda --graph on --layers 4 --vocab 152064 \
    --prompt-tokens 16 --tokens 4 --verify 4 --dtype $d 2>&1 | grep -E "max abs|argmax" |
    sed "s/^/verify $d /"
done
step() {  # $1 dtype, $2 form: prints the graph row's median TPOT in µs
  DECODEBENCH_GEMV_RING_LONG=$2 "$bin/decodebench" --preset qwen2.5-7b --layers 28 \
    --vocab 152064 --backend cuda --graph on --prompt-tokens 128 --tokens 128 --warmup 16 \
    --warmup-time 1 --min-time 2 --dtype $1 --json "$out/$1-$2.json" -q > /dev/null 2>&1
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(round(d['runs'][0]['results']['stats']['tpot_ns']['median']/1e3,1))" "$out/$1-$2.json"
}
for d in q4_0 q8_0 q4_k_m; do
  line="$d"
  for form in 0 1x4 1x2 2x4 0 1x4; do line="$line · $form $(step $d $form)"; done
  echo "$line"
done
echo "done in $((SECONDS - start))s"
