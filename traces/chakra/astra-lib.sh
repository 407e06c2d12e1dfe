# shellcheck shell=bash
# Helpers shared by astra-matrix.sh and astra-random.sh (sourced, not run).

# Prints the calling script's header comment (its usage) and exits 2.
usage() {
    awk 'NR > 1 && /^#/ {sub(/^# ?/, ""); print; next} NR > 1 {exit}' "$0" >&2
    exit 2
}

# The absolute path of FILE (ASTRA-sim runs in a scratch folder, so every path it reads is).
abs() { (cd "$(dirname "$1")" && printf '%s/%s' "$(pwd)" "$(basename "$1")"); }

# The NPU count of an ASTRA-sim network file (the product of its npus_count list), and its
# number of dimensions.
npus() {
    sed -n 's/^npus_count:[^[]*\[\([^]]*\)\].*/\1/p' "$1" | tr ',' '\n' |
        awk '{n = (NR == 1 ? $1 : n * $1)} END {print n + 0}'
}
dims() {
    sed -n 's/^npus_count:[^[]*\[\([^]]*\)\].*/\1/p' "$1" | tr ',' '\n' | grep -c '[0-9]'
}

# A binary of this repository's build: ROOT/build/REL, else ROOT/build*/REL, else NAME on PATH.
find_built() { # ROOT NAME REL
    for c in "$1"/build/"$3" "$1"/build*/"$3"; do
        [ -x "$c" ] && { printf '%s' "$c"; return; }
    done
    command -v "$2" || true
}
