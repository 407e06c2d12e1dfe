#!/usr/bin/env bash
# Builds shiftsim's libFuzzer targets and runs each for a while.
#
#   tests/fuzz/run.sh [SECONDS] [TARGET...]     (default: 60 seconds, every target)
#
# The library is compiled once by meson into build-fuzz/ with clang, AddressSanitizer,
# UndefinedBehaviorSanitizer and libFuzzer's coverage instrumentation, without link-time
# optimisation (the project's default b_lto=true makes clang emit LLVM bitcode archives that the
# targets' plain link cannot read; the main build is not touched); each
# tests/fuzz/fuzz_<target>.c is then linked against it.  Each target runs one at a
# time, starting from its seed corpus tests/fuzz/corpus/<target>/ (read only: new inputs go to
# build-fuzz/corpus/<target>/), and stops at the first crash, leak, sanitizer report or hang
# (-timeout, seconds per input), leaving the input in build-fuzz/crash-<target>-*.  Inputs may be
# up to FUZZ_MAX_LEN bytes (default 256 KiB: room for JSON nested past the readers' depth bound,
# which a 150 KB file of 75,000 levels crossed when the cap was 64 KB).
# The per-target line gives the executions, the coverage (edges) and the verdict.
# Environment: CC (default clang), FUZZ_JOBS (ninja -j, default 2), FUZZ_ARGS (more libFuzzer
# options), FUZZ_NICE (default 19), FUZZ_MAX_LEN (bytes, default 262144), FUZZ_DIR (the build
# directory, default build-fuzz).
set -uo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
secs=${1:-60}
[ $# -gt 0 ] && shift
all=()
for f in tests/fuzz/fuzz_*.c; do
    t=${f##*/fuzz_}
    all+=("${t%.c}")
done
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=("${all[@]}")

export CC=${CC:-clang}
san="-fsanitize=address,undefined"
bdir=${FUZZ_DIR:-build-fuzz}
setup=(-Dtests=disabled -Dcuda=disabled -Db_lundef=false -Db_lto=false
    -Db_sanitize=address,undefined -Dbuildtype=debugoptimized
    "-Dc_args=-fsanitize=fuzzer-no-link -fno-sanitize-recover=undefined")
if [ ! -f $bdir/build.ninja ]; then
    meson setup $bdir "${setup[@]}" >/dev/null || exit 1
else
    # A directory set up before b_lto was given keeps LTO: set every option again.
    meson configure $bdir "${setup[@]}" >/dev/null 2>&1 || exit 1
fi
nice -n "${FUZZ_NICE:-19}" ninja -C $bdir -j "${FUZZ_JOBS:-2}" src/libshiftsim.a \
    >$bdir/build.log 2>&1 || {
    tail -20 $bdir/build.log >&2
    echo "run.sh: building libshiftsim with $CC failed (log: $bdir/build.log)" >&2
    exit 1
}
libs=$(pkg-config --libs glib-2.0 json-glib-1.0 gsl libprotobuf-c)
cflags=$(pkg-config --cflags glib-2.0 json-glib-1.0)
status=0
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export SHIFTSIM_DATA=$root
# Targets that need files (chakra) make them under $TMPDIR: keep those inside build-fuzz.
export TMPDIR=$root/$bdir/tmp
mkdir -p "$TMPDIR"
for t in "${targets[@]}"; do
    src=tests/fuzz/fuzz_$t.c
    if [ ! -f "$src" ]; then
        echo "run.sh: no target '$t' (have: ${all[*]})" >&2
        status=1
        continue
    fi
    exe=$bdir/fuzz_$t
    if [ ! -x "$exe" ] || [ "$src" -nt "$exe" ] || [ $bdir/src/libshiftsim.a -nt "$exe" ]; then
        $CC -g -O1 -std=c11 -D_GNU_SOURCE -Wall -Wextra -fsanitize=fuzzer $san \
            -Iinclude -I$bdir -I$bdir/src/import $cflags "$src" \
            $bdir/src/libshiftsim.a $libs -lcsv -lm -o "$exe" || { status=1; continue; }
    fi
    mkdir -p $bdir/corpus/$t tests/fuzz/corpus/$t
    log=$bdir/fuzz_$t.log
    nice -n "${FUZZ_NICE:-19}" "$exe" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
        -max_len="${FUZZ_MAX_LEN:-262144}" -print_final_stats=1 -artifact_prefix="$bdir/crash-$t-" \
        ${FUZZ_ARGS:-} $bdir/corpus/$t tests/fuzz/corpus/$t >"$log" 2>&1
    rc=$?
    rm -rf "${TMPDIR:?}"/ssim-fuzz-*
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1)
    if [ $rc -eq 0 ]; then
        verdict="no crash"
    else
        verdict="FAILED (exit $rc): $(grep -m1 -E 'ERROR|runtime error|Timeout|leak' "$log") -> \
$(ls -t $bdir/crash-$t-* 2>/dev/null | head -1); see $log"
        status=1
    fi
    printf '%-10s %4ss  runs %-10s %-10s %s\n' "$t" "$secs" "${runs:-?}" "${cov:-cov: ?}" \
        "$verdict"
done
exit $status
