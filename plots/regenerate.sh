#!/usr/bin/env bash
# Redraws every picture the documentation shows, with the commands written next to each image
# in docs/*.md, and keeps only the images: each command also writes its .dat and .gp (and
# compare a step-bar chart and a Gantt chart per policy), which are removed here unless named.
# Needs gnuplot.  Takes a few minutes (the vTrain validation simulates 1,440 runs).
#
#   plots/regenerate.sh                 (from the repository root, after `meson compile -C build`)
#   SHIFTSIM=path/to/shiftsim plots/regenerate.sh
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
shiftsim=${SHIFTSIM:-$here/build/shiftsim}
export SHIFTSIM_DATA=${SHIFTSIM_DATA:-$here}
command -v gnuplot >/dev/null || { echo "regenerate.sh: gnuplot is needed" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

run() { # the command as the docs show it, "shiftsim ..." run with $shiftsim, quiet
    echo "+ $*" >&2
    "$shiftsim" "${@:2}" >/dev/null
}

# docs/placement.md: the cool-down cascade under alpa and its removal under commshift, a window
# of the first 60 ms, and the step of every policy.
run shiftsim compare --cluster tsubame4 --nodes 8 --tp 2 --pp 4 -B 64 -p alpa,commshift \
    --plot plots/compare-gantt.png
run shiftsim compare --cluster tsubame4 --nodes 8 --tp 2 --pp 4 -B 64 -p alpa \
    --plot plots/compare-window.png --plot-window 0:60
run shiftsim compare --cluster tsubame4 --nodes 8 --tp 2 --pp 4 -B 64 --plot plots/compare-policies.png

# docs/placement.md: the predicted gains per split, from the CSVs plots/commshift-gains.sh writes
# (rerun that script first to recompute them).
for cluster in tsubame4 dgx-h200; do
    echo "+ gnuplot -e \"cluster='$cluster'\" plots/commshift-gains.gp" >&2
    gnuplot -e "cluster='$cluster'" plots/commshift-gains.gp
done

# docs/sweep.md: the best tokens/s of each split of 32 H100s.
run shiftsim sweep --model gpt-j-6b --cluster dgx-h100 --gpus 32 \
    --placements alpa,commshift,megatron -k 6 -o "$work/sweep-gptj.csv" --plot plots/sweep-gptj

# docs/simulate.md: ZeRO-3's gathers one layer ahead of the compute, the first 150 ms.
run shiftsim simulate --zero 3 -p megatron --pp 2 --plot plots/simulate-zero3-gantt.png \
    --plot-window 0:150

# docs/validation.md: predicted vs measured on the calibrated A100.
run shiftsim validate --cluster dgx-a100-calibrated --plot plots/validate-vtrain-calibrated.png
run shiftsim validate --runs traces/validation/published-a100.csv --cluster dgx-a100-calibrated \
    --plot plots/validate-published-calibrated.png
run shiftsim validate --runs traces/validation/published-a100-scaling.csv \
    --cluster dgx-a100-calibrated --plot plots/validate-scaling-calibrated.png

# Keep the images the docs show; drop the data, scripts and charts they do not.
keep=(commshift-gains-tsubame4 commshift-gains-dgx-h200 compare-gantt-alpa compare-gantt-commshift compare-window-alpa compare-policies
    sweep-gptj-throughput sweep-gptj-heatmap validate-vtrain-calibrated
    validate-published-calibrated validate-scaling-calibrated simulate-zero3-gantt)
for f in plots/commshift-gains-*.png plots/compare-* plots/sweep-gptj-* plots/validate-* \
    plots/simulate-zero3-*; do
    base=$(basename "$f")
    stem=${base%.*}
    if [[ $base != *.png || " ${keep[*]} " != *" $stem "* ]]; then
        rm -f "$f"
    fi
done
ls -l plots/*.png >&2
