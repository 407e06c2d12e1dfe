#!/usr/bin/env bash
# Checks `replay --semantics astra` against ASTRA-sim on random trace sets: for each seed,
# `chakra-gen random` writes a set, both simulators replay it on the given network, system and
# remote memory files, and every rank's finish time is compared to the nanosecond (ASTRA-sim's
# "sys[i] finished, N cycles" against the last end of the rank's ops in shiftsim's timeline).
# docs/chakra.md ("ASTRA-sim's semantics") gives the runs this was made for.
#
#   astra-random.sh --astra BIN [--congestion aware] [-s SHIFTSIM] [-g CHAKRA_GEN]
#                   --network FILE --system FILE [--memory FILE] [--ranks N] [--nodes K]
#                   [--kinds LIST] [--independent] [--injection-scale X] [--rendezvous]
#                   [--queues N] [--seeds FIRST-LAST]
#
#   --astra BIN      ASTRA-sim's AstraSim_Analytical_Congestion_Unaware (or, with
#                    --congestion aware, _Aware), built outside this repository
#   -s PATH          the shiftsim binary (default: $SHIFTSIM, else build*/shiftsim, else PATH)
#   -g PATH          the chakra-gen binary (default: build*/tests/import/chakra-gen)
#   --network FILE   an ASTRA-sim network YAML of N NPUs; --system FILE a system JSON;
#   --memory FILE    a remote memory JSON (default: none, ASTRA-sim's NO_MEMORY_EXPANSION)
#   --ranks N        ranks of each set (default 4); --nodes K nodes a rank (default 40)
#   --kinds LIST     chakra-gen's node kinds (default comp,cpu,invalid,coll,p2p; mem needs a
#                    --memory; prio and dims give the collectives comm_priority and
#                    involved_dim); --independent: a graph of its own on every rank (replay-only)
#   --injection-scale X, --rendezvous, --queues N   ASTRA-sim's --injection-scale X,
#                    --rendezvous-protocol=true and --num-queues-per-dim N; shiftsim's
#                    --astra-injection-scale X, --astra-rendezvous-protocol and
#                    --astra-num-queues-per-dim N
#   --seeds A-B      the seeds to run (default 1-20)
#
# A line per seed, then the counts:
#   same        every rank finished at the same nanosecond in both;
#   both-stop   ASTRA-sim left ranks unfinished (it hung: a collective or a receive that never
#               matches; its report may have aborted after the ranks that did finish) and
#               shiftsim stopped with an error;
#   same-part   ASTRA-sim aborted in its end-of-run statistics after some ranks (traces with CPU,
#               memory or invalid nodes: "Only GPU and COMM types are supported for overlap
#               extraction"), and those ranks finished at the same nanosecond in shiftsim;
#   DIFF        anything else: a rank's time differs, or one simulator finished where the other
#               did not.
# Exit status 1 when a seed differs, 2 on a usage error.  The same seeds write the same sets, so a
# DIFF can be rerun with chakra-gen alone.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
shiftsim=${SHIFTSIM:-}
gen=""
astra=""
congestion=unaware
network=""
system=""
memory=""
ranks=4
nodes=40
kinds=comp,cpu,invalid,coll,p2p
independent=""
injection=1
rendezvous=false
queues=1
seeds=1-20

# shellcheck source=traces/chakra/astra-lib.sh
. "$here/astra-lib.sh"

[ $# -gt 0 ] || usage
while [ $# -gt 0 ]; do
    case "$1" in
        --astra) astra=$2; shift 2 ;;
        --congestion) congestion=$2; shift 2 ;;
        -s) shiftsim=$2; shift 2 ;;
        -g) gen=$2; shift 2 ;;
        --network) network=$2; shift 2 ;;
        --system) system=$2; shift 2 ;;
        --memory) memory=$2; shift 2 ;;
        --ranks) ranks=$2; shift 2 ;;
        --nodes) nodes=$2; shift 2 ;;
        --kinds) kinds=$2; shift 2 ;;
        --independent) independent=--independent; shift ;;
        --injection-scale) injection=$2; shift 2 ;;
        --rendezvous) rendezvous=true; shift ;;
        --queues) queues=$2; shift 2 ;;
        --seeds) seeds=$2; shift 2 ;;
        -h|--help) usage ;;
        *) echo "astra-random.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done

[ -n "$shiftsim" ] || shiftsim=$(find_built "$root" shiftsim shiftsim)
[ -n "$gen" ] || gen=$(find_built "$root" chakra-gen tests/import/chakra-gen)
for b in "$astra" "$shiftsim" "$gen"; do
    if [ -z "$b" ] || [ ! -x "$b" ]; then
        echo "astra-random.sh: not an executable: '$b' (--astra BIN, -s SHIFTSIM, -g CHAKRA_GEN)" >&2
        exit 2
    fi
done
case "$congestion" in
    aware|unaware) ;;
    *) echo "astra-random.sh: --congestion: '$congestion' is not unaware or aware" >&2; exit 2 ;;
esac
{ [ -n "$network" ] && [ -n "$system" ]; } || usage
for f in "$network" "$system" ${memory:+"$memory"}; do
    [ -f "$f" ] || { echo "astra-random.sh: $f: no such file" >&2; exit 2; }
done
if ! [[ "$seeds" =~ ^[0-9]+-[0-9]+$ ]] || ! [[ "$ranks" =~ ^[0-9]+$ ]] ||
    ! [[ "$nodes" =~ ^[0-9]+$ ]] || ! [[ "$queues" =~ ^[0-9]+$ ]]; then
    echo "astra-random.sh: --seeds A-B, --ranks, --nodes and --queues take whole numbers" >&2
    exit 2
fi

if [ "$(npus "$network")" != "$ranks" ]; then
    echo "astra-random.sh: $network has $(npus "$network") NPUs; --ranks is $ranks (one trace" \
        "per NPU)" >&2
    exit 2
fi

rdv_flag=""
[ "$rendezvous" = true ] && rdv_flag=--astra-rendezvous-protocol

# ASTRA-sim runs in a scratch folder (it writes logs where it runs): every path absolute.
network=$(abs "$network")
system=$(abs "$system")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ -n "$memory" ]; then
    memory=$(abs "$memory")
else
    memory="$tmp/memory.json"
    echo '{"memory-type": "NO_MEMORY_EXPANSION"}' >"$memory"
fi

same=0
stop=0
part=0
differ=0
for seed in $(seq "${seeds%-*}" "${seeds#*-}"); do
    p="$tmp/set/t"
    rm -rf "$tmp/set" && mkdir -p "$tmp/set"
    "$gen" random --ranks "$ranks" --nodes "$nodes" --seed "$seed" --kinds "$kinds" \
        $independent "$p"
    groups=empty
    [ -e "$p.json" ] && groups="$p.json"
    # ASTRA-sim now and then dies at exit before every rank has printed (a crash, not a
    # result): tried again, up to three times, unless it hung or its report aborted.
    for _ in 1 2 3; do
        rm -rf "$tmp/log" && mkdir -p "$tmp/log"
        ( (cd "$tmp/log" && timeout 300 stdbuf -oL -eL \
            "$astra" --workload-configuration="$p" --comm-group-configuration="$groups" \
            --system-configuration="$system" --remote-memory-configuration="$memory" \
            --network-configuration="$network" --logging-folder="$tmp/log" \
            --injection-scale="$injection" --rendezvous-protocol="$rendezvous" \
            --num-queues-per-dim="$queues" \
            >"$tmp/aout" 2>&1) ) 2>/dev/null || true
        (grep -o 'sys\[[0-9]*\] finished, [0-9]*' "$tmp/aout" || true) |
            sed 's/sys\[\([0-9]*\)\] finished, /\1 /' | sort >"$tmp/a"
        [ "$(wc -l <"$tmp/a")" -ge "$ranks" ] && break
        grep -q 'unreleased nodes\|overlap extraction' "$tmp/aout" && break
    done
    done_ranks=$(wc -l <"$tmp/a")
    aborted=no
    grep -q 'overlap extraction' "$tmp/aout" && aborted=yes
    if "$shiftsim" replay --chakra "$p" --astra-network "$network" --astra-system "$system" \
        --astra-memory "$memory" --astra-congestion "$congestion" --timeline "$tmp/tl.csv" \
        --astra-injection-scale "$injection" ${rdv_flag:+"$rdv_flag"} \
        --astra-num-queues-per-dim "$queues" \
        >/dev/null 2>"$tmp/serr"; then
        awk -F, 'NR > 1 && $11 > m[$3] {m[$3] = $11} END {for (r in m) print r, m[r]}' \
            "$tmp/tl.csv" | sort >"$tmp/s"
        ran=yes
    else
        ran=no
    fi
    mismatch=""
    [ "$ran" = yes ] && mismatch=$(join "$tmp/a" "$tmp/s" | awk '$2 != $3 {print; exit}')
    if [ "$ran" = yes ] && [ -z "$mismatch" ] && [ "$done_ranks" -ge "$ranks" ]; then
        verdict=same; same=$((same + 1))
        detail="makespan $(awk '{print $2}' "$tmp/s" | sort -n | tail -1) ns"
    elif [ "$ran" = no ] && [ "$done_ranks" -lt "$ranks" ] &&
        { [ "$aborted" = no ] || grep -q 'unreleased nodes' "$tmp/aout"; }; then
        verdict=both-stop; stop=$((stop + 1))
        # shiftsim's reason: the stall, else its message (a collective that never ends, ...)
        why=$(grep -o 'the run stalled[^(]*' "$tmp/serr" | head -1 || true)
        [ -n "$why" ] || why=$(grep -o 'rank [0-9]*: .*' "$tmp/serr" | tail -1 || true)
        detail="ASTRA-sim finished $done_ranks of $ranks ranks; shiftsim: $why"
    elif [ "$ran" = yes ] && [ -z "$mismatch" ] && [ "$aborted" = yes ]; then
        verdict="same-part"; part=$((part + 1))
        detail="ASTRA-sim's report aborted after $done_ranks of $ranks ranks, each the same"
    else
        verdict=DIFF; differ=$((differ + 1))
        detail="ASTRA-sim finished $done_ranks of $ranks ranks; shiftsim"
        if [ "$ran" = yes ]; then
            detail="$detail ran${mismatch:+; rank, ASTRA-sim, shiftsim: $mismatch}"
        else
            detail="$detail: $(grep shiftsim "$tmp/serr" | tail -1)"
        fi
    fi
    printf '%-9s seed %s  %s\n' "$verdict" "$seed" "$detail"
done
echo "$same same, $stop both stopped, $part same where ASTRA-sim's report aborted, $differ differ" \
    "(chakra-gen random --ranks $ranks --nodes $nodes --kinds $kinds $independent;" \
    "$(basename "$network"), $(basename "$system"), $(basename "$memory"), $congestion," \
    "injection-scale $injection, rendezvous $rendezvous, $queues queues a dimension)"
[ "$differ" -eq 0 ]
