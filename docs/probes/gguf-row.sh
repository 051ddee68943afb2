#!/usr/bin/env bash
# The real SmolLM2 GGUF's row of docs/performance.md's table and its verification, and the
# two-call transfer of a model file larger than one device call carries (64 MiB).
#
#   gguf-row.sh halves MODEL DIR    here: MODEL's first half into DIR/a/p1, the second into
#                                   DIR/b/p2 and its sha256 into DIR/b/sha256 (carry DIR/a in one
#                                   call, DIR/b in the next, within the machine's idle time)
#   gguf-row.sh join PART1 DIR_B OUT
#                                   on the GPU host: PART1 (DIR/a/p1, copied to /tmp by the first
#                                   call) and DIR_B/p2 into OUT; exit 1 unless its sha256 is
#                                   DIR_B/sha256's
#   gguf-row.sh parts MODEL DIR N   here: MODEL in N pieces of about equal size, DIR/1/p to DIR/N/p,
#                                   and its sha256 into DIR/N/sha256 (carry DIR/1 in one call,
#                                   DIR/2 in the next, ... each within the machine's idle time;
#                                   thirds leave room for a build beside a piece: the working tree
#                                   is about 13 MB, a packed decodebench 7 MB, half the model 49 MB)
#   gguf-row.sh join-parts OUT SHA256_FILE PART...
#                                   on the GPU host: the PARTs in order into OUT; exit 1 unless its
#                                   sha256 is SHA256_FILE's
#   gguf-row.sh run DECODEBENCH MODEL [OUT_DIR]
#                                   on the GPU host: the table's timing run (--graph both
#                                   --phase-timing --tokens 128 --ignore-eos --warmup-time 1
#                                   --min-time 3) into OUT_DIR/smollm2-135m-q4_1-h200.json and the
#                                   README's milestone command into ...-h200-verify.json
#                                   (OUT_DIR: $OUT, else .), then their verdict lines
#
# The prompt is the README's chat prompt, final newline included (16 tokens): a $'...' string
# keeps it, where "$(printf ...)" drops it (round 40's runs had 15 tokens for that reason).
# tests/python/test_probes.py checks that it is the README's.
set -euo pipefail
prompt=$'<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n'
mode=${1:?halves, join, parts, join-parts or run}
case $mode in
  halves)
    model=${2:?model file}
    dir=${3:?folder}
    mkdir -p "$dir/a" "$dir/b"
    size=$(stat -c %s "$model")
    half=$(((size + 1) / 2))
    head -c "$half" "$model" > "$dir/a/p1"
    tail -c +"$((half + 1))" "$model" > "$dir/b/p2"
    sha256sum "$model" | cut -c1-64 > "$dir/b/sha256"
    echo "$dir/a/p1 $half bytes, $dir/b/p2 $((size - half)) bytes"
    ;;
  join)
    part1=${2:?first half}
    dirb=${3:?folder of the second half}
    out=${4:?joined file}
    cat "$part1" "$dirb/p2" > "$out"
    if [ "$(sha256sum "$out" | cut -c1-64)" != "$(cat "$dirb/sha256")" ]; then
      echo "gguf-row.sh: $out does not match its sha256" >&2
      exit 1
    fi
    echo "sha256 ok: $out"
    ;;
  parts)
    model=${2:?model file}
    dir=${3:?folder}
    n=${4:?number of pieces}
    [[ $n =~ ^[1-9][0-9]*$ ]] || { echo "gguf-row.sh: '$n' is not a number of pieces" >&2; exit 2; }
    size=$(stat -c %s "$model")
    piece=$(((size + n - 1) / n))
    for ((i = 1; i <= n; i++)); do
      mkdir -p "$dir/$i"
      # Piece i: bytes [(i - 1) · piece, i · piece), the last one shorter.
      # (dd, not tail | head: under pipefail tail's SIGPIPE would end the script.)
      dd if="$model" of="$dir/$i/p" bs=1M iflag=skip_bytes,count_bytes \
        skip="$(((i - 1) * piece))" count="$piece" status=none
      echo "$dir/$i/p $(stat -c %s "$dir/$i/p") bytes"
    done
    sha256sum "$model" | cut -c1-64 > "$dir/$n/sha256"
    ;;
  join-parts)
    out=${2:?joined file}
    sum=${3:?sha256 file}
    shift 3
    [ $# -gt 0 ] || { echo "gguf-row.sh: join-parts needs the pieces" >&2; exit 2; }
    cat "$@" > "$out"
    if [ "$(sha256sum "$out" | cut -c1-64)" != "$(cat "$sum")" ]; then
      echo "gguf-row.sh: $out does not match its sha256" >&2
      exit 1
    fi
    echo "sha256 ok: $out"
    ;;
  run)
    bin=${2:?decodebench}
    model=${3:?model file}
    out=${4:-${OUT:-.}}
    "$bin" --version
    "$bin" --model "$model" --prompt "$prompt" --backend cuda --graph both --phase-timing \
      --tokens 128 --ignore-eos --warmup-time 1 --min-time 3 \
      --json "$out/smollm2-135m-q4_1-h200.json" > "$out/gguf-timing.log" 2>&1 ||
      { echo "timing run failed: $(tail -1 "$out/gguf-timing.log")"; exit 1; }
    grep -E "^(host|graph vs eager|verdict)" "$out/gguf-timing.log"
    "$bin" --model "$model" --prompt "$prompt" --tokens 128 --ignore-eos --backend cuda \
      --graph both --verify-argmax --verify 16 --phase-timing \
      --json "$out/smollm2-135m-q4_1-h200-verify.json" > "$out/gguf-verify.log" 2>&1 ||
      { echo "verification failed: $(tail -1 "$out/gguf-verify.log")"; exit 1; }
    grep -E "^(verify|graph vs eager|verdict)" "$out/gguf-verify.log"
    ;;
  *)
    echo "gguf-row.sh: unknown mode '$mode' (halves, join, parts, join-parts or run)" >&2
    exit 2
    ;;
esac
