# tova eval: accuracy per turn of one conversation (niah_multikey), one panel per budget. Re-draw with: gnuplot turns-niah_multikey.gp
$full << EOD
# turn accuracy%
1 100.000
2 100.000
3 33.333
4 100.000
EOD
$d0_0 << EOD
# turn accuracy%
1 33.333
2 0.000
3 33.333
4 33.333
EOD
$d0_1 << EOD
# turn accuracy%
1 66.667
2 100.000
3 33.333
4 66.667
EOD
$d0_2 << EOD
# turn accuracy%
1 0.000
2 0.000
3 0.000
4 0.000
EOD
$d0_3 << EOD
# turn accuracy%
1 0.000
2 0.000
3 0.000
4 0.000
EOD
$d1_0 << EOD
# turn accuracy%
1 33.333
2 0.000
3 33.333
4 100.000
EOD
$d1_1 << EOD
# turn accuracy%
1 66.667
2 100.000
3 33.333
4 66.667
EOD
$d1_2 << EOD
# turn accuracy%
1 0.000
2 0.000
3 0.000
4 0.000
EOD
$d1_3 << EOD
# turn accuracy%
1 0.000
2 0.000
3 0.000
4 0.000
EOD
$d2_0 << EOD
# turn accuracy%
1 100.000
2 33.333
3 33.333
4 100.000
EOD
$d2_1 << EOD
# turn accuracy%
1 100.000
2 100.000
3 33.333
4 100.000
EOD
$d2_2 << EOD
# turn accuracy%
1 0.000
2 0.000
3 0.000
4 0.000
EOD
$d2_3 << EOD
# turn accuracy%
1 0.000
2 0.000
3 0.000
4 0.000
EOD
set encoding utf8
set yrange [-3:103]
set grid
set key outside right top noenhanced
set xrange [0.8:4.2]
set xtics 1
set xlabel "turn (question asked of the same state)"
set ylabel "accuracy (%)"
set terminal pngcairo size 1420,520 font ",10"
set output "turns-niah_multikey.png"
set multiplot layout 1,3 title "niah-13m-f16.gguf: 3 samples per cell, seed 1001: niah_multikey per turn" noenhanced
set title "k = 128" noenhanced
plot $d0_0 using 1:2 with linespoints lw 2 pt 5 lc rgb "#332288" dt 1 title "snapkv", \
     $d0_1 using 1:2 with linespoints lw 2 pt 6 lc rgb "#cc6677" dt (10,5) title "kvzip", \
     $d0_2 using 1:2 with linespoints lw 2 pt 7 lc rgb "#117733" dt (3,4) title "expected-attention", \
     $d0_3 using 1:2 with linespoints lw 2 pt 8 lc rgb "#ddcc77" dt (12,4,3,4) title "tova", \
     $full using 1:2 with lines dt 2 lw 2 lc rgb "black" title "full"
set title "k = 256" noenhanced
plot $d1_0 using 1:2 with linespoints lw 2 pt 5 lc rgb "#332288" dt 1 title "snapkv", \
     $d1_1 using 1:2 with linespoints lw 2 pt 6 lc rgb "#cc6677" dt (10,5) title "kvzip", \
     $d1_2 using 1:2 with linespoints lw 2 pt 7 lc rgb "#117733" dt (3,4) title "expected-attention", \
     $d1_3 using 1:2 with linespoints lw 2 pt 8 lc rgb "#ddcc77" dt (12,4,3,4) title "tova", \
     $full using 1:2 with lines dt 2 lw 2 lc rgb "black" title "full"
set title "k = 512" noenhanced
plot $d2_0 using 1:2 with linespoints lw 2 pt 5 lc rgb "#332288" dt 1 title "snapkv", \
     $d2_1 using 1:2 with linespoints lw 2 pt 6 lc rgb "#cc6677" dt (10,5) title "kvzip", \
     $d2_2 using 1:2 with linespoints lw 2 pt 7 lc rgb "#117733" dt (3,4) title "expected-attention", \
     $d2_3 using 1:2 with linespoints lw 2 pt 8 lc rgb "#ddcc77" dt (12,4,3,4) title "tova", \
     $full using 1:2 with lines dt 2 lw 2 lc rgb "black" title "full"
unset multiplot
set terminal svg size 1420,520 dynamic font ",10"
set output "turns-niah_multikey.svg"
set multiplot layout 1,3 title "niah-13m-f16.gguf: 3 samples per cell, seed 1001: niah_multikey per turn" noenhanced
set title "k = 128" noenhanced
plot $d0_0 using 1:2 with linespoints lw 2 pt 5 lc rgb "#332288" dt 1 title "snapkv", \
     $d0_1 using 1:2 with linespoints lw 2 pt 6 lc rgb "#cc6677" dt (10,5) title "kvzip", \
     $d0_2 using 1:2 with linespoints lw 2 pt 7 lc rgb "#117733" dt (3,4) title "expected-attention", \
     $d0_3 using 1:2 with linespoints lw 2 pt 8 lc rgb "#ddcc77" dt (12,4,3,4) title "tova", \
     $full using 1:2 with lines dt 2 lw 2 lc rgb "black" title "full"
set title "k = 256" noenhanced
plot $d1_0 using 1:2 with linespoints lw 2 pt 5 lc rgb "#332288" dt 1 title "snapkv", \
     $d1_1 using 1:2 with linespoints lw 2 pt 6 lc rgb "#cc6677" dt (10,5) title "kvzip", \
     $d1_2 using 1:2 with linespoints lw 2 pt 7 lc rgb "#117733" dt (3,4) title "expected-attention", \
     $d1_3 using 1:2 with linespoints lw 2 pt 8 lc rgb "#ddcc77" dt (12,4,3,4) title "tova", \
     $full using 1:2 with lines dt 2 lw 2 lc rgb "black" title "full"
set title "k = 512" noenhanced
plot $d2_0 using 1:2 with linespoints lw 2 pt 5 lc rgb "#332288" dt 1 title "snapkv", \
     $d2_1 using 1:2 with linespoints lw 2 pt 6 lc rgb "#cc6677" dt (10,5) title "kvzip", \
     $d2_2 using 1:2 with linespoints lw 2 pt 7 lc rgb "#117733" dt (3,4) title "expected-attention", \
     $d2_3 using 1:2 with linespoints lw 2 pt 8 lc rgb "#ddcc77" dt (12,4,3,4) title "tova", \
     $full using 1:2 with lines dt 2 lw 2 lc rgb "black" title "full"
unset multiplot
unset output
