#!/usr/bin/env bash
# Replays Chakra trace sets with shiftsim, under its own semantics and under ASTRA-sim's
# (--semantics astra), and, given an ASTRA-sim build, with ASTRA-sim's analytical backend too,
# and prints per set the simulated time, wall time, user time and peak RSS of each, and their
# ratios (docs/chakra.md shows the table this makes).
#
#   compare.sh [-s SHIFTSIM] [-g CHAKRA_GEN] [--astra BIN] [--astra-aware BIN]
#              [--semantics both|shiftsim|astra] [--big DIR] [--huge] [--] [PREFIX...]
#
#   PREFIX      a trace set: PREFIX.0.et, PREFIX.1.et, ... (default: every set under this
#               directory, found by its *.0.et file)
#   -s PATH     the shiftsim binary (default: $SHIFTSIM, else build*/shiftsim, else PATH)
#   -g PATH     the trace generator (default: $CHAKRA_GEN, else build*/tests/import/chakra-gen)
#   --astra BIN          ASTRA-sim's AstraSim_Analytical_Congestion_Unaware, built outside this
#                        repository (docs/chakra.md says how); adds its columns and the ratios
#   --astra-aware BIN    AstraSim_Analytical_Congestion_Aware too (two more columns; with the
#                        astra-mode run, also `--astra-congestion aware` and its difference)
#   --semantics S        which shiftsim replays to run: both (default), shiftsim or astra
#   --big DIR   first write the measurement sets into DIR with chakra-gen and replay them too:
#               a 1 MiB all-reduce over 64, 512 and 1024 ranks, and a GPT-like 3D-parallel step
#               on 512 ranks (dp 8 x tp 8 x pp 8, 32 layers, 8 microbatches; ~147k nodes)
#   --huge      with --big, also the 512-rank GPT-3-sized step (96 layers, hidden 12288,
#               16 microbatches; ~821k nodes, 76 MB of traces)
#
# Both tools are given the same machine: one switch of ASTRA_BW GB/s (ASTRA-sim's GB are 2^30
# bytes; default 400) and ASTRA_LAT ns (default 936.25) between every pair of ranks, compute at
# ASTRA_TFLOPS (900) and memory at ASTRA_MEM GB/s (1600) by roofline; ASTRA-sim's system is its
# example native_collectives/Ring_4chunks.json with the roofline on (written to a scratch
# directory).  `replay --semantics astra` reads the very network YAML and system JSON given to
# ASTRA-sim ($ASTRA_ARGS adds to its options).  shiftsim's own semantics gets the same figures as
# --tflops, --hbm-gbps and --link-bw, and as --alpha the latency ASTRA-sim charges one ring step
# (4 chunks in turn, each crossing the switch twice, plus a 10 ns endpoint delay: 7510 ns);
# $REPLAY_ARGS replaces them.  Its simulated times differ as far as the two models do
# (docs/chakra.md lists how).
#
# Output: one row per set: set, ranks, then per run (shiftsim's semantics "shiftsim", ASTRA-sim's
# semantics "astra-mode", ASTRA-sim itself "ASTRA") the simulated time (ms), wall time (s), user
# time (s) and peak RSS (MiB); then ASTRA-sim's wall, user time and RSS over each shiftsim run's
# (x_s: shiftsim semantics, x_a: astra semantics), and each run's simulated time's difference
# from ASTRA-sim's (d_s, d_a).  Times and RSS come from /usr/bin/time -v when it exists, else from
# bash's clock (no user time or RSS).  ASTRA-sim's runs of 64 ranks or more abort at exit (a
# double free in CollectivePlan::~CollectivePlan) after printing complete results: a run that
# printed every rank's "sys[i] finished" line counts as done whatever its exit status.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
shiftsim=${SHIFTSIM:-}
gen=${CHAKRA_GEN:-}
astra=""
astra_aware=""
big=""
huge=0
semantics=both
sets=()

while [ $# -gt 0 ]; do
    case "$1" in
        -s) shiftsim=$2; shift 2 ;;
        -g) gen=$2; shift 2 ;;
        --astra) astra=$2; shift 2 ;;
        --astra-aware) astra_aware=$2; shift 2 ;;
        --big) big=$2; shift 2 ;;
        --huge) huge=1; shift ;;
        --semantics) semantics=$2; shift 2 ;;
        -h|--help) sed -n '2,45p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
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
case "$semantics" in
    both|shiftsim|astra) ;;
    *) echo "compare.sh: --semantics must be both, shiftsim or astra" >&2; exit 2 ;;
esac
run_own=1; run_am=1
[ "$semantics" = astra ] && run_own=0
[ "$semantics" = shiftsim ] && run_am=0
for b in "$astra" "$astra_aware"; do
    if [ -n "$b" ] && [ ! -x "$b" ]; then
        echo "compare.sh: $b is not an executable ASTRA-sim binary" >&2
        exit 2
    fi
done

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

# The shared machine.
bw=${ASTRA_BW:-400}
lat=${ASTRA_LAT:-936.25}
tflops=${ASTRA_TFLOPS:-900}
mem=${ASTRA_MEM:-1600}
gib=1073741824
default_args="--tflops $tflops --hbm-gbps $(awk -v m="$mem" -v g=$gib 'BEGIN {printf "%.6f", m * g / 1e9}')"
default_args+=" --link-bw $(awk -v b="$bw" -v g=$gib 'BEGIN {printf "%.0f", b * g}')"
# A ring step in ASTRA-sim: preferred-dataset-splits (4) chunks one after the other, each crossing
# the switch twice, plus the 10 ns endpoint delay; shiftsim's alpha is that step's latency.
default_args+=" --alpha $(awk -v l="$lat" 'BEGIN {printf "%.0f", 4 * 2 * l + 10}')ns"
replay_args=${REPLAY_ARGS-$default_args}

have_time=0
if [ -x /usr/bin/time ] && /usr/bin/time -v true >/dev/null 2>&1; then have_time=1; fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

write_network() {
    cat >"$tmp/network.yml" <<EOF
topology: [ Switch ]
npus_count: [ $1 ]
bandwidth: [ $bw ]
latency: [ $lat ]
EOF
}
{
    cat >"$tmp/system.json" <<EOF
{
    "scheduling-policy": "LIFO",
    "endpoint-delay": 10,
    "active-chunks-per-dimension": 1,
    "preferred-dataset-splits": 4,
    "all-reduce-implementation": ["ring"],
    "all-gather-implementation": ["ring"],
    "reduce-scatter-implementation": ["ring"],
    "all-to-all-implementation": ["ring"],
    "collective-optimization": "localBWAware",
    "local-mem-bw": $mem,
    "boost-mode": 0,
    "roofline-enabled": 1,
    "peak-perf": $tflops
}
EOF
    echo '{"memory-type": "NO_MEMORY_EXPANSION"}' >"$tmp/memory.json"
}

# Runs "$@", setting wall, user, rss (MiB) from /usr/bin/time, or wall only; returns its status.
measure() {
    local out=$1 err=$2
    shift 2
    wall=-; user=-; rss=-
    if [ "$have_time" = 1 ]; then
        local rc=0
        /usr/bin/time -v -o "$tmp/time" "$@" >"$out" 2>"$err" || rc=$?
        wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {n = split($2, a, ":"); s = 0;
                   for (i = 1; i <= n; i++) s = s * 60 + a[i]; printf "%.3f", s}' "$tmp/time")
        user=$(awk -F': ' '/User time/ {printf "%.3f", $2}' "$tmp/time")
        rss=$(awk -F': ' '/Maximum resident set size/ {printf "%.1f", $2 / 1024}' "$tmp/time")
        return $rc
    fi
    local t0 t1 rc=0
    t0=$(date +%s.%N)
    "$@" >"$out" 2>"$err" || rc=$?
    t1=$(date +%s.%N)
    wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f", b - a}')
    return $rc
}

# ASTRA-sim on set $1 of $2 ranks with binary $3: sets a_ms, a_wall, a_user, a_rss.
run_astra() {
    local p=$1 n=$2 bin=$3
    write_network "$n"
    local groups=empty
    [ -e "$p.json" ] && groups="$p.json"
    mkdir -p "$tmp/astra-log"
    measure "$tmp/aout" "$tmp/aerr" "$bin" --workload-configuration="$p" \
        --comm-group-configuration="$groups" --system-configuration="$tmp/system.json" \
        --remote-memory-configuration="$tmp/memory.json" --network-configuration="$tmp/network.yml" \
        --logging-folder="$tmp/astra-log" || true
    local finished
    finished=$(grep -c 'sys\[[0-9]*\] finished' "$tmp/aout" "$tmp/aerr" 2>/dev/null | awk -F: '{s += $NF} END {print s + 0}')
    if [ "$finished" -lt "$n" ]; then
        a_ms=failed; a_wall=-; a_user=-; a_rss=-
        echo "compare.sh: $bin on $p: $finished of $n ranks finished: $(tail -c 300 "$tmp/aerr" "$tmp/aout" | tr '\n' ' ')" >&2
        return 1
    fi
    a_ms=$(cat "$tmp/aout" "$tmp/aerr" | sed -n 's/.*sys\[[0-9]*\] finished, \([0-9]*\) cycles.*/\1/p' |
        awk 'BEGIN {m = 0} $1 > m {m = $1} END {printf "%.6f", m / 1e6}')
    a_wall=$wall; a_user=$user; a_rss=$rss
}

ratio() {
    awk -v a="$1" -v b="$2" 'BEGIN {if (a == "-" || b == "-" || b + 0 == 0) print "-";
                                     else printf "%.1fx", a / b}'
}

header="$(printf '%-44s %6s' set ranks)"
[ "$run_own" = 1 ] && header+="$(printf ' | %12s %8s %8s %8s' shiftsim_ms wall_s user_s rss_MiB)"
[ "$run_am" = 1 ] && header+="$(printf ' | %13s %8s %8s %8s' astra-mode_ms wall_s user_s rss_MiB)"
if [ -n "$astra" ]; then
    header+="$(printf ' | %12s %8s %8s %8s' ASTRA_ms wall_s user_s rss_MiB)"
    [ -n "$astra_aware" ] && header+="$(printf ' | %12s %8s' aware_ms wall_s)"
    [ -n "$astra_aware" ] && [ "$run_am" = 1 ] &&
        header+="$(printf ' | %13s %8s' aware-mode_ms d_aw)"
    [ "$run_own" = 1 ] && header+="$(printf ' | %7s %7s %7s %8s' wall_xs user_xs rss_xs d_s)"
    [ "$run_am" = 1 ] && header+="$(printf ' | %7s %7s %7s %8s' wall_xa user_xa rss_xa d_a)"
fi
echo "$header"

# shiftsim replay of set $1 with the rest as options: sets ms, and wall, user, rss; 1 on failure.
run_shiftsim() {
    local p=$1
    shift
    if ! measure "$tmp/out" "$tmp/err" "$shiftsim" replay --chakra "$p" --format json "$@"; then
        ms=failed
        return 1
    fi
    local ns
    ns=$(sed -n 's/^ *"makespan_ns" *: *\([0-9]*\).*/\1/p;T;q' "$tmp/out")
    ms=$(awk -v n="${ns:-0}" 'BEGIN {printf "%.6f", n / 1e6}')
}

diff_pct() {
    awk -v s="$1" -v a="$2" 'BEGIN {if (a == "failed" || s == "failed" || a + 0 == 0) print "-";
                                   else printf "%+.2f%%", 100 * (s - a) / a}'
}

status=0
for p in "${sets[@]}"; do
    ranks=0
    while [ -e "$p.$ranks.et" ]; do ranks=$((ranks + 1)); done
    name=${p#"$root"/}
    [ ${#name} -gt 44 ] && name=...${name: -41}
    row="$(printf '%-44s %6s' "$name" "$ranks")"
    if [ "$run_own" = 1 ]; then
        # shellcheck disable=SC2086
        if ! run_shiftsim "$p" $replay_args; then
            if ! grep -q 'deadlock at' "$tmp/err"; then
                printf '%-44s %6s  shiftsim failed: %s\n' "$name" "$ranks" "$(head -c 300 "$tmp/err")"
                status=1; continue
            fi
            # A trace that cannot progress when a send waits for its receive (every rank of a
            # ring sending first: ASTRA-sim's custom-collective traces), where ASTRA-sim's eager
            # sends go on: say so and go on with the other columns.
            echo "compare.sh: $name: shiftsim: $(grep -v '^chakra:' "$tmp/err" | head -c 300)" >&2
            wall=-; user=-; rss=-
        fi
        s_ms=$ms; s_wall=$wall; s_user=$user; s_rss=$rss
        row+="$(printf ' | %12s %8s %8s %8s' "$ms" "$wall" "$user" "$rss")"
    fi
    if [ "$run_am" = 1 ]; then
        write_network "$ranks"
        # shellcheck disable=SC2086
        if ! run_shiftsim "$p" --astra-network "$tmp/network.yml" \
            --astra-system "$tmp/system.json" ${ASTRA_ARGS:-}; then
            # A trace ASTRA-sim's rules cannot run (it stalls or is refused, as in ASTRA-sim):
            # say why and go on with the other columns.
            echo "compare.sh: $name: shiftsim --semantics astra: $(grep -v '^chakra:' "$tmp/err" | head -c 400)" >&2
            wall=-; user=-; rss=-
        fi
        m_ms=$ms; m_wall=$wall; m_user=$user; m_rss=$rss
        row+="$(printf ' | %13s %8s %8s %8s' "$ms" "$wall" "$user" "$rss")"
    fi
    if [ -n "$astra" ]; then
        run_astra "$p" "$ranks" "$astra" || status=1
        row+="$(printf ' | %12s %8s %8s %8s' "$a_ms" "$a_wall" "$a_user" "$a_rss")"
        u_ms=$a_ms; u_wall=$a_wall; u_user=$a_user; u_rss=$a_rss
        if [ -n "$astra_aware" ]; then
            run_astra "$p" "$ranks" "$astra_aware" || status=1
            row+="$(printf ' | %12s %8s' "$a_ms" "$a_wall")"
            if [ "$run_am" = 1 ]; then
                # The same files under --astra-congestion aware, against the aware backend.
                # shellcheck disable=SC2086
                run_shiftsim "$p" --astra-network "$tmp/network.yml" \
                    --astra-system "$tmp/system.json" --astra-congestion aware \
                    ${ASTRA_ARGS:-} || true
                row+="$(printf ' | %13s %8s' "$ms" "$(diff_pct "$ms" "$a_ms")")"
            fi
        fi
        if [ "$run_own" = 1 ]; then
            row+="$(printf ' | %7s %7s %7s %8s' "$(ratio "$u_wall" "$s_wall")" \
                "$(ratio "$u_user" "$s_user")" "$(ratio "$u_rss" "$s_rss")" "$(diff_pct "$s_ms" "$u_ms")")"
        fi
        if [ "$run_am" = 1 ]; then
            row+="$(printf ' | %7s %7s %7s %8s' "$(ratio "$u_wall" "$m_wall")" \
                "$(ratio "$u_user" "$m_user")" "$(ratio "$u_rss" "$m_rss")" "$(diff_pct "$m_ms" "$u_ms")")"
        fi
    fi
    echo "$row"
done
exit $status
