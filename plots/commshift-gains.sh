#!/usr/bin/env bash
# The predicted commshift gain (alpa -> commshift: the paper's baseline and its relocation) for
# GPT-J 6B on a cluster, for every dp x tp x pp split of 8, 16, 32 and 64 GPUs, with every
# communication run once, twice and four times (--comm-repeat, as the author's
# ALPA_TEST_REPEAT_COMM does).  Prints a Markdown table per cluster (the tables of
# docs/placement.md) and writes plots/commshift-gains-CLUSTER.csv.
#
#   plots/commshift-gains.sh [CLUSTER...]        (default: tsubame4 dgx-h200)
#   SHIFTSIM=path/to/shiftsim plots/commshift-gains.sh
#   plots/commshift-gains.sh --check             (a test: recomputes both clusters elsewhere and
#                                                 fails if a CSV here or a row of the tables in
#                                                 docs/placement.md is not what it prints now)
#
# Each split runs `shiftsim compare -P alpa,commshift` with microbatch 1, global batch
# dp * max(8, 4 pp) given explicitly (so m = 8 microbatches for pp <= 2, 16 for pp = 4; the
# tables were made with this rule, the verbs' default before it became 4 per GPU), the cheapest
# recompute mode that fits, analytic costs.  tp ranges over the powers of two up to the GPUs per
# node and the heads, pp over the divisors of GPT-J's 28 layers that divide the GPU count.
# A split that fits under no recompute mode is listed as such.  After the tables, the gain of a few
# splits against the number of microbatches m (global batch dp * m), which the paper does not
# give.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
shiftsim=${SHIFTSIM:-$here/build/shiftsim}
export SHIFTSIM_DATA=${SHIFTSIM_DATA:-$here}

if [ "${1:-}" = "--check" ]; then
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    COMMSHIFT_GAINS_OUT=$work SHIFTSIM=$shiftsim bash "$0" >"$work/tables.md"
    status=0
    for f in "$work"/commshift-gains-*.csv; do
        name=plots/$(basename "$f")
        if ! cmp -s "$f" "$here/$name"; then
            echo "$name is not what plots/commshift-gains.sh computes now (< kept, > now):"
            diff "$here/$name" "$f" | head -20 || true
            status=1
        fi
    done
    if missing=$(grep '^| [0-9]' "$work/tables.md" | grep -vxF -f "$here/docs/placement.md"); then
        echo "docs/placement.md lacks these rows as plots/commshift-gains.sh prints them now:"
        echo "$missing"
        status=1
    fi
    [ $status -eq 0 ] || echo "(rerun plots/commshift-gains.sh and paste its tables)"
    exit $status
fi

out=${COMMSHIFT_GAINS_OUT:-$here/plots}
clusters=("$@")
[ ${#clusters[@]} -gt 0 ] || clusters=(tsubame4 dgx-h200)

# The gain (percent, one decimal) of commshift over alpa for a split and a repeat count, or "-"
# when the split does not fit; also sets $recompute, $m, $gbs, $alpa_ms, $cs_ms.
run() { # CLUSTER NODES DP TP PP REPEAT [GLOBAL_BATCH]
    local out batch=()
    if [ $# -ge 7 ]; then
        batch=(-B "$7")
    else
        batch=(-B $(($3 * ($5 > 2 ? 4 * $5 : 8))))
    fi
    # The CSV form (docs/guide/compare.md): columns by name, whatever the table shows.
    if ! out=$("$shiftsim" compare -c "$1" -n "$2" --dp "$3" --tp "$4" --pp "$5" \
        -p alpa,commshift --comm-repeat "$6" "${batch[@]}" -f csv 2>/dev/null); then
        gain="-"
        return
    fi
    local cols='NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }'
    recompute=$(awk -F, "$cols"' $1 == "alpa" { print $c["recompute"] }' <<<"$out")
    gbs=$(awk -F, "$cols"' $1 == "alpa" { print $c["global_batch"] }' <<<"$out")
    m=$(awk -F, "$cols"' $1 == "alpa" { print $c["global_batch"] / ($c["microbatch"] * '"$3"') }' <<<"$out")
    alpa_ms=$(awk -F, "$cols"' $1 == "alpa" { printf "%.3f", $c["step_ms"] }' <<<"$out")
    cs_ms=$(awk -F, "$cols"' $1 == "commshift" { printf "%.3f", $c["step_ms"] }' <<<"$out")
    gain=$(awk -F, "$cols"' $1 == "commshift" { printf "%+.1f", $c["gain_pct"] }' <<<"$out")
}

for cluster in "${clusters[@]}"; do
    gpn=$("$shiftsim" simulate -c "$cluster" -n 1 --tp 1 --pp 1 -f json --ignore-memory \
        -r none 2>/dev/null | sed -n 's/.*"gpus" : \([0-9]*\).*/\1/p')
    csv=$out/commshift-gains-$cluster.csv
    echo "gpus,dp,tp,pp,microbatches,global_batch,recompute,alpa_ms,commshift_ms,gain_pct,gain_x2_pct,gain_x4_pct" >"$csv.tmp"
    echo
    echo "GPT-J 6B on $cluster ($gpn GPUs per node): commshift gain over alpa (microbatch 1)"
    echo
    echo "| GPUs | split (dp x tp x pp) | m | global batch | recompute | alpa ms | commshift ms | gain | gain, comm x2 | gain, comm x4 |"
    echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
    for gpus in 8 16 32 64; do
        nodes=$((gpus / gpn))
        for pp in 1 2 4; do
            for tp in 1 2 4 8; do
                [ "$tp" -le "$gpn" ] || continue
                [ $((gpus % (tp * pp))) -eq 0 ] || continue
                dp=$((gpus / (tp * pp)))
                run "$cluster" "$nodes" "$dp" "$tp" "$pp" 1
                if [ "$gain" = "-" ]; then
                    echo "| $gpus | $dp x $tp x $pp | | | does not fit | | | | | |"
                    continue
                fi
                g1=$gain r1=$recompute m1=$m b1=$gbs a1=$alpa_ms c1=$cs_ms
                run "$cluster" "$nodes" "$dp" "$tp" "$pp" 2
                g2=$gain
                run "$cluster" "$nodes" "$dp" "$tp" "$pp" 4
                g4=$gain
                echo "| $gpus | $dp x $tp x $pp | $m1 | $b1 | $r1 | $a1 | $c1 | $g1% | $g2% | $g4% |"
                echo "$gpus,$dp,$tp,$pp,$m1,$b1,$r1,$a1,$c1,$g1,$g2,$g4" >>"$csv.tmp"
            done
        done
    done
    mv "$csv.tmp" "$csv"
done

# The gain against the number of microbatches, on the first cluster.
cluster=${clusters[0]}
echo
echo "Commshift gain against microbatches m (global batch dp x m), GPT-J 6B on $cluster"
echo
echo "| GPUs | split (dp x tp x pp) | m = 4 | 8 | 16 | 32 | 64 |"
echo "| --- | --- | --- | --- | --- | --- | --- |"
for split in "32 4 2 4" "64 8 2 4" "64 16 2 2" "64 4 4 4"; do
    read -r gpus dp tp pp <<<"$split"
    gpn=$("$shiftsim" simulate -c "$cluster" -n 1 --tp 1 --pp 1 -f json --ignore-memory -r none \
        2>/dev/null | sed -n 's/.*"gpus" : \([0-9]*\).*/\1/p')
    row="| $gpus | $dp x $tp x $pp |"
    for m in 4 8 16 32 64; do
        run "$cluster" $((gpus / gpn)) "$dp" "$tp" "$pp" 1 $((dp * m))
        row="$row ${gain}$([ "$gain" = "-" ] || echo %) |"
    done
    echo "$row"
done
