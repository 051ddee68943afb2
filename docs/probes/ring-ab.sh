#!/usr/bin/env bash
# The device runs of rounds 25 and 26 (the split ring form, 4 rows per warp, Q6_K tiled; run and
# merged in round 27, docs/performance.md), one call of the device tool each (under 10 minutes).
# Since round 27 an empty switch means the per-type default (Q8_0: ring 4x1x4, split form off;
# the rest: ring 8x2, split form 1x2), so name a shape to compare like with like:
#   split  GPU tests (the stream GEMV's, then all of test_gemv and test_backend), --verify on the
#          4-layer 7B shape, then the 7B steps with each DECODEBENCH_GEMV_RING_LONG shape against
#          the split form off ("0": the down projections keep the per-warp form), all with the
#          ring 8x2; about 8 minutes.
#   rows4  the 4-rows-per-warp test, then the 7B steps with DECODEBENCH_GEMV_RING shapes of 4 rows
#          per warp (and Q8_0 with one slot) against 8x2 (8 warps of 2 rows, 2 slots), the
#          split form off in all; about 8 minutes.
#   kernels  the GEMVs alone (bench-kernels) under those forms: the 7B down projection per
#          DECODEBENCH_GEMV_RING_LONG, gate/up per DECODEBENCH_GEMV_RING, the Q6_K LM head in both
#          layouts; a few minutes.
#   shapes  ring shapes not measured yet (16x1, 8x3, 16x2; Q8_0 8x1) against the round-27
#          defaults in 7B steps; about 6 minutes.
#   qk     Q4_K_M's mixed-type layers as [Wq; Wk] + V on its x' against the build before
#          (OLD_BIN=its decodebench), 7B Q4_K_M steps alternated, --verify 4; about 3 minutes.
#   forms  all of test_gemv and test_backend, then the report's kernels line (each GEMV's kernel
#          and form) for 2-layer 7B shapes of each type and the SmolLM2 shape; about 4 minutes.
#   suite  the build's defaults: all of test_gemv and test_backend, then issue 9's roofline suite
#          into $OUT/roofline.json (for scripts/performance-doc); about 7 minutes.
#   attn   round 31: decode attention without its thread-block cluster. test_backend and
#          test_attention, the cluster-under-PDL probe (docs/probes/cluster_pdl.cu, when the
#          bundle has it), --verify with each DECODEBENCH_ATTENTION form (cluster, block, merge,
#          split), then SmolLM2-shape (Q4_1, F16) and 7B (Q4_0) steps with the automatic form,
#          block (SmolLM2) and merge alternated; about 4 minutes.
#   token  round 32: test_backend, then the step's token stored in pinned host memory by the
#          argmax kernel (default) against its D2H copy (DECODEBENCH_TOKEN_D2H=copy), alternated:
#          SmolLM2-shape Q4_1 and F16 and 7B Q4_0 steps, with the median TPOT, the host's
#          overhead (the GPU's idle time between steps) and the replay check; about 3 minutes.
#   ahead  round 33: test_backend and test_argmax, then steps launched ahead (--launch-ahead on, the default)
#          against one at a time (off), alternated: SmolLM2-shape Q4_1 and F16, 7B Q4_0 and F16,
#          with host_line's figures; about 4 minutes.
#   occ    round 34: the 8-warp ring kernels of Q4_0 (tiled) and Q4_K with registers sized for 3
#          CTAs per SM against 2 (DECODEBENCH_GEMV_RING_CTAS), and Q4_0's whole-row form at most
#          2 CTAs per SM (DECODEBENCH_GEMV_RING_MAX_CTAS=2): the ring GEMV tests, the 7B GEMVs
#          alone, --verify 4, then 7B Q4_0 and Q4_K_M steps, the settings alternated, three
#          repetitions; about 6 minutes.
#   occsuite  round 34 on the suite's machine: 7B Q4_0 steps with DECODEBENCH_GEMV_RING_CTAS 2 and 3
#          alternated, the roofline suite into $OUT/roofline.json, then test_backend; about 5
#          minutes.
#   trig   round 35: the x' split kernels' PDL trigger after their wait (DECODEBENCH_SPLIT_TRIGGER
#          =wait) against at entry, and the ring register budget per matrix
#          (DECODEBENCH_GEMV_RING_CTAS=rounds): the ring and split-trigger GPU tests, the kernels
#          line with `rounds`, --verify 4 with wait (Q4_K_M also with rounds, Q4_0, Q8_0), then 7B Q4_K_M (entry, wait, rounds with
#          each), Q4_0 (entry, wait, head, entry with RING_CTAS=2: round 34's A/B), Q8_0 (entry,
#          wait, head) and SmolLM2-shape Q4_1 (entry, wait) steps, alternated, two repetitions;
#          about 9 minutes.
#          Round 35 ran it with the defaults of then (entry for every type) in place of "entry".
#   head   round 36: every GPU test binary (test_gemv, test_backend, test_attention, test_argmax:
#          round 35's review fixes had not run on a GPU), --verify 4 with the LM head's split
#          after its wait (DECODEBENCH_SPLIT_TRIGGER=head) on Q4_0 and Q8_0, then 7B Q4_0 and Q8_0
#          steps with the build's default (entry for those types) against head, alternated, two
#          repetitions; about 7 minutes.
#   timeline  round 36: per-CTA timelines (docs/probes/README.md) of 7B Q4_K_M, Q4_0 and Q8_0 steps
#          with each DECODEBENCH_SPLIT_TRIGGER (entry, wait, head), by the probe build that
#          bundle.sh packs with a TRACE_BUILD; kernel_timeline.py's summaries and the raw files in
#          $OUT/timeline.tgz (the device tool returns at most 8 files), and each summary's step,
#          split and LM-head lines printed; about 3 minutes. TL_VAR, TL_VALUES and TL_TYPES
#          pick another switch, its values and the types.
#   push   round 39: decode attention's push merge (DECODEBENCH_ATTENTION=push) against the
#          cluster form: test_attention, --verify, SmolLM2-shape Q4_1 and F16 and 7B Q4_0 steps
#          alternated, then test_backend; about 5 minutes.
#   q6k    Q6_K in the tiled layout: its GPU tests, --verify on the 4-layer 7B Q4_K_M shape in both
#          layouts, then the 7B Q4_K_M and Q6_K steps with --weight-layout gguf against auto
#          (which tiles Q6_K there), the split form off; about 5 minutes.
#   ggufring  the ring on the 32-column GGUF blocks (DECODEBENCH_GEMV_RING_GGUF; round 43 on its
#          branch, the default since round 44) for SmolLM2's Q4_1 LM head: tests, --verify, the
#          LM head alone and the SmolLM2-shape Q4_1 steps with it off (0) and on (1); about 4
#          minutes.
#   spread  round 56's direct-GEMV spread form (DECODEBENCH_GEMV_DIRECT_SPREAD) on the H200: its
#          GPU tests, the 7B F16 and BF16 GEMVs alone (bench-kernels) with 0 and long, then 7B F16
#          and BF16 steps (SPREAD_TYPES) and Qwen2.5-1.5B-shaped F16 steps with 0 and long
#          alternated, two repetitions; with the probe build in the bundle also the 7B F16 step's
#          per-CTA timeline with each value, read by sm_balance.py (how many SMs ran one CTA of the
#          down projection, and when they went idle); about 5 minutes (round 57 on an H100: 132 s
#          with SPREAD_TYPES=f16, before the 1.5B steps were added).
# Main's step before round 27: RING_LONG=0 and RING=8x2 (Q4_0, Q8_0); Q4_K_M's also needs
# --weight-layout gguf (auto tiles its Q6_K matrices, also in the split and rows4 modes). Forms
# alternate so drift shows. Usage on the GPU host, with the
# binaries in $1 and the GGUF fixtures of the backend tests (tests/fixtures/write_arch_gguf.py
# --arch A $1/fx/A.gguf for llama, qwen2, qwen3, written here: the GPU host has no gguf package) in
# $1/fx:
#   bash docs/probes/ring-ab.sh BIN_DIR split|rows4|q6k|kernels|shapes|suite|forms|qk|attn|token|ahead|occ|occsuite|trig|head|timeline|push|ggufring|spread
#   (writes $OUT/*.log and JSON)
set -u
bin=${1:?binary folder (decodebench, test_gemv, test_backend, fx/)}
mode=${2:?split, rows4, q6k, kernels, shapes, suite, forms, qk, attn, token, ahead, occ, occsuite, trig, head, timeline, push, ggufring or spread}
out=${OUT:-/tmp/ring-ab}
mkdir -p "$out"
start=$SECONDS
step() {  # $1 dtype, $2 DECODEBENCH_GEMV_RING, $3 DECODEBENCH_GEMV_RING_LONG, $4 weight layout
  # (default auto): prints the median TPOT in µs, or "failed: " and the run's last line
  local base="$out/$1-ring${2:-default}-long${3:-default}-${4:-auto}"
  rm -f "$base.json"  # a form run twice: a failed second run must not report the first one's
  DECODEBENCH_GEMV_RING=$2 DECODEBENCH_GEMV_RING_LONG=$3 "$bin/decodebench" --preset qwen2.5-7b \
    --layers 28 --vocab 152064 --backend cuda --graph on --prompt-tokens 128 --tokens 128 \
    --warmup 16 --warmup-time 1 --min-time 2 --dtype "$1" --weight-layout "${4:-auto}" \
    --json "$base.json" -q > "$base.log" 2>&1
  tpot_of "$base"
}
tpot_of() {  # $1 a run's base name: the median TPOT of $1.json in µs, or "failed: " and the
  # last line of $1.log
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(round(d['runs'][0]['results']['stats']['tpot_ns']['median']/1e3,1))" "$1.json" 2>/dev/null ||
    echo "failed: $(tail -1 "$1.log")"
}
gemvs() {  # $1 DECODEBENCH_GEMV_RING_LONG, $2 DECODEBENCH_GEMV_RING, $3 shape, $4 types: prints
  # "type shape kernel µs (% of the read bandwidth)" of every stream and stream-tiled run on a
  # pre-split x' with PDL (the form the decode step runs); DECODEBENCH_GEMV_RING_CTAS, _MAX_CTAS
  # and _GGUF pass through from the caller
  local base="$out/gemv-long${1:-default}-ring${2:-default}-ctas${DECODEBENCH_GEMV_RING_CTAS:-default}-max${DECODEBENCH_GEMV_RING_MAX_CTAS:-default}-gguf${DECODEBENCH_GEMV_RING_GGUF:-default}-$3"
  rm -f "$base.json"
  DECODEBENCH_GEMV_RING_LONG=$1 DECODEBENCH_GEMV_RING=$2 "$bin/decodebench" bench-kernels \
    --sections gemv --variants all --shapes "$3" --type "$4" --json "$base.json" > "$base.log" 2>&1
  python3 - "$base.json" <<'PY' 2>/dev/null || echo "failed: $(tail -1 "$base.log")"
import json, sys
rows = json.load(open(sys.argv[1]))["gemv"]
print(" · ".join(f"{g['type']} {g['shape']} {g['kernel']} {g['us']:.2f} µs "
                 f"({g['pct_stream']:.0f}%)" for g in rows
                 if g["presplit"] and g["pdl"] and g["probe"] == 0
                 and g["kernel"].startswith("stream")))
PY
}
backend_tests() {  # all of test_backend: a line, then the failed tests' names
  DECODEBENCH_BIN="$bin/decodebench" DECODEBENCH_SOURCE_DIR="$PWD" \
    DECODEBENCH_GGUF_FIXTURES="$bin/fx" "$bin/test_backend" > "$out/backend.log" 2>&1
  echo "backend rc=$? $((SECONDS - start))s $(grep -E "^\[  (PASSED|FAILED)  \] [0-9]" "$out/backend.log" | tr '\n' ' ')"
  grep -E "^\[  FAILED  \] [A-Za-z]" "$out/backend.log" | sort -u | head -20
}
gpu_tests() {  # all of test_gemv and test_backend: a line each, then the failed tests' names
  "$bin/test_gemv" > "$out/gemv.log" 2>&1
  echo "gemv rc=$? $((SECONDS - start))s $(tail -1 "$out/gemv.log")"
  grep -E "^\[  FAILED  \] [A-Za-z]" "$out/gemv.log" | sort -u | head -20
  backend_tests
}
alternate() {  # $1 step function, $2 and $3 its two settings: the SmolLM2-shape Q4_1 and F16 and
  # the 7B shapes named after them, two repetitions of the two settings alternated
  local fn=$1 a=$2 b=$3
  shift 3
  for pd in "smollm2-135m q4_1" "smollm2-135m f16" "$@"; do
    for rep in 1 2; do
      for v in "$a" "$b"; do
        echo "$pd ${v:-kernel}: $($fn $pd "$v" $rep)"
      done
    done
  done
  tar czf "$out/runs.tgz" -C "$out" runs && rm -rf "$out/runs"
}
switch_step() {  # $1 base name, $2 switch variable, $3 its value, $4 preset, $5 dtype, then
  # more flags: one graph run (128 steps after 128 tokens, at least 2 s timed) into $1.json, $1.log
  rm -f "$1.json"
  local layers=()
  [ "$4" = qwen2.5-7b ] && layers=(--layers 28 --vocab 152064)
  env "$2=$3" "$bin/decodebench" --preset "$4" "${layers[@]}" --backend cuda \
    --graph on --prompt-tokens 128 --tokens 128 --warmup 16 --warmup-time 1 --min-time 2 \
    --dtype "$5" "${@:6}" --json "$1.json" -q > "$1.log" 2>&1
}
ab_7b() {  # $1 tag, $2 switch variable, $3 dtype, then its values ("" = unset): 7B steps
  # with each value, alternated, two repetitions, a line of median TPOTs per repetition; runs in
  # $out/runs (nothing the caller exported of the round 35-36 switches)
  local tag=$1 var=$2 d=$3 rep v base line
  shift 3
  for rep in 1 2; do
    line="7b $d"
    for v in "$@"; do
      base="$out/runs/$tag-$d-${v:-default}-$rep"
      (
        unset DECODEBENCH_SPLIT_TRIGGER DECODEBENCH_GEMV_RING_CTAS
        switch_step "$base" "$var" "$v" qwen2.5-7b "$d"
      )
      line="$line · ${v:-default} $(tpot_of "$base")"
    done
    echo "$line"
  done
}
astep() {  # $1 preset, $2 dtype, $3 DECODEBENCH_ATTENTION, $4 a tag for the file names (e.g. the
  # repetition): prints the median TPOT in µs and the attention form the run record names, or
  # "failed: " and the run's last line
  local base="$out/attn-$1-$2-${3:-default}${4:+-$4}"
  switch_step "$base" DECODEBENCH_ATTENTION "$3" "$1" "$2"
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); r=d['runs'][0]['results']; t=r.get('telemetry') or {}; held=sum(x.get('power_throttled_ms',0)+x.get('thermal_throttled_ms',0) for x in t.get('rounds',[])); print(round(r['stats']['tpot_ns']['median']/1e3,1), '(' + d['backend']['kernels'].get('attention', '?') + (f', held back {held:.0f} ms' if held else '') + ')')" "$base.json" 2>/dev/null ||
    echo "failed: $(tail -1 "$base.log")"
}
host_line() {  # $1 a run's JSON, $2 its log: median TPOT, tok/s, host figures, graph nodes,
  # whether the steps were launched ahead; or "failed: " and the log's last line
  python3 - "$1" <<'PY' 2>/dev/null || echo "failed: $(tail -1 "$2")"
import json, sys
run = json.load(open(sys.argv[1]))["runs"][0]
res, h = run["results"], run["results"]["host_overhead"]
idle = h.get("idle") or {}
ahead = res.get("launch_ahead") or {}
print(f"tpot {res['stats']['tpot_ns']['median'] / 1e3:.1f} µs, "
      f"{res['stats']['tokens_per_s']:.1f} tok/s, host {h['host_us']:.2f} µs "
      f"({h.get('method')}, p90 {idle.get('p90_us', float('nan')):.2f}, min "
      f"{idle.get('min_us', float('nan')):.2f}, {idle.get('steps')} steps), replay "
      f"{h.get('replay_host_us') or float('nan'):.2f} µs, nodes {run['graph'].get('graph_nodes')}"
      f", ahead {ahead.get('on')}")
PY
}
tstep() {  # $1 preset, $2 dtype, $3 DECODEBENCH_TOKEN_D2H, $4 repetition: host_line (the run's
  # files in $out/runs, packed into runs.tgz at the end)
  mkdir -p "$out/runs"
  local base="$out/runs/token-$1-$2-${3:-kernel}-$4"
  switch_step "$base" DECODEBENCH_TOKEN_D2H "$3" "$1" "$2"
  host_line "$base.json" "$base.log"
}
lstep() {  # $1 preset, $2 dtype, $3 --launch-ahead value, $4 repetition: host_line (files as
  # tstep's)
  mkdir -p "$out/runs"
  local base="$out/runs/ahead-$1-$2-$3-$4"
  switch_step "$base" DECODEBENCH_TOKEN_D2H "" "$1" "$2" --launch-ahead "$3"
  host_line "$base.json" "$base.log"
}
case $mode in
  token)
    backend_tests
    grep -E "gaps of steps" "$out/backend.log" | sort -u
    alternate tstep "" copy "qwen2.5-7b q4_0"
    ;;
  ahead)
    backend_tests
    "$bin/test_argmax" > "$out/argmax.log" 2>&1
    echo "argmax rc=$? $(tail -1 "$out/argmax.log")"
    grep -E "gaps of steps" "$out/backend.log" | sort -u
    alternate lstep on off "qwen2.5-7b q4_0" "qwen2.5-7b f16"
    ;;
  occ)
    # Round 34: the 8-warp ring kernels (Q4_0 tiled, Q4_K) with registers sized for 3 CTAs per
    # SM against 2 (DECODEBENCH_GEMV_RING_CTAS; the build's defaults: Q4_0 3, Q4_K 2).
    "$bin/test_gemv" --gtest_filter='Gemv.StreamRing*:Gemv.StreamSplit*' > "$out/gemv.log" 2>&1
    echo "gemv (ring tests) rc=$? $((SECONDS - start))s $(tail -1 "$out/gemv.log")"
    grep -E "^\[  FAILED  \] [A-Za-z]" "$out/gemv.log" | sort -u | head -20
    for v in 2 3; do
      echo "gemvs $v: $(DECODEBENCH_GEMV_RING_CTAS=$v gemvs '' '' 7b q4_0,q4_k)"
    done
    echo "gemvs max 2: $(DECODEBENCH_GEMV_RING_MAX_CTAS=2 gemvs '' '' 7b q4_0)"
    for d in q4_0 q4_k_m; do
      for v in '' DECODEBENCH_GEMV_RING_CTAS=2 DECODEBENCH_GEMV_RING_CTAS=3 \
        DECODEBENCH_GEMV_RING_MAX_CTAS=2; do
        env ${v:+"$v"} "$bin/decodebench" --preset qwen2.5-7b --backend cuda --graph on \
          --layers 4 --vocab 152064 --prompt-tokens 128 --tokens 4 --verify 4 --dtype $d 2>&1 |
          grep -E "max abs" | sed "s/^/verify 7b $d ${v:-default} /"
      done
    done
    mkdir -p "$out/runs"
    # Settings: registers for 2 or 3 CTAs per SM, and (Q4_0) the whole-row form at most 2 per SM.
    for d in q4_0 q4_k_m; do
      for rep in 1 2 3; do
        line="7b $d"
        settings="DECODEBENCH_GEMV_RING_CTAS=2 DECODEBENCH_GEMV_RING_CTAS=3"
        [ $d = q4_0 ] && settings="$settings DECODEBENCH_GEMV_RING_MAX_CTAS=2"
        for v in $settings; do
          base="$out/runs/occ-$d-${v#DECODEBENCH_GEMV_}-$rep"
          switch_step "$base" "${v%%=*}" "${v#*=}" qwen2.5-7b "$d"
          line="$line · ${v#DECODEBENCH_GEMV_} $(tpot_of "$base")"
        done
        echo "$line"
      done
    done
    tar czf "$out/occ-runs.tgz" -C "$out" runs && rm -rf "$out/runs"
    ;;
  trig)
    # Round 35: where the split kernels trigger PDL, and the ring budget per matrix. Settings are
    # VAR=value words for env ("-": the build's defaults).
    "$bin/test_gemv" --gtest_filter='Gemv.StreamRing*:Gemv.StreamSplit*' > "$out/gemv.log" 2>&1
    echo "gemv (ring tests) rc=$? $((SECONDS - start))s $(tail -1 "$out/gemv.log")"
    grep -E "^\[  FAILED  \] [A-Za-z]" "$out/gemv.log" | sort -u | head -20
    "$bin/test_backend" --gtest_filter='Backend.SplitTrigger*' > "$out/backend-trigger.log" 2>&1
    echo "backend (split trigger tests) rc=$? $(tail -1 "$out/backend-trigger.log")"
    grep -E "^\[  FAILED  \] [A-Za-z]" "$out/backend-trigger.log" | sort -u | head -20
    DECODEBENCH_GEMV_RING_CTAS=rounds "$bin/decodebench" --preset qwen2.5-7b --layers 2 \
      --vocab 152064 --backend cuda --graph on --prompt-tokens 8 --tokens 8 --dtype q4_k_m 2>&1 |
      grep -E "^kernels" | sed "s/^/7b q4_k_m rounds: /"
    for v in "q4_k_m DECODEBENCH_GEMV_RING_CTAS=rounds DECODEBENCH_SPLIT_TRIGGER=wait" \
      "q4_0 DECODEBENCH_SPLIT_TRIGGER=wait" "q8_0 DECODEBENCH_SPLIT_TRIGGER=wait"; do
      set -- $v
      d=$1
      shift
      env "$@" "$bin/decodebench" --preset qwen2.5-7b --backend cuda --graph on --layers 4 \
        --vocab 152064 --prompt-tokens 128 --tokens 4 --verify 4 --dtype $d 2>&1 |
        grep -E "max abs" | sed "s/^/verify 7b $d $* /"
    done
    mkdir -p "$out/runs"
    # Each setting names the trigger: since round 35 the default is wait before Q4_K and Q6_K
    # GEMVs, so "-" would run Q4_K_M with wait.
    local_ctas=DECODEBENCH_GEMV_RING_CTAS=rounds
    local_wait=DECODEBENCH_SPLIT_TRIGGER=wait
    local_entry=DECODEBENCH_SPLIT_TRIGGER=entry
    for pd in "qwen2.5-7b q4_k_m $local_entry $local_wait $local_ctas,$local_entry $local_ctas,$local_wait" \
      "qwen2.5-7b q4_0 $local_entry $local_wait DECODEBENCH_SPLIT_TRIGGER=head $local_entry,DECODEBENCH_GEMV_RING_CTAS=2" \
      "qwen2.5-7b q8_0 $local_entry $local_wait DECODEBENCH_SPLIT_TRIGGER=head" \
      "smollm2-135m q4_1 $local_entry $local_wait"; do
      set -- $pd
      preset=$1 d=$2
      shift 2
      for rep in 1 2; do
        line="$preset $d"
        for v in "$@"; do
          base="$out/runs/trig-$preset-$d-${v//[=,]/_}-$rep"
          # A setting is comma-separated VAR=value words; "-" sets none (the build's defaults).
          words=()
          [ "$v" != - ] && IFS=, read -r -a words <<< "$v"
          (
            # Only the setting's own words: nothing the caller exported.
            unset DECODEBENCH_SPLIT_TRIGGER DECODEBENCH_GEMV_RING_CTAS
            for w in "${words[@]}"; do export "$w"; done
            switch_step "$base" DECODEBENCH_PROBE_UNUSED "" "$preset" "$d"
          )
          line="$line · ${v//DECODEBENCH_/} $(tpot_of "$base")"
        done
        echo "$line"
      done
    done
    tar czf "$out/trig-runs.tgz" -C "$out" runs && rm -rf "$out/runs"
    ;;
  head)
    # Round 36: every GPU test, then the LM head's split after its wait against the defaults.
    gpu_tests
    for t in attention argmax; do
      "$bin/test_$t" > "$out/$t.log" 2>&1
      echo "$t rc=$? $((SECONDS - start))s $(tail -1 "$out/$t.log")"
      grep -E "^\[  FAILED  \] [A-Za-z]" "$out/$t.log" | sort -u | head -20
    done
    for d in q4_0 q8_0; do
      (
        unset DECODEBENCH_GEMV_RING_CTAS
        DECODEBENCH_SPLIT_TRIGGER=head "$bin/decodebench" --preset qwen2.5-7b --backend cuda \
          --graph on --layers 4 --vocab 152064 --prompt-tokens 128 --tokens 4 --verify 4 \
          --dtype $d > "$out/verify-$d-head.log" 2>&1
        echo "verify 7b $d head: rc=$? $(grep -E "max abs|^kernels" "$out/verify-$d-head.log" |
          tr '\n' ' ')"
      )
    done
    mkdir -p "$out/runs"
    for d in q4_0 q8_0; do ab_7b head DECODEBENCH_SPLIT_TRIGGER "$d" "" head; done
    tar czf "$out/head-runs.tgz" -C "$out" runs && rm -rf "$out/runs"
    ;;
  timeline)
    # Round 36: where the step's time goes per split trigger, on this GPU.
    [ -x "$bin/decodebench-trace" ] ||
      { echo "timeline: no $bin/decodebench-trace (bundle.sh BUILD FOLDER TRACE_BUILD)"; exit 1; }
    # TL_VAR, TL_VALUES, TL_TYPES: another switch ("" in TL_VALUES: unset), e.g.
    # TL_VAR=DECODEBENCH_GEMV_RING_CTAS TL_VALUES="2 3" TL_TYPES="q4_0".
    mkdir -p "$out/tl"
    tl_var=${TL_VAR:-DECODEBENCH_SPLIT_TRIGGER}
    eval "tl_values=(${TL_VALUES:-entry wait head})"
    for d in ${TL_TYPES:-q4_k_m q4_0 q8_0}; do
      for v in "${tl_values[@]}"; do
        base="$out/tl/$d-${v:-default}"
        env -u DECODEBENCH_GEMV_RING_CTAS "$tl_var=$v" DECODEBENCH_TRACE="$base.bin" \
          "$bin/decodebench-trace" \
          --preset qwen2.5-7b --layers 28 --vocab 152064 --backend cuda --graph on \
          --prompt-tokens 128 --tokens 32 --warmup 4 --dtype $d -q --json "$base.json" \
          > "$base.log" 2>&1
        python3 "$bin/kernel_timeline.py" "$base.bin" > "$base.txt" 2>&1
        echo "== $d ${v:-default}: $(tpot_of "$base") µs median TPOT (instrumented)"
        grep -E "^step|^prepare_x| 152064x" "$base.txt" | tail -8
      done
    done
    tar czf "$out/timeline.tgz" -C "$out" tl && rm -rf "$out/tl"
    ;;
  occsuite)
    # Round 34 on the suite's machine: 7B Q4_0 steps with the ring registers sized for 2 and 3
    # CTAs per SM (the default), alternated, two repetitions; the suite; then test_backend.
    mkdir -p "$out/runs"
    for rep in 1 2; do
      line="7b q4_0"
      for v in 2 3; do
        base="$out/runs/occ-q4_0-$v-$rep"
        switch_step "$base" DECODEBENCH_GEMV_RING_CTAS "$v" qwen2.5-7b q4_0
        line="$line · RING_CTAS=$v $(tpot_of "$base")"
      done
      echo "$line"
    done
    tar czf "$out/occsuite-runs.tgz" -C "$out" runs && rm -rf "$out/runs"
    "$bin/decodebench" suite bench-configs/suites/h200-roofline.json --json "$out/roofline.json" \
      -q > "$out/suite.log" 2>&1
    echo "suite rc=$? $((SECONDS - start))s"
    backend_tests
    ;;
  attn)
    backend_tests
    "$bin/test_attention" > "$out/attention.log" 2>&1
    echo "attention rc=$? $((SECONDS - start))s $(tail -1 "$out/attention.log")"
    grep -E "^\[  FAILED  \] [A-Za-z]" "$out/attention.log" | sort -u | head
    if [ -x "$bin/cluster_pdl" ]; then
      # pairs, KiB of weights per GEMV, middle CTAs, GEMV dynamic shared memory (KiB)
      for args in "120 1024 24 0" "120 1024 24 200" "240 256 24 0" "30 4096 136 0"; do
        echo "cluster_pdl $args"
        "$bin/cluster_pdl" $args 2>&1 | sed 's/^/  /'
      done
    fi
    for form in cluster block merge split; do
      DECODEBENCH_ATTENTION=$form "$bin/decodebench" --preset smollm2-135m --backend cuda \
        --graph on --prompt-tokens 128 --tokens 8 --verify 8 --dtype q4_1 2>&1 |
        grep -E "max abs|attention:" | sed "s/^/verify smollm2 q4_1 $form /"
      DECODEBENCH_ATTENTION=$form "$bin/decodebench" --preset qwen2.5-7b --backend cuda \
        --graph on --layers 4 --vocab 152064 --prompt-tokens 128 --tokens 4 --verify 4 \
        --dtype q4_0 2>&1 | grep -E "max abs" | sed "s/^/verify 7b q4_0 $form /"
    done
    for d in q4_1 f16; do
      line="smollm2 $d"
      for form in '' block merge '' merge; do line="$line · ${form:-default} $(astep smollm2-135m $d "$form")"; done
      echo "$line"
    done
    line="7b q4_0"
    for form in '' merge '' merge; do line="$line · ${form:-default} $(astep qwen2.5-7b q4_0 "$form")"; done
    echo "$line"
    ;;
  push)
    # Round 39: decode attention's push merge (DECODEBENCH_ATTENTION=push: the other blocks of
    # the cluster store their partials into block 0's shared memory) against the cluster form:
    # test_attention, --verify with push, then SmolLM2-shape Q4_1 and F16 and 7B Q4_0 steps
    # (PUSH_SHAPES, preset:dtype words), the two forms alternated, two repetitions, then test_backend.
    "$bin/test_attention" > "$out/attention.log" 2>&1
    echo "attention rc=$? $((SECONDS - start))s $(tail -1 "$out/attention.log")"
    grep -E "^\[  FAILED  \] [A-Za-z]" "$out/attention.log" | sort -u | head
    DECODEBENCH_ATTENTION=push "$bin/decodebench" --preset smollm2-135m --backend cuda \
      --graph on --prompt-tokens 128 --tokens 8 --verify 8 --dtype q4_1 2>&1 |
      grep -E "max abs|attention:" | sed "s/^/verify smollm2 q4_1 push /"
    DECODEBENCH_ATTENTION=push "$bin/decodebench" --preset qwen2.5-7b --backend cuda \
      --graph on --layers 4 --vocab 152064 --prompt-tokens 128 --tokens 4 --verify 4 \
      --dtype q4_0 2>&1 | grep -E "max abs|attention:" | sed "s/^/verify 7b q4_0 push /"
    for pd in ${PUSH_SHAPES:-smollm2-135m:q4_1 smollm2-135m:f16 qwen2.5-7b:q4_0}; do
      for rep in 1 2; do
        line="$pd"
        for form in cluster push; do
          line="$line · $form $(astep "${pd%%:*}" "${pd##*:}" "$form" "$rep")"
        done
        echo "$line"
      done
    done
    backend_tests
    mkdir -p "$out/runs" && mv "$out"/attn-*.json "$out/runs/" && tar czf "$out/push-runs.tgz" \
      -C "$out" runs && rm -rf "$out/runs" "$out"/attn-*.log
    ;;
  split)
    "$bin/test_gemv" --gtest_filter='Gemv.Stream*' > "$out/gemv-stream.log" 2>&1
    echo "gemv-stream rc=$? $((SECONDS - start))s $(tail -1 "$out/gemv-stream.log")"
    "$bin/test_gemv" > "$out/gemv.log" 2>&1
    echo "gemv rc=$? $((SECONDS - start))s $(tail -1 "$out/gemv.log")"
    DECODEBENCH_BIN="$bin/decodebench" DECODEBENCH_SOURCE_DIR="$PWD" \
      DECODEBENCH_GGUF_FIXTURES="$bin/fx" "$bin/test_backend" > "$out/backend.log" 2>&1
    echo "backend rc=$? $((SECONDS - start))s $(tail -1 "$out/backend.log")"
    for d in q4_0 q8_0 q4_k_m; do
      "$bin/decodebench" --preset qwen2.5-7b --backend cuda --graph on --layers 4 --vocab 152064 \
        --prompt-tokens 16 --tokens 4 --verify 4 --dtype $d 2>&1 | grep -E "max abs|argmax" |
        sed "s/^/verify $d /"
    done
    for d in q4_0 q8_0 q4_k_m; do
      line="$d (RING_LONG)"
      for form in 0 1x4 1x2 2x4 0 1x4; do line="$line · $form $(step $d 8x2 $form)"; done
      echo "$line"
    done
    ;;
  rows4)
    "$bin/test_gemv" --gtest_filter='Gemv.StreamRing*' > "$out/gemv-ring.log" 2>&1
    echo "gemv-ring rc=$? $((SECONDS - start))s $(tail -1 "$out/gemv-ring.log")"
    for d in q4_0 q4_k_m; do
      line="$d (RING, RING_LONG=0)"
      for form in 8x2 4x2x4 4x1x4 8x1 4x3x4 8x1x4 8x2 4x2x4; do line="$line · $form $(step $d $form 0)"; done
      echo "$line"
    done
    # 4x1x4 also moves the down projections (16 rows of 10,656 bytes fit one slot) from the
    # per-warp form to a one-slot ring: compare it with 8x1 too (q8_0 below runs it).
    # Q8_0: groups of 16 rows of 3,584 columns are 61 KB, so 8x2's two slots hold one CTA
    # per SM (8 warps); one slot holds three (8x1, 4x1x4; 8x1 was not measured in round 24).
    line="q8_0 (RING, RING_LONG=0)"
    for form in 8x2 8x1 4x1x4 8x1x4 8x2 8x1; do line="$line · $form $(step q8_0 $form 0)"; done
    echo "$line"
    ;;
  shapes)
    # Ring shapes not measured yet, against the round-27 defaults (''), the split form at its
    # default: for the 4-bit types one slot of 32 rows (16x1: 64 KB for Q4_0's 3,584 columns, so
    # two CTAs of 16 warps fit the registers) and three slots of 16 rows (8x3); Q8_0's 4x1x4
    # against 8x1 with the split form at its default (off).
    for d in q4_0 q4_k_m; do
      line="$d (RING; RING_LONG default)"
      for form in '' 16x1 8x3 16x2 '' 16x1; do line="$line · ${form:-default} $(step $d "$form" '')"; done
      echo "$line"
    done
    line="q8_0 (RING; RING_LONG default)"
    for form in '' 8x1 '' 8x1; do line="$line · ${form:-default} $(step q8_0 "$form" '')"; done
    echo "$line"
    ;;
  forms)
    # Round 28: the run record names each GEMV's form (backend.kernels.gemv_forms_per_step, the
    # report's kernels line). All of test_gemv and test_backend, then that line for 2-layer 7B
    # shapes of each type and the SmolLM2 shape (a layer's matrices take the 28-layer forms).
    gpu_tests
    for d in q8_0 q4_0 q4_k_m q6_k f16; do
      "$bin/decodebench" --preset qwen2.5-7b --layers 2 --backend cuda --graph on \
        --prompt-tokens 8 --tokens 8 --dtype $d --json "$out/forms-7b-$d.json" 2>&1 |
        grep -E "^kernels" | sed "s/^/7b $d: /"
    done
    for d in q4_1 f16; do
      "$bin/decodebench" --preset smollm2-135m --backend cuda --graph on --prompt-tokens 8 \
        --tokens 8 --dtype $d --json "$out/forms-smollm2-$d.json" 2>&1 | grep -E "^kernels" |
        sed "s/^/smollm2 $d: /"
    done
    ;;
  qk)
    # Round 28: Q4_K_M's layers with V in Q6_K (14 of the 7B's 28) as a stacked [Wq; Wk] GEMV and
    # V on its x' (3 launches) against the build before (RMSNorm, split, Q, K, V: 5), whose
    # decodebench is $OLD_BIN; 7B Q4_K_M steps alternated, then --verify 4 on 4 layers.
    old=${OLD_BIN:?OLD_BIN: the decodebench of the build before}
    for pass in 1 2 3; do
      line="q4_k_m pass $pass"
      for b in old new; do
        exe=$bin/decodebench
        [ "$b" = old ] && exe=$old
        base="$out/qk-$b-$pass"
        "$exe" --preset qwen2.5-7b --layers 28 --backend cuda --graph on --prompt-tokens 128 \
          --tokens 128 --warmup 16 --warmup-time 1 --min-time 2 --dtype q4_k_m \
          --json "$base.json" -q > "$base.log" 2>&1
        line="$line · $b $(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); r=d['runs'][0]; print(round(r['results']['stats']['tpot_ns']['median']/1e3,1), round(r['roofline']['efficiency']*100,2), d['backend']['kernels']['gemv_per_step'])" "$base.json" 2>/dev/null || echo "failed: $(tail -1 "$base.log")")"
      done
      echo "$line"
    done
    "$bin/decodebench" --preset qwen2.5-7b --backend cuda --graph on --layers 4 --prompt-tokens 16 \
      --tokens 4 --verify 4 --dtype q4_k_m 2>&1 | grep -E "max abs|argmax|^kernels" | sed "s/^/verify q4_k_m /"
    ;;
  q6k)
    "$bin/test_gemv" --gtest_filter='*Q6_K*:Gemv.TiledWeights*:Gemv.PreSplit*:Gemv.VariantsAndSplitSize' \
      > "$out/gemv-q6k.log" 2>&1
    echo "gemv-q6k rc=$? $((SECONDS - start))s $(tail -1 "$out/gemv-q6k.log")"
    DECODEBENCH_BIN="$bin/decodebench" DECODEBENCH_SOURCE_DIR="$PWD" \
      DECODEBENCH_GGUF_FIXTURES="$bin/fx" "$bin/test_backend" --gtest_filter='*Q6_K*:*Q4_K*' \
      > "$out/backend-q6k.log" 2>&1
    echo "backend-q6k rc=$? $((SECONDS - start))s $(tail -1 "$out/backend-q6k.log")"
    for layout in auto gguf; do
      "$bin/decodebench" --preset qwen2.5-7b --backend cuda --graph on --layers 4 --vocab 152064 \
        --prompt-tokens 16 --tokens 4 --verify 4 --dtype q4_k_m --weight-layout $layout 2>&1 |
        grep -E "max abs|argmax" | sed "s/^/verify q4_k_m $layout /"
    done
    for d in q4_k_m q6_k; do
      line="$d (weight layout; RING_LONG=0)"
      for layout in gguf auto gguf auto gguf auto; do
        line="$line · $layout $(step $d '' 0 $layout)"
      done
      echo "$line"
    done
    ;;
  kernels)
    # The GEMVs alone (bench-kernels: µs per launch in a graph, x' pre-split as in the step): the
    # down projection under each split form, gate/up under each ring shape, the Q4_K_M LM head
    # (Q6_K) in both layouts.
    for form in 0 1x4 1x2 2x4 2x2; do
      echo "down (RING_LONG=$form): $(gemvs "$form" '' 3584x18944 q4_0,q8_0,q4_k)"
    done
    for form in 8x2 4x2x4 4x1x4 8x1 8x1x4; do
      echo "gate/up (RING=$form): $(gemvs 0 "$form" 37888x3584 q4_0,q8_0,q4_k)"
    done
    echo "LM head: $(gemvs 0 '' 152064x3584 q6_k)"
    ;;
  ggufring)
    # The ring's whole-row form on the 32-column GGUF blocks (DECODEBENCH_GEMV_RING_GGUF=1; round
    # 42's branch, measured in round 43; since round 44 the default for this matrix). The stream
    # GEMV tests, --verify 8 on the SmolLM2 shape (Q4_1: its LM head is the one matrix it moves)
    # with the switch, the LM head alone (49,152 x 576 Q4_1) off, on, and on with the 16x2 and 16x1
    # ring shapes, then SmolLM2-shape Q4_1 steps off and on alternated, three repetitions (their
    # files packed into $OUT/ggufring-runs.tgz); about 4 minutes. 4 rows per warp (8x2x4) keeps the
    # per-warp form on these blocks.
    "$bin/test_gemv" --gtest_filter='Gemv.StreamRing*:Gemv.ShortAndOddRows' > "$out/gemv-ring.log" 2>&1
    echo "gemv-ring rc=$? $((SECONDS - start))s $(tail -1 "$out/gemv-ring.log")"
    grep -E "^\[  FAILED  \] [A-Za-z]" "$out/gemv-ring.log" | sort -u | head -10
    DECODEBENCH_GEMV_RING_GGUF=1 "$bin/decodebench" --preset smollm2-135m --backend cuda \
      --graph on --prompt-tokens 16 --tokens 8 --verify 8 --dtype q4_1 2>&1 |
      grep -E "kernels|max abs" | sed "s/^/verify q4_1 ring-gguf /"
    for rep in 1 2; do
      for g in 0 1; do
        echo "LM head rep$rep RING_GGUF=$g: $(DECODEBENCH_GEMV_RING_GGUF=$g gemvs '' '' 49152x576 q4_1)"
      done
      for form in 16x2 16x1; do
        echo "LM head rep$rep RING_GGUF=1 RING=$form: $(DECODEBENCH_GEMV_RING_GGUF=1 gemvs '' "$form" 49152x576 q4_1)"
      done
    done
    mkdir -p "$out/runs"
    for rep in 1 2 3; do
      line="smollm2 q4_1 (RING_GGUF)"
      for g in 0 1; do
        switch_step "$out/runs/ggufring-$g-$rep" DECODEBENCH_GEMV_RING_GGUF "$g" smollm2-135m q4_1
        line="$line · $g $(tpot_of "$out/runs/ggufring-$g-$rep")"
      done
      echo "$line"
    done
    tar czf "$out/ggufring-runs.tgz" -C "$out" runs && rm -rf "$out/runs"
    ;;
  spread)
    # Round 56's spread form of the direct GEMV (F16, BF16): `long` deals the row pairs of rows
    # over 4,096 columns (the 7B down projection: 224 tasks in 264 CTA slots) over every slot. On
    # an H100 (round 57) it took 0.1-0.2% off the 7B steps and added 0.3% to the 1.5B shape's. If
    # it makes the H200's 7B float steps faster without slowing the 1.5B shape, it becomes the
    # default (cuda/kernels/gemv_direct.cu, kDirectSpreadDefault).
    "$bin/test_gemv" --gtest_filter='Gemv.DirectSpread*:Gemv.DirectKernel*' > "$out/gemv-spread.log" 2>&1
    echo "gemv-spread rc=$? $((SECONDS - start))s $(tail -1 "$out/gemv-spread.log")"
    grep -E "^\[  FAILED  \] [A-Za-z]" "$out/gemv-spread.log" | sort -u | head -10
    DECODEBENCH_BIN="$bin/decodebench" DECODEBENCH_SOURCE_DIR="$PWD" \
      DECODEBENCH_GGUF_FIXTURES="$bin/fx" "$bin/test_backend" \
      --gtest_filter='Backend.DirectSpread*:Backend.GemvSwitches*' > "$out/backend-spread.log" 2>&1
    echo "backend-spread rc=$? $((SECONDS - start))s $(tail -1 "$out/backend-spread.log")"
    grep -E "^\[  FAILED  \] [A-Za-z]" "$out/backend-spread.log" | sort -u | head -10
    for v in 0 long; do
      base="$out/gemv-spread-$v"
      rm -f "$base.json"
      DECODEBENCH_GEMV_DIRECT_SPREAD=$v "$bin/decodebench" bench-kernels --sections gemv \
        --variants auto --shapes 7b --type f16,bf16 --json "$base.json" > "$base.log" 2>&1
      echo "bench-kernels spread=$v rc=$? $((SECONDS - start))s"
      python3 - "$base.json" <<'PY' 2>/dev/null || echo "failed: $(tail -1 "$base.log")"
import json, sys
doc = json.load(open(sys.argv[1]))
for g in doc["gemv"]:
    if g["pdl"] and not g["presplit"] and g["probe"] == 0:  # the automatic kernel with PDL
        print(f"  {g['type']} {g['shape']} {g['plan']['form']} grid {g['plan']['grid']}: "
              f"{g['us']:.3f} µs ({g['pct_stream']:.1f}%)")
PY
    done
    mkdir -p "$out/runs"
    for d in ${SPREAD_TYPES:-f16 bf16}; do  # SPREAD_TYPES=f16: the F16 steps only (4 runs fewer)
      ab_7b spread DECODEBENCH_GEMV_DIRECT_SPREAD "$d" 0 long
    done
    for rep in 1 2; do  # the 1.5B shape: down projections of 8,960 columns, fewer rows
      line="1.5b f16"
      for v in 0 long; do
        base="$out/runs/spread-15b-f16-$v-$rep"
        switch_step "$base" DECODEBENCH_GEMV_DIRECT_SPREAD "$v" qwen2.5-7b f16 --hidden 1536 \
          --heads 12 --kv-heads 2 --ffn 8960 --vocab 151936
        line="$line · $v $(tpot_of "$base")"
      done
      echo "$line"
    done
    tar czf "$out/spread-runs.tgz" -C "$out" runs && rm -rf "$out/runs"
    if [ -x "$bin/decodebench-trace" ]; then
      mkdir -p "$out/tl"
      for v in 0 long; do
        base="$out/tl/f16-$v"
        rm -f "$base.json"
        DECODEBENCH_GEMV_DIRECT_SPREAD=$v DECODEBENCH_TRACE="$base.bin" "$bin/decodebench-trace" \
          --preset qwen2.5-7b --layers 28 --vocab 152064 --backend cuda --graph on \
          --prompt-tokens 128 --tokens 32 --warmup 4 --dtype f16 -q --json "$base.json" \
          > "$base.log" 2>&1
        python3 "$bin/sm_balance.py" "$base.bin" > "$base.txt" 2>&1
        echo "== f16 spread=$v: $(tpot_of "$base") µs median TPOT (instrumented)"
        grep -E "18944" "$base.txt" | head -6
      done
      tar czf "$out/spread-timeline.tgz" -C "$out" tl && rm -rf "$out/tl"
    fi
    ;;
  suite)
    # The build's own defaults, checked and then measured: all of test_gemv and test_backend,
    # then issue 9's roofline suite (bench-configs/suites/h200-roofline.json, about 2 minutes),
    # whose $OUT/roofline.json scripts/performance-doc turns into docs/performance.md's table.
    gpu_tests
    "$bin/decodebench" suite bench-configs/suites/h200-roofline.json --json "$out/roofline.json" \
      -q > "$out/suite.log" 2>&1
    echo "suite rc=$? $((SECONDS - start))s"
    python3 - "$out/roofline.json" <<'PY' 2>/dev/null || echo "no suite JSON: $(tail -1 "$out/suite.log")"
import json, sys
doc = json.load(open(sys.argv[1]))
for c in doc["configurations"]:
    if c["status"] != "ok":
        print(f"{c['label']}: {c['status']} (exit {c['exit_code']}): {c['error']}")
for r in doc["results"]:
    c, run = r["config"], r["runs"][0]
    h = run["results"].get("host_overhead") or {}
    idle = h.get("idle") or {}
    f1 = lambda v: "n/a" if v is None else f"{v:.1f}"
    host = (f", host {h['host_us']:.1f} µs ({h.get('method')}; idle p90 {f1(idle.get('p90_us'))}, "
            f"{idle.get('steps', 'n/a')} steps; replay {f1(h.get('replay_host_us'))})") if h else ""
    print(f"{c['preset']['value']} {c['dtype']['value']}: "
          f"{run['results']['stats']['tpot_ns']['median'] / 1e3:.1f} µs, "
          f"{run['roofline']['efficiency'] * 100:.1f}% of {run['roofline']['measured_gbps']:.0f} GB/s"
          f"{host}")
PY
    ;;
  *)
    echo "mode: split, rows4, q6k, kernels, shapes, suite, forms, qk, attn, token, ahead, occ, occsuite, trig, head, timeline, push, ggufring or spread" >&2
    exit 2
    ;;
esac
echo "done in $((SECONDS - start))s"
