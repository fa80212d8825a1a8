# tova eval: accuracy vs budget (vt). Re-draw with: gnuplot acc-vt.gp
$d0 << EOD
# budget accuracy%
128 0.000
256 0.000
512 0.000
EOD
$d1 << EOD
# budget accuracy%
128 0.000
256 0.000
512 0.000
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
$d4 << EOD
# budget accuracy%
128 0.000
256 0.000
512 0.000
EOD
$d5 << EOD
# budget accuracy%
128 0.000
256 0.000
512 0.000
EOD
$d6 << EOD
# budget accuracy%
128 0.000
256 0.000
512 0.000
EOD
$d7 << EOD
# budget accuracy%
128 0.000
256 0.000
512 0.000
EOD
$d8 << EOD
# budget accuracy%
128 0.000
256 0.000
512 0.000
EOD
$d9 << EOD
# budget accuracy%
128 0.000
256 0.000
512 0.000
EOD
$d10 << EOD
# budget accuracy%
128 0.000
256 0.000
512 0.000
EOD
set encoding utf8
set title "niah-13m-f16.gguf: 1 samples per cell, seed 42: vt" noenhanced
set xlabel "budget k (states kept per layer)"
set ylabel "accuracy (%)"
set yrange [-3:103]
set key outside right top noenhanced
set grid
set logscale x 2
set xrange [91.42857142857143:716.8]
set xtics (128, 256, 512)
set terminal pngcairo size 1000,640 font ",11"
set output "acc-vt.png"
plot $d0 using 1:2 with linespoints lw 2 pt 5 ps 1 lc rgb "#332288" dt 1 title "window", \
     $d1 using 1:2 with linespoints lw 2 pt 6 ps 1 lc rgb "#cc6677" dt (10,5) title "sink:4", \
     $d2 using 1:2 with linespoints lw 2 pt 7 ps 1 lc rgb "#117733" dt (3,4) title "h2o", \
     $d3 using 1:2 with linespoints lw 2 pt 8 ps 1 lc rgb "#ddcc77" dt (12,4,3,4) title "tova", \
     $d4 using 1:2 with linespoints lw 2 pt 9 ps 1 lc rgb "#88ccee" dt (18,6) title "snapkv", \
     $d5 using 1:2 with linespoints lw 2 pt 10 ps 1 lc rgb "#882255" dt (6,6) title "keydiff", \
     $d6 using 1:2 with linespoints lw 2 pt 11 ps 1 lc rgb "#44aa99" dt (14,4,3,4,3,4) title "kvzip", \
     $d7 using 1:2 with linespoints lw 2 pt 12 ps 1 lc rgb "#999933" dt (8,3) title "expected-attention", \
     $d8 using 1:2 with linespoints lw 2 pt 13 ps 1 lc rgb "#aa4499" dt (2,8) title "rkv", \
     $d9 using 1:2 with linespoints lw 2 pt 5 ps 1 lc rgb "#ee6677" dt (12,3,2,3) title "tova+merge", \
     $d10 using 1:2 with linespoints lw 2 pt 6 ps 1 lc rgb "#4477aa" dt (20,4,6,4) title "h2o+merge", \
     0.000 with lines dt 2 lw 2 lc rgb "black" title "full"
set terminal svg size 1000,640 dynamic font ",11"
set output "acc-vt.svg"
replot
unset output
