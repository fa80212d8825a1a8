# tova eval: accuracy vs budget (niah_multikey). Re-draw with: gnuplot acc-niah_multikey.gp
$d0 << EOD
# budget accuracy%
128 16.667
256 58.333
512 66.667
EOD
$d1 << EOD
# budget accuracy%
128 75.000
256 75.000
512 75.000
EOD
$d2 << EOD
# budget accuracy%
128 0.000
256 0.000
512 0.000
EOD
$d3 << EOD
# budget accuracy%
128 0.000
256 0.000
512 0.000
EOD
set encoding utf8
set title "niah-13m-f16.gguf: 3 samples per cell, seed 2002: niah_multikey" noenhanced
set xlabel "budget k (states kept per layer)"
set ylabel "accuracy (%)"
set yrange [-3:103]
set key outside right top noenhanced
set grid
set logscale x 2
set xrange [91.42857142857143:716.8]
set xtics (128, 256, 512)
set terminal pngcairo size 1000,640 font ",11"
set output "acc-niah_multikey.png"
plot $d0 using 1:2 with linespoints lw 2 pt 5 ps 1 lc rgb "#332288" dt 1 title "snapkv", \
     $d1 using 1:2 with linespoints lw 2 pt 6 ps 1 lc rgb "#cc6677" dt (10,5) title "kvzip", \
     $d2 using 1:2 with linespoints lw 2 pt 7 ps 1 lc rgb "#117733" dt (3,4) title "expected-attention", \
     $d3 using 1:2 with linespoints lw 2 pt 8 ps 1 lc rgb "#ddcc77" dt (12,4,3,4) title "tova", \
     75.000 with lines dt 2 lw 2 lc rgb "black" title "full"
set terminal svg size 1000,640 dynamic font ",11"
set output "acc-niah_multikey.svg"
replot
unset output
