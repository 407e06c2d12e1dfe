#!/usr/bin/env bash
# Behaviour equivalence of two builds of shiftsim: runs every case below with both binaries and
# compares, byte for byte, what each wrote: stdout, stderr, the exit status and every file the
# case created (CSV, JSON, traces, plot data, scripts and images).  For changes that must not
# change behaviour (a restructure, a refactor): build the previous main beside this tree, then
#
#   tests/equivalence.sh OLD/build/shiftsim build/shiftsim
#
# Both binaries read the bundled data of this tree (SHIFTSIM_DATA), so only the code differs.
# Prints one line per case and a closing "N passed, N failed"; exits 1 when any case differs,
# leaving both outputs under the work folder it names.  `--list` prints the cases.
set -uo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
D=$here
T=$here/tests/data

# One case a line: a name, a colon, the arguments given to shiftsim (word-split; $D is this tree,
# $T its test data); " ; " separates several runs of one case, in the same working folder (where
# the case's output files go).  Wall-clock figures ("0.5 s" ending a line) are not compared.
cases=$(cat <<EOF
help: --help
version: --version
simulate-default: simulate
simulate-help: simulate --help
simulate-json: simulate -m gpt-3-175b -c dgx-h100 -n 16 --tp 8 --pp 8 -B 256 -s interleaved -v 2 -r full -f json
simulate-csv: simulate -m llama-2-70b -n 4 --split dp=2,tp=8,pp=2,mb=1,gbs=64 --seq-parallel -z 1 -f csv
simulate-bucket: simulate --tp 2 --pp 2 --bucket 25MiB --tp-comm rs-ag -t timeline.csv
simulate-flow: simulate -n 2 --network flow --explain-costs -t flow.csv
simulate-profile: simulate --profile $D/traces/vtrain-a100/allreduce.csv --explain-costs -c dgx-a100
simulate-placements: simulate -p commshift -s xla -f json
simulate-auto: simulate -p auto --shift dp,pp
simulate-exact: simulate -n 2 --exact -p megatron -f csv
simulate-exact-graph: simulate -n 2 --exact --exact-graph --network flow
simulate-gpipe: simulate -s gpipe --pp 4 --tp 2 -b 2
simulate-bad-split: simulate --tp 3
simulate-bad-model: simulate -m $T/bad/model-unknown-key.ini
simulate-memory: simulate -m gpt-3-175b -n 1 --tp 8 --pp 1
compare-default: compare
compare-help: compare --help
compare-json: compare -n 4 --tp 8 --pp 4 -f json --top 4
compare-csv: compare -P megatron,commshift --bucket 40M -f csv -o compare.csv
compare-plot: compare -n 1 --tp 4 --pp 2 -P baseline,commshift --plot bars.png -t tr
sweep-small: sweep -N 16 --tp 2,4,8 --pp 1,2,4 -v 1,2 -b 1 -p baseline,commshift -j 2 -q -o sweep.csv -k 5 --plot sw
sweep-shards: sweep -N 16 --tp 4,8 --pp 1,2 -b 1 -q -j 1 --shard 0/2 -o s0.csv
sweep-mixed: sweep -m gpt-3-175b -c dgx-h100 -N 64 --tp 8 --pp 8,16 -b 1 -s 1f1b -r auto -q -j 2 -k 3
merge-shards: sweep -N 16 --tp 4,8 --pp 1,2 -b 1 -q -j 1 --shard 0/2 -o s0.csv ; sweep -N 16 --tp 4,8 --pp 1,2 -b 1 -q -j 1 --shard 1/2 -o s1.csv ; merge s0.csv s1.csv -o merged.csv
merge-missing: merge --partial $D/traces/validation/README.md
validate-every: validate --every 40 -j 2 -f csv -o val.csv
validate-plot: validate --every 60 -j 2 -p val.png
validate-published: validate -r $D/traces/validation/published-a100.csv -j 2
calibrate-small: calibrate -r $D/traces/validation/vtrain-a100-single.csv --every 120 -P gemm,memory --max-iter 10 -k 2 -j 2 -o cal.ini
calibrate-kineto: calibrate --kineto $T/kineto/small.json --emit-profile k.csv
calibrate-convert: calibrate --convert-vtrain $D/traces/validation/vtrain-a100/ground_truth_single.csv -o conv.csv
profile-import: profile import --from nccl-tests $T/nccltests/all_reduce_8gpu.txt $T/nccltests/all_gather_2x8.txt -o p.csv
profile-import-json: profile import --from nccl-tests-json $T/nccltests/all_reduce_8gpu.json
profile-show: profile show $D/traces/vtrain-a100/allreduce.csv
profile-query: profile query $D/traces/vtrain-a100/allreduce.csv --comm allreduce --bytes 100000000 --ranks 8
profile-query-gemm: profile query $D/traces/vtrain-a100/allreduce.csv --gemm 4096x4096x4096
replay-default: replay
replay-graph: replay $D/traces/examples/tp-pipeline.graph -t tl.csv --trace tr.json --plot g.png -f json
replay-deadlock: replay $T/graphs/deadlock.graph
replay-chakra: replay --chakra $D/traces/chakra/allreduce-8npus-1MB/all_reduce -f csv
replay-chakra-gpt: replay --chakra $D/traces/chakra/stg-gpt-dp2-tp2-pp2/workload --trace gpt.json
unknown-verb: frobnicate
bad-option: sweep --gpus 7
EOF
)

if [ "${1:-}" = "--list" ]; then
    printf '%s\n' "$cases"
    exit 0
fi
if [ $# -ne 2 ] || [ ! -x "$1" ] || [ ! -x "$2" ]; then
    echo "usage: tests/equivalence.sh OLD_SHIFTSIM NEW_SHIFTSIM   (or --list)" >&2
    exit 2
fi
old=$(realpath "$1")
new=$(realpath "$2")
work=$(mktemp -d "${TMPDIR:-/tmp}/shiftsim-equivalence.XXXXXX")
export SHIFTSIM_DATA=$D

run_case() { # BINARY FOLDER "ARGS [; ARGS ...]"
    local bin=$1 dir=$2 rest=$3 one
    mkdir -p "$dir"
    while [ -n "$rest" ]; do
        one=${rest%% ; *}
        [ "$one" = "$rest" ] && rest="" || rest=${rest#* ; }
        # shellcheck disable=SC2086
        (cd "$dir" && "$bin" $one >>stdout 2>>stderr; echo $? >>status)
    done
    sed -i -E 's/[0-9]+(\.[0-9]+)? s$/<wall> s/' "$dir/stdout" "$dir/stderr"
}

passed=0
failed=0
while IFS= read -r line; do
    [ -n "$line" ] || continue
    name=${line%%:*}
    run_case "$old" "$work/$name/old" "${line#*: }"
    run_case "$new" "$work/$name/new" "${line#*: }"
    if diff -r "$work/$name/old" "$work/$name/new" >"$work/$name/diff" 2>&1; then
        passed=$((passed + 1))
        printf 'same     %s\n' "$name"
        [ -n "${KEEP:-}" ] || rm -rf "$work/$name"
    else
        failed=$((failed + 1))
        printf 'DIFFERS  %s (see %s/%s/diff)\n' "$name" "$work" "$name"
    fi
done <<<"$cases"

[ "$failed" -eq 0 ] && [ -z "${KEEP:-}" ] && rm -rf "$work"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
