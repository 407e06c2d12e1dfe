#!/usr/bin/env bash
# Checks `replay --semantics astra` against ASTRA-sim over every combination of trace sets,
# ASTRA-sim network files and system files: each is run by both, and ASTRA-sim's simulated time
# (the largest "sys[i] finished, N cycles") is compared with shiftsim's makespan, to the
# nanosecond.  docs/chakra.md ("Side by side with ASTRA-sim") gives the runs this was made for.
#
#   astra-matrix.sh --astra BIN [--congestion aware] [-s SHIFTSIM] --network FILE...
#                   --system FILE... [--memory FILE...] -- PREFIX...
#
#   --astra BIN     ASTRA-sim's AstraSim_Analytical_Congestion_Unaware, built outside this
#                   repository (docs/chakra.md says how)
#   --congestion aware   BIN is AstraSim_Analytical_Congestion_Aware instead, and shiftsim
#                   replays with --astra-congestion aware; networks of more than one dimension,
#                   which that backend does not build, are skipped
#   -s PATH         the shiftsim binary (default: $SHIFTSIM, else build*/shiftsim, else PATH)
#   --network FILE  an ASTRA-sim network YAML (repeat the option for more); only the files whose
#                   NPU count is a set's rank count are run with that set
#   --system FILE   an ASTRA-sim system JSON (repeat the option for more)
#   --memory FILE   an ASTRA-sim remote memory JSON, given to shiftsim as --astra-memory (repeat
#                   the option for more; each line then names it too; default: ASTRA-sim's
#                   NO_MEMORY_EXPANSION example, shiftsim's default)
#   PREFIX          a trace set: PREFIX.0.et, PREFIX.1.et, ... and, when present, PREFIX.json
#                   (its comm groups)
#
# Output: a line per run, "same", "DIFF" or "ASTRA-FAILED", the set, the network, the system and
# both times (ns); then the counts.  Exit status 1 when a run differs (or shiftsim fails), 2 on a
# usage error.  ASTRA-sim often aborts at exit after printing complete results (heap corruption,
# docs/chakra.md): a run that printed every rank's "sys[i] finished" line counts as done whatever
# its exit status.  One that died before that is tried again, up to three times, and otherwise
# reported as ASTRA-FAILED with the largest time it printed: ASTRA-sim's failure, not a result.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
shiftsim=${SHIFTSIM:-}
astra=""
congestion=unaware
networks=()
systems=()
memories=()
sets=()

# shellcheck source=traces/chakra/astra-lib.sh
. "$here/astra-lib.sh"

[ $# -gt 0 ] || usage
while [ $# -gt 0 ]; do
    case "$1" in
        --astra) astra=$2; shift 2 ;;
        --congestion) congestion=$2; shift 2 ;;
        -s) shiftsim=$2; shift 2 ;;
        --network) networks+=("$2"); shift 2 ;;
        --system) systems+=("$2"); shift 2 ;;
        --memory) memories+=("$2"); shift 2 ;;
        -h|--help) usage ;;
        --) shift; sets+=("$@"); break ;;
        -*) echo "astra-matrix.sh: unknown option $1" >&2; exit 2 ;;
        *) sets+=("$1"); shift ;;
    esac
done

[ -n "$shiftsim" ] || shiftsim=$(find_built "$root" shiftsim shiftsim)
if [ -z "$astra" ] || [ ! -x "$astra" ]; then
    echo "astra-matrix.sh: --astra BIN: not an executable: '$astra'" >&2
    exit 2
fi
case "$congestion" in
    aware|unaware) ;;
    *) echo "astra-matrix.sh: --congestion: '$congestion' is not unaware or aware" >&2; exit 2 ;;
esac
if [ -z "$shiftsim" ] || [ ! -x "$shiftsim" ]; then
    echo "astra-matrix.sh: no shiftsim binary (build it, or give -s)" >&2
    exit 2
fi
if [ ${#networks[@]} -eq 0 ] || [ ${#systems[@]} -eq 0 ] || [ ${#sets[@]} -eq 0 ]; then
    usage
fi
for f in "${networks[@]}" "${systems[@]}" "${memories[@]}"; do
    [ -f "$f" ] || { echo "astra-matrix.sh: $f: no such file" >&2; exit 2; }
done
for p in "${sets[@]}"; do
    [ -f "$p.0.et" ] || { echo "astra-matrix.sh: $p: no trace set ($p.0.et is missing)" >&2; exit 2; }
done
# ASTRA-sim runs in a scratch folder (it writes logs where it runs): every path absolute.
for i in "${!networks[@]}"; do networks[i]=$(abs "${networks[i]}"); done
for i in "${!systems[@]}"; do systems[i]=$(abs "${systems[i]}"); done
for i in "${!memories[@]}"; do memories[i]=$(abs "${memories[i]}"); done
for i in "${!sets[@]}"; do sets[i]=$(abs "${sets[i]}"); done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo '{"memory-type": "NO_MEMORY_EXPANSION"}' >"$tmp/memory.json"
named_memory=${#memories[@]}
[ "$named_memory" -gt 0 ] || memories=("$tmp/memory.json")

same=0
differ=0
failed=0
skipped=0
for p in "${sets[@]}"; do
    ranks=0
    while [ -f "$p.$ranks.et" ]; do ranks=$((ranks + 1)); done
    groups=empty
    [ -e "$p.json" ] && groups="$p.json"
    for net in "${networks[@]}"; do
        if [ "$(npus "$net")" != "$ranks" ] ||
            { [ "$congestion" = aware ] && [ "$(dims "$net")" != 1 ]; }; then
            skipped=$((skipped + 1))
            continue
        fi
        for sys in "${systems[@]}"; do
          for mem in "${memories[@]}"; do
            # ASTRA-sim now and then dies before every rank has finished (a crash, not a
            # result): such a run is tried again, up to three times in all.
            for _ in 1 2 3; do
                rm -rf "$tmp/log" && mkdir -p "$tmp/log"
                ( (cd "$tmp/log" && stdbuf -oL -eL \
                    "$astra" --workload-configuration="$p" \
                    --comm-group-configuration="$groups" --system-configuration="$sys" \
                    --remote-memory-configuration="$mem" \
                    --network-configuration="$net" --logging-folder="$tmp/log" \
                    >"$tmp/aout" 2>&1) ) 2>/dev/null || true
                done_ranks=$(grep -c 'sys\[[0-9]*\] finished' "$tmp/aout" || true)
                [ "$done_ranks" -ge "$ranks" ] && break
            done
            a=$( (grep -o 'finished, [0-9]* cycles' "$tmp/aout" || true) | awk '{print $2}' |
                sort -n | tail -1)
            s=$("$shiftsim" replay --chakra "$p" --astra-network "$net" --astra-system "$sys" \
                --astra-memory "$mem" --astra-congestion "$congestion" 2>"$tmp/serr" |
                awk '/^makespan/ {print $2}') ||
                true
            [ -n "$s" ] || s="failed: $(grep 'shiftsim' "$tmp/serr" | tail -1)"
            if [ "$done_ranks" -lt "$ranks" ]; then
                # Not a result to compare: ASTRA-sim's own failure, counted apart.
                verdict=ASTRA-FAILED; failed=$((failed + 1))
                a="(died after $done_ranks of $ranks ranks finished, 3 tries; latest ${a:-none})"
            elif [ "$a" = "$s" ]; then
                verdict=same; same=$((same + 1))
            else
                verdict=DIFF; differ=$((differ + 1))
            fi
            label=$(basename "$sys")
            [ "$named_memory" -eq 0 ] || label="$label  $(basename "$mem")"
            printf '%-4s  %s  %s  %s  astra %s  shiftsim %s\n' "$verdict" "$p" \
                "$(basename "$net")" "$label" "$a" "$s"
          done
        done
    done
done
echo "$same same, $differ differ, $failed where ASTRA-sim died before every rank finished" \
    "($skipped set/network pairs of other sizes, or dimensions, skipped)"
[ "$differ" -eq 0 ]
