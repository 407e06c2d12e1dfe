# The predicted commshift gain over alpa for GPT-J 6B on one cluster, every split of 8 to 64 GPUs
# (the tables of docs/placement.md), from plots/commshift-gains-CLUSTER.csv: a group of bars per
# split, communication once, twice and four times (--comm-repeat), splits grouped by GPU count.
#
#   gnuplot -e "cluster='tsubame4'" plots/commshift-gains.gp      (from the repository root)
#
# Writes plots/commshift-gains-CLUSTER.png.  Bars start at zero.  Only the splits commshift can
# change are drawn, pp > 1 and dp > 1: with pp = 1 there is no cool-down to shorten and with
# dp = 1 no gradient all-reduce to move (the tables list them, at +0.0%).  The dashed line is the
# paper's "up to 27%".
if (!exists("cluster")) cluster = 'tsubame4'
csv = sprintf('plots/commshift-gains-%s.csv', cluster)
rows = sprintf('< awk -F, ''NR > 1 && $2 > 1 && $4 > 1'' %s', csv)
set terminal pngcairo noenhanced size 900,520 font ',11'
set output sprintf('plots/commshift-gains-%s.png', cluster)
set datafile separator ','
set title sprintf('GPT-J 6B on %s: predicted commshift gain over alpa per split (dp x tp x pp)', cluster)
set ylabel 'step-time gain (%)'
set xlabel 'GPUs: dp x tp x pp'
set yrange [0:*]
set offsets 0, 0, graph 0.06, 0  # headroom: the tallest bar never touches the frame
set grid ytics
set style data histograms
set style histogram clustered gap 1
set style fill solid 1.0 noborder
set boxwidth 0.9
set xtics rotate by -45 scale 0
set key inside top left reverse Left samplen 2
set linetype 1 lc rgb '#0072b2'
set linetype 2 lc rgb '#56b4e9'
set linetype 3 lc rgb '#d55e00'
label(g, d, t, p) = sprintf('%d: %dx%dx%d', g, d, t, p)
set arrow from graph 0, first 27 to graph 1, first 27 nohead dt 2 lw 1.5 lc rgb '#404040' front
set label 'paper: up to 27%' at graph 0.01, first 27 left offset 0,0.6 front
plot rows using (column(10)):xtic(label($1, $2, $3, $4)) lt 1 title 'communication x1', \
     '' using (column(11)) lt 2 title 'x2', \
     '' using (column(12)) lt 3 title 'x4'
