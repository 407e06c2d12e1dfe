#!/usr/bin/env bash
# Replays Chakra trace sets with shiftsim and prints, per set, the simulated time, the wall time
# and the peak RSS, so that the same sets can be timed with ASTRA-sim by hand (see README.md in
# this directory for the ASTRA-sim command line).
#
#   compare.sh [-s SHIFTSIM] [-g CHAKRA_GEN] [--big DIR] [--] [PREFIX...]
#
#   PREFIX      a trace set: PREFIX.0.et, PREFIX.1.et, ... (default: every set under this
#               directory, found by its *.0.et file)
#   -s PATH     the shiftsim binary (default: $SHIFTSIM, else build*/shiftsim, else PATH)
#   -g PATH     the trace generator (default: $CHAKRA_GEN, else build*/tests/import/chakra-gen)
#   --big DIR   first write the measurement sets into DIR with chakra-gen and replay them too:
#               a 1 MiB all-reduce over 64, 512 and 1024 ranks, and a GPT-like 3D-parallel step
#               on 512 ranks (dp 8 x tp 8 x pp 8, 32 layers, 8 microbatches; ~147k nodes)
#   --huge      with --big, also the 512-rank GPT-3-sized step (96 layers, hidden 12288,
#               16 microbatches; ~821k nodes, 76 MB of traces)
#
# Output: one row per set: set, ranks, ops, simulated time (ms), wall time (s), peak RSS (MiB).
# Wall time and RSS come from /usr/bin/time -v when it exists, else from bash's clock (no RSS).
# Extra options for `shiftsim replay` (e.g. --link-bw 50e9) can be passed in $REPLAY_ARGS.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
shiftsim=${SHIFTSIM:-}
gen=${CHAKRA_GEN:-}
big=""
huge=0
sets=()

while [ $# -gt 0 ]; do
    case "$1" in
        -s) shiftsim=$2; shift 2 ;;
        -g) gen=$2; shift 2 ;;
        --big) big=$2; shift 2 ;;
        --huge) huge=1; shift ;;
        -h|--help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        --) shift; sets+=("$@"); break ;;
        -*) echo "compare.sh: unknown option $1" >&2; exit 2 ;;
        *) sets+=("$1"); shift ;;
    esac
done

first_existing() {
    for f in "$@"; do
        if [ -x "$f" ]; then echo "$f"; return 0; fi
    done
    return 1
}

if [ -z "$shiftsim" ]; then
    shiftsim=$(first_existing "$root"/build/shiftsim "$root"/build*/shiftsim || command -v shiftsim || true)
fi
if [ -z "$shiftsim" ] || [ ! -x "$shiftsim" ]; then
    echo "compare.sh: no shiftsim binary found; build it (meson setup build && meson compile -C build) or pass -s" >&2
    exit 2
fi

if [ -n "$big" ]; then
    if [ -z "$gen" ]; then
        gen=$(first_existing "$root"/build/tests/import/chakra-gen "$root"/build*/tests/import/chakra-gen || true)
    fi
    if [ -z "$gen" ] || [ ! -x "$gen" ]; then
        echo "compare.sh: --big needs tests/import/chakra-gen (built with the tests) or -g" >&2
        exit 2
    fi
    for n in 64 512 1024; do
        mkdir -p "$big/allreduce-${n}npus-1MiB"
        "$gen" allreduce --ranks "$n" --bytes 1048576 "$big/allreduce-${n}npus-1MiB/all_reduce"
        sets+=("$big/allreduce-${n}npus-1MiB/all_reduce")
    done
    mkdir -p "$big/gpt-dp8-tp8-pp8"
    "$gen" gpt --dp 8 --tp 8 --pp 8 --layers 32 --microbatches 8 "$big/gpt-dp8-tp8-pp8/gpt"
    sets+=("$big/gpt-dp8-tp8-pp8/gpt")
    if [ "$huge" = 1 ]; then
        mkdir -p "$big/gpt3-dp8-tp8-pp8"
        "$gen" gpt --dp 8 --tp 8 --pp 8 --layers 96 --microbatches 16 --hidden 12288 \
            "$big/gpt3-dp8-tp8-pp8/gpt"
        sets+=("$big/gpt3-dp8-tp8-pp8/gpt")
    fi
fi

if [ ${#sets[@]} -eq 0 ]; then
    while IFS= read -r f; do
        sets+=("${f%.0.et}")
    done < <(find "$here" -name '*.0.et' | sort)
fi

have_time=0
if [ -x /usr/bin/time ] && /usr/bin/time -v true >/dev/null 2>&1; then have_time=1; fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

printf '%-56s %6s %9s %14s %9s %9s\n' set ranks ops simulated_ms wall_s rss_MiB
status=0
for p in "${sets[@]}"; do
    ranks=0
    while [ -e "$p.$ranks.et" ]; do ranks=$((ranks + 1)); done
    name=${p#"$root"/}
    # shellcheck disable=SC2086
    cmd=("$shiftsim" replay --chakra "$p" --format json ${REPLAY_ARGS:-})
    if [ "$have_time" = 1 ]; then
        if ! /usr/bin/time -v -o "$tmp/time" "${cmd[@]}" >"$tmp/out" 2>"$tmp/err"; then
            printf '%-56s %6s  failed: %s\n' "$name" "$ranks" "$(head -c 300 "$tmp/err")"
            status=1; continue
        fi
        wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {n = split($2, a, ":"); s = 0;
                   for (i = 1; i <= n; i++) s = s * 60 + a[i]; printf "%.3f", s}' "$tmp/time")
        rss=$(awk -F': ' '/Maximum resident set size/ {printf "%.1f", $2 / 1024}' "$tmp/time")
    else
        t0=$(date +%s.%N)
        if ! "${cmd[@]}" >"$tmp/out" 2>"$tmp/err"; then
            printf '%-56s %6s  failed: %s\n' "$name" "$ranks" "$(head -c 300 "$tmp/err")"
            status=1; continue
        fi
        t1=$(date +%s.%N)
        wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f", b - a}')
        rss="-"
    fi
    ops=$(sed -n 's/^ *"ops" *: *\([0-9]*\).*/\1/p;T;q' "$tmp/out")
    ns=$(sed -n 's/^ *"makespan_ns" *: *\([0-9]*\).*/\1/p;T;q' "$tmp/out")
    ms=$(awk -v n="${ns:-0}" 'BEGIN {printf "%.6f", n / 1e6}')
    printf '%-56s %6s %9s %14s %9s %9s\n' "$name" "$ranks" "${ops:-?}" "$ms" "$wall" "$rss"
done
exit $status
