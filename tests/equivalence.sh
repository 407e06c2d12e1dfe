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
# the case's output files go).  Wall-clock figures ("0.5 s" ending a line, "in 0.5 s (72.0/s)")
# and the random suffix of an atomic write's temporary file (in a "Failed to create file"
# message) are not compared.
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
help-replay: replay --help
help-sweep: sweep --help
help-merge: merge --help
help-validate: validate --help
help-calibrate: calibrate --help
help-profile: profile --help ; profile -h ; profile
help-profile-import: profile import --help
help-profile-show: profile show --help
help-profile-query: profile query --help
help-all: simulate --help-all ; compare --help-all ; sweep --help-all ; validate --help-all ; calibrate --help-all ; replay --help-all ; merge --help-all ; profile import --help-all ; profile query --help-all
help-short: simulate -h ; compare -h ; sweep -h ; replay -h
simulate-bad-counts: simulate --dp 0 ; simulate --tp 0 ; simulate --pp 0 ; simulate -v 0 ; simulate -b 0 ; simulate -B 0 ; simulate --tp -3 ; simulate --tp x ; simulate --nodes 0 --tp 0 ; simulate --tp 0 -f xml
simulate-bad-nodes: simulate --nodes 0 ; simulate --nodes -2 ; simulate --nodes 100000 ; simulate --nodes 0 -m nope
simulate-nodes-sentinel: simulate --nodes -1 -f csv
simulate-bad-split-spec: simulate --split tp=x ; simulate --split nope ; simulate --split tp=8,pp=8,dp=9 ; simulate --split gbs=0
simulate-bad-fields: simulate --schedule nope ; simulate -r nope ; simulate -z 2 ; simulate --bucket xx ; simulate --tp-comm nope ; simulate --order nope ; simulate --schedule nope -r nope
simulate-fields: simulate --split dp=4,tp=2,pp=4,mb=2,schedule=gpipe,recompute=selective -f csv ; simulate --order dp-tp-pp --tp 2 --pp 2 -z 1 --tp-comm rs-ag -f csv
simulate-bad-placement: simulate -p nowhere ; simulate --shift qq ; simulate -p commshift --shift dp,xx ; simulate -p nowhere --shift qq
simulate-shift-only: simulate --shift dp -f csv
simulate-bad-cost: simulate --network nope ; simulate --profile /nonexistent/p.csv ; simulate --network nope --tp 0
simulate-bad-job: simulate -m nope ; simulate -c nope ; simulate -m $T/bad/model-unknown-key.ini -c nope
simulate-bad-limits: simulate --max-ops -1 ; simulate --max-events -1 ; simulate --max-ops 10 ; simulate --max-events 10
simulate-bad-usage: simulate -f xml ; simulate --frob ; simulate extra ; simulate -t
compare-bad-counts: compare --dp 0 ; compare --tp 0 ; compare --pp 0 ; compare -b 0 ; compare -B 0 ; compare --tp x ; compare --nodes 0 --tp 0 ; compare --tp 0 -f xml
compare-bad-nodes: compare --nodes 0 ; compare --nodes -1 ; compare --nodes -1 --tp 0 ; compare --nodes -1 --top 0 ; compare --nodes 100000 ; compare --top 0
compare-bad-split-spec: compare --split tp=x ; compare --split nope ; compare --split tp=3
compare-bad-fields: compare --schedule nope ; compare -r nope ; compare -z 2 ; compare --bucket xx ; compare --tp-comm nope ; compare --vstages 2 ; compare --order tp-dp-pp ; compare -v 2
compare-fields: compare --split dp=1,tp=4,pp=4,mb=1,gbs=16,recompute=full -P baseline,megatron -f csv ; compare -s 1f1b -z 1 --seq-parallel --tp-comm rs-ag -P baseline,commshift -f csv ; compare -n 1 --dp 1 -b 2 -B 32 -P megatron -f json
compare-bad-policies: compare -P zz ; compare -P baseline,zz ; compare -P , ; compare --shift qq ; compare --shift qq -P zz ; compare -p x
compare-bad-job: compare -m nope ; compare -c nope ; compare -c nope --shift qq
compare-bad-limits: compare --max-ops -1 ; compare --max-events -1 ; compare --max-ops 10
compare-bad-usage: compare -f xml ; compare --frob ; compare extra ; compare -o /nonexistent/dir/x.txt
sweep-bad-lists: sweep --tp x ; sweep --pp 0 ; sweep -v x ; sweep -b x ; sweep -N 8 --tp 8 --pp 1 -v 1 -b 1 -q -j 1 -s nope ; sweep -N 8 --tp 8 --pp 1 -v 1 -b 1 -q -j 1 -p nope ; sweep -r nope ; sweep --tp 0 -s nope
sweep-bad-fields: sweep -z 2 ; sweep --bucket xx ; sweep --tp-comm nope ; sweep --order nope ; sweep -z 2 --tp x ; sweep --split tp=2 ; sweep --dp 2 ; sweep --schedule 1f1b
sweep-bad-counts: sweep --nodes 0 ; sweep --gpus 0 ; sweep -B 0 ; sweep -j -1 ; sweep -k -1 ; sweep --shard 3/2 ; sweep --gpus 2000000 ; sweep --nodes 200000 ; sweep --nodes 100000 --gpus 8 --tp 8 --pp 1 -v 1 -b 1 -q -j 1 ; sweep --gpus x
sweep-fields: sweep -N 8 --tp 2,4 --pp 1,2 -v 1 -b 1 -B 32 -z 1 --bucket 25MiB --seq-parallel --order tp-dp-pp -q -j 1 -o - ; sweep -n 1 --tp 8 --pp 1 -b 1 -v 1 -s 1f1b -r none,full --exact -q -j 1 -k 2
sweep-bad-job: sweep -m nope ; sweep -c nope ; sweep --max-ops -1 ; sweep --max-events -1 ; sweep -f csv ; sweep --frob ; sweep extra
validate-bad: validate -f xml ; validate -c nope ; validate --every 0 ; validate -j -1 ; validate --max-ops -1 ; validate --max-events -1 ; validate -r /nonexistent.csv ; validate --frob ; validate extra ; validate --every 0 -f xml
validate-cluster: validate --every 60 -j 1 -c dgx-a100 -f json ; validate --every 80 -j 1 -f csv -o - 
calibrate-bad: calibrate ; calibrate --max-ops -1 ; calibrate --folds 1 ; calibrate -r x --folds 1 ; calibrate -r x --every 0 ; calibrate -r x -P nope ; calibrate --emit-run r.csv ; calibrate --kineto $T/kineto/small.json --emit-run r.csv ; calibrate -r /nonexistent.csv ; calibrate -r $D/traces/validation/vtrain-a100-single.csv -c nope ; calibrate --frob ; calibrate -f xml ; calibrate extra
calibrate-emit-run: calibrate --kineto $T/kineto/small.json --emit-run r.csv -m gpt-j-6b --split dp=1,tp=8,pp=1,mb=1,gbs=8 -n 2 -c dgx-h100 ; calibrate --kineto $T/kineto/small.json --emit-run r2.csv -m gpt-j-6b --split tp=x ; calibrate --kineto $T/kineto/small.json --emit-run r3.csv --model gpt-j-6b --split dp=1,tp=8,pp=1,mb=1,gbs=8
calibrate-convert-cluster: calibrate --convert-vtrain $D/traces/validation/vtrain-a100/ground_truth_single.csv -c dgx-h100 -o conv.csv
replay-bad: replay -f xml ; replay --max-events -1 ; replay --until x ; replay --alpha x ; replay --link-bw x ; replay --plot-ranks -1 ; replay --tflops 0 ; replay --frob ; replay a b ; replay --comm-group x ; replay --max-ops 5 ; replay --chakra x $T/graphs/deadlock.graph ; replay --max-events 3 ; replay --plot-ranks -1 --max-events -1
profile-bad: profile frob ; profile import ; profile import --from x y ; profile import --from nccl-tests ; profile show ; profile query ; profile query $D/traces/vtrain-a100/allreduce.csv ; profile query $D/traces/vtrain-a100/allreduce.csv --comm x --bytes 1 ; profile query $D/traces/vtrain-a100/allreduce.csv --gemm 1x2 ; profile query $D/traces/vtrain-a100/allreduce.csv --gemm 8x8x8 --dtype x ; profile query $D/traces/vtrain-a100/allreduce.csv --comm allreduce --ranks 0 ; profile import --frob ; profile show --frob
profile-import-out: profile import --from nccl-tests $T/nccltests/all_reduce_8gpu.txt --output p.csv ; profile import --from nccl-tests $T/nccltests/all_reduce_8gpu.txt -o - ; profile import --from nccl-tests $T/nccltests/all_reduce_8gpu.txt -o /nonexistent/p.csv
merge-bad: merge ; merge --frob ; merge /nonexistent.csv ; merge -o x.csv
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
    # Wall-clock figures (with the rate a sweep derives from one: "in 0.06 s (576.2/s)"), and the
    # random suffix of an atomic write's temporary file.
    sed -i -E -e 's/[0-9]+(\.[0-9]+)? s$/<wall> s/' \
        -e 's/in [0-9]+(\.[0-9]+)? s \([0-9]+(\.[0-9]+)?\/s\)/in <wall> s (<rate>\/s)/' \
        -e 's/(to create file “[^”]*\.)[A-Za-z0-9]{6}”/\1XXXXXX”/' "$dir/stdout" "$dir/stderr"
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
        [ -n "${KEEP:-}" ] || rm -rf "${work:?}/$name"
    else
        failed=$((failed + 1))
        printf 'DIFFERS  %s (see %s/%s/diff)\n' "$name" "$work" "$name"
    fi
done <<<"$cases"

[ "$failed" -eq 0 ] && [ -z "${KEEP:-}" ] && rm -rf "$work"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
