# tova eval: accuracy per turn of one conversation (vt), one panel per budget. Re-draw with: gnuplot turns-vt.gp
$full << EOD
# turn accuracy%
1 0.000
2 0.000
3 0.000
4 0.000
EOD
$d0_0 << EOD
# turn accuracy%
1 0.000
2 0.000
3 0.000
4 0.000
EOD
$d0_1 << EOD
# turn accuracy%
1 0.000
2 0.000
3 0.000
4 0.000
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
$d0_4 << EOD
# turn accuracy%
1 0.000
2 0.000
3 0.000
4 0.000
EOD
$d0_5 << EOD
# turn accuracy%
1 0.000
2 0.000
3 0.000
4 0.000
EOD
$d0_6 << EOD
# turn accuracy%
1 0.000
2 0.000
3 0.000
4 0.000
EOD
$d1_0 << EOD
# turn accuracy%
1 0.000
2 0.000
3 0.000
4 0.000
EOD
$d1_1 << EOD
# turn accuracy%
1 0.000
2 0.000
3 0.000
4 0.000
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
$d1_4 << EOD
# turn accuracy%
1 0.000
2 0.000
3 0.000
4 0.000
EOD
$d1_5 << EOD
# turn accuracy%
1 0.000
2 0.000
3 0.000
4 0.000
EOD
$d1_6 << EOD
# turn accuracy%
1 0.000
2 0.000
3 0.000
4 0.000
EOD
$d2_0 << EOD
# turn accuracy%
1 0.000
2 0.000
3 0.000
4 0.000
EOD
$d2_1 << EOD
# turn accuracy%
1 0.000
2 0.000
3 0.000
4 0.000
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
$d2_4 << EOD
# turn accuracy%
1 0.000
2 0.000
3 0.000
4 0.000
EOD
$d2_5 << EOD
# turn accuracy%
1 0.000
2 0.000
3 0.000
4 0.000
EOD
$d2_6 << EOD
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
set output "turns-vt.png"
set multiplot layout 1,3 title "niah-13m-f16.gguf: 1 samples per cell, seed 42: vt per turn" noenhanced
set title "k = 128" noenhanced
plot $d0_0 using 1:2 with linespoints lw 2 pt 5 lc 1 dt 1 title "window", \
     $d0_1 using 1:2 with linespoints lw 2 pt 6 lc 2 dt 1 title "sink:4", \
     $d0_2 using 1:2 with linespoints lw 2 pt 7 lc 3 dt 1 title "h2o", \
     $d0_3 using 1:2 with linespoints lw 2 pt 8 lc 4 dt 1 title "tova", \
     $d0_4 using 1:2 with linespoints lw 2 pt 9 lc 5 dt 1 title "snapkv", \
     $d0_5 using 1:2 with linespoints lw 2 pt 10 lc 6 dt 1 title "keydiff", \
     $d0_6 using 1:2 with linespoints lw 2 pt 11 lc 7 dt 1 title "kvzip", \
     $full using 1:2 with lines dt 2 lw 2 lc rgb "black" title "full"
set title "k = 256" noenhanced
plot $d1_0 using 1:2 with linespoints lw 2 pt 5 lc 1 dt 1 title "window", \
     $d1_1 using 1:2 with linespoints lw 2 pt 6 lc 2 dt 1 title "sink:4", \
     $d1_2 using 1:2 with linespoints lw 2 pt 7 lc 3 dt 1 title "h2o", \
     $d1_3 using 1:2 with linespoints lw 2 pt 8 lc 4 dt 1 title "tova", \
     $d1_4 using 1:2 with linespoints lw 2 pt 9 lc 5 dt 1 title "snapkv", \
     $d1_5 using 1:2 with linespoints lw 2 pt 10 lc 6 dt 1 title "keydiff", \
     $d1_6 using 1:2 with linespoints lw 2 pt 11 lc 7 dt 1 title "kvzip", \
     $full using 1:2 with lines dt 2 lw 2 lc rgb "black" title "full"
set title "k = 512" noenhanced
plot $d2_0 using 1:2 with linespoints lw 2 pt 5 lc 1 dt 1 title "window", \
     $d2_1 using 1:2 with linespoints lw 2 pt 6 lc 2 dt 1 title "sink:4", \
     $d2_2 using 1:2 with linespoints lw 2 pt 7 lc 3 dt 1 title "h2o", \
     $d2_3 using 1:2 with linespoints lw 2 pt 8 lc 4 dt 1 title "tova", \
     $d2_4 using 1:2 with linespoints lw 2 pt 9 lc 5 dt 1 title "snapkv", \
     $d2_5 using 1:2 with linespoints lw 2 pt 10 lc 6 dt 1 title "keydiff", \
     $d2_6 using 1:2 with linespoints lw 2 pt 11 lc 7 dt 1 title "kvzip", \
     $full using 1:2 with lines dt 2 lw 2 lc rgb "black" title "full"
unset multiplot
set terminal svg size 1420,520 dynamic font ",10"
set output "turns-vt.svg"
set multiplot layout 1,3 title "niah-13m-f16.gguf: 1 samples per cell, seed 42: vt per turn" noenhanced
set title "k = 128" noenhanced
plot $d0_0 using 1:2 with linespoints lw 2 pt 5 lc 1 dt 1 title "window", \
     $d0_1 using 1:2 with linespoints lw 2 pt 6 lc 2 dt 1 title "sink:4", \
     $d0_2 using 1:2 with linespoints lw 2 pt 7 lc 3 dt 1 title "h2o", \
     $d0_3 using 1:2 with linespoints lw 2 pt 8 lc 4 dt 1 title "tova", \
     $d0_4 using 1:2 with linespoints lw 2 pt 9 lc 5 dt 1 title "snapkv", \
     $d0_5 using 1:2 with linespoints lw 2 pt 10 lc 6 dt 1 title "keydiff", \
     $d0_6 using 1:2 with linespoints lw 2 pt 11 lc 7 dt 1 title "kvzip", \
     $full using 1:2 with lines dt 2 lw 2 lc rgb "black" title "full"
set title "k = 256" noenhanced
plot $d1_0 using 1:2 with linespoints lw 2 pt 5 lc 1 dt 1 title "window", \
     $d1_1 using 1:2 with linespoints lw 2 pt 6 lc 2 dt 1 title "sink:4", \
     $d1_2 using 1:2 with linespoints lw 2 pt 7 lc 3 dt 1 title "h2o", \
     $d1_3 using 1:2 with linespoints lw 2 pt 8 lc 4 dt 1 title "tova", \
     $d1_4 using 1:2 with linespoints lw 2 pt 9 lc 5 dt 1 title "snapkv", \
     $d1_5 using 1:2 with linespoints lw 2 pt 10 lc 6 dt 1 title "keydiff", \
     $d1_6 using 1:2 with linespoints lw 2 pt 11 lc 7 dt 1 title "kvzip", \
     $full using 1:2 with lines dt 2 lw 2 lc rgb "black" title "full"
set title "k = 512" noenhanced
plot $d2_0 using 1:2 with linespoints lw 2 pt 5 lc 1 dt 1 title "window", \
     $d2_1 using 1:2 with linespoints lw 2 pt 6 lc 2 dt 1 title "sink:4", \
     $d2_2 using 1:2 with linespoints lw 2 pt 7 lc 3 dt 1 title "h2o", \
     $d2_3 using 1:2 with linespoints lw 2 pt 8 lc 4 dt 1 title "tova", \
     $d2_4 using 1:2 with linespoints lw 2 pt 9 lc 5 dt 1 title "snapkv", \
     $d2_5 using 1:2 with linespoints lw 2 pt 10 lc 6 dt 1 title "keydiff", \
     $d2_6 using 1:2 with linespoints lw 2 pt 11 lc 7 dt 1 title "kvzip", \
     $full using 1:2 with lines dt 2 lw 2 lc rgb "black" title "full"
unset multiplot
unset output
