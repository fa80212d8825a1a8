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
$d0_7 << EOD
# turn accuracy%
1 0.000
2 0.000
3 0.000
4 0.000
EOD
$d0_8 << EOD
# turn accuracy%
1 0.000
2 0.000
3 0.000
4 0.000
EOD
$d0_9 << EOD
# turn accuracy%
1 0.000
2 0.000
3 0.000
4 0.000
EOD
$d0_10 << EOD
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
$d1_7 << EOD
# turn accuracy%
1 0.000
2 0.000
3 0.000
4 0.000
EOD
$d1_8 << EOD
# turn accuracy%
1 0.000
2 0.000
3 0.000
4 0.000
EOD
$d1_9 << EOD
# turn accuracy%
1 0.000
2 0.000
3 0.000
4 0.000
EOD
$d1_10 << EOD
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
$d2_7 << EOD
# turn accuracy%
1 0.000
2 0.000
3 0.000
4 0.000
EOD
$d2_8 << EOD
# turn accuracy%
1 0.000
2 0.000
3 0.000
4 0.000
EOD
$d2_9 << EOD
# turn accuracy%
1 0.000
2 0.000
3 0.000
4 0.000
EOD
$d2_10 << EOD
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
plot $d0_0 using 1:2 with linespoints lw 2 pt 5 lc rgb "#332288" dt 1 title "window", \
     $d0_1 using 1:2 with linespoints lw 2 pt 6 lc rgb "#cc6677" dt (10,5) title "sink:4", \
     $d0_2 using 1:2 with linespoints lw 2 pt 7 lc rgb "#117733" dt (3,4) title "h2o", \
     $d0_3 using 1:2 with linespoints lw 2 pt 8 lc rgb "#ddcc77" dt (12,4,3,4) title "tova", \
     $d0_4 using 1:2 with linespoints lw 2 pt 9 lc rgb "#88ccee" dt (18,6) title "snapkv", \
     $d0_5 using 1:2 with linespoints lw 2 pt 10 lc rgb "#882255" dt (6,6) title "keydiff", \
     $d0_6 using 1:2 with linespoints lw 2 pt 11 lc rgb "#44aa99" dt (14,4,3,4,3,4) title "kvzip", \
     $d0_7 using 1:2 with linespoints lw 2 pt 12 lc rgb "#999933" dt (8,3) title "expected-attention", \
     $d0_8 using 1:2 with linespoints lw 2 pt 13 lc rgb "#aa4499" dt (2,8) title "rkv", \
     $d0_9 using 1:2 with linespoints lw 2 pt 5 lc rgb "#ee6677" dt (12,3,2,3) title "tova+merge", \
     $d0_10 using 1:2 with linespoints lw 2 pt 6 lc rgb "#4477aa" dt (20,4,6,4) title "h2o+merge", \
     $full using 1:2 with lines dt 2 lw 2 lc rgb "black" title "full"
set title "k = 256" noenhanced
plot $d1_0 using 1:2 with linespoints lw 2 pt 5 lc rgb "#332288" dt 1 title "window", \
     $d1_1 using 1:2 with linespoints lw 2 pt 6 lc rgb "#cc6677" dt (10,5) title "sink:4", \
     $d1_2 using 1:2 with linespoints lw 2 pt 7 lc rgb "#117733" dt (3,4) title "h2o", \
     $d1_3 using 1:2 with linespoints lw 2 pt 8 lc rgb "#ddcc77" dt (12,4,3,4) title "tova", \
     $d1_4 using 1:2 with linespoints lw 2 pt 9 lc rgb "#88ccee" dt (18,6) title "snapkv", \
     $d1_5 using 1:2 with linespoints lw 2 pt 10 lc rgb "#882255" dt (6,6) title "keydiff", \
     $d1_6 using 1:2 with linespoints lw 2 pt 11 lc rgb "#44aa99" dt (14,4,3,4,3,4) title "kvzip", \
     $d1_7 using 1:2 with linespoints lw 2 pt 12 lc rgb "#999933" dt (8,3) title "expected-attention", \
     $d1_8 using 1:2 with linespoints lw 2 pt 13 lc rgb "#aa4499" dt (2,8) title "rkv", \
     $d1_9 using 1:2 with linespoints lw 2 pt 5 lc rgb "#ee6677" dt (12,3,2,3) title "tova+merge", \
     $d1_10 using 1:2 with linespoints lw 2 pt 6 lc rgb "#4477aa" dt (20,4,6,4) title "h2o+merge", \
     $full using 1:2 with lines dt 2 lw 2 lc rgb "black" title "full"
set title "k = 512" noenhanced
plot $d2_0 using 1:2 with linespoints lw 2 pt 5 lc rgb "#332288" dt 1 title "window", \
     $d2_1 using 1:2 with linespoints lw 2 pt 6 lc rgb "#cc6677" dt (10,5) title "sink:4", \
     $d2_2 using 1:2 with linespoints lw 2 pt 7 lc rgb "#117733" dt (3,4) title "h2o", \
     $d2_3 using 1:2 with linespoints lw 2 pt 8 lc rgb "#ddcc77" dt (12,4,3,4) title "tova", \
     $d2_4 using 1:2 with linespoints lw 2 pt 9 lc rgb "#88ccee" dt (18,6) title "snapkv", \
     $d2_5 using 1:2 with linespoints lw 2 pt 10 lc rgb "#882255" dt (6,6) title "keydiff", \
     $d2_6 using 1:2 with linespoints lw 2 pt 11 lc rgb "#44aa99" dt (14,4,3,4,3,4) title "kvzip", \
     $d2_7 using 1:2 with linespoints lw 2 pt 12 lc rgb "#999933" dt (8,3) title "expected-attention", \
     $d2_8 using 1:2 with linespoints lw 2 pt 13 lc rgb "#aa4499" dt (2,8) title "rkv", \
     $d2_9 using 1:2 with linespoints lw 2 pt 5 lc rgb "#ee6677" dt (12,3,2,3) title "tova+merge", \
     $d2_10 using 1:2 with linespoints lw 2 pt 6 lc rgb "#4477aa" dt (20,4,6,4) title "h2o+merge", \
     $full using 1:2 with lines dt 2 lw 2 lc rgb "black" title "full"
unset multiplot
set terminal svg size 1420,520 dynamic font ",10"
set output "turns-vt.svg"
set multiplot layout 1,3 title "niah-13m-f16.gguf: 1 samples per cell, seed 42: vt per turn" noenhanced
set title "k = 128" noenhanced
plot $d0_0 using 1:2 with linespoints lw 2 pt 5 lc rgb "#332288" dt 1 title "window", \
     $d0_1 using 1:2 with linespoints lw 2 pt 6 lc rgb "#cc6677" dt (10,5) title "sink:4", \
     $d0_2 using 1:2 with linespoints lw 2 pt 7 lc rgb "#117733" dt (3,4) title "h2o", \
     $d0_3 using 1:2 with linespoints lw 2 pt 8 lc rgb "#ddcc77" dt (12,4,3,4) title "tova", \
     $d0_4 using 1:2 with linespoints lw 2 pt 9 lc rgb "#88ccee" dt (18,6) title "snapkv", \
     $d0_5 using 1:2 with linespoints lw 2 pt 10 lc rgb "#882255" dt (6,6) title "keydiff", \
     $d0_6 using 1:2 with linespoints lw 2 pt 11 lc rgb "#44aa99" dt (14,4,3,4,3,4) title "kvzip", \
     $d0_7 using 1:2 with linespoints lw 2 pt 12 lc rgb "#999933" dt (8,3) title "expected-attention", \
     $d0_8 using 1:2 with linespoints lw 2 pt 13 lc rgb "#aa4499" dt (2,8) title "rkv", \
     $d0_9 using 1:2 with linespoints lw 2 pt 5 lc rgb "#ee6677" dt (12,3,2,3) title "tova+merge", \
     $d0_10 using 1:2 with linespoints lw 2 pt 6 lc rgb "#4477aa" dt (20,4,6,4) title "h2o+merge", \
     $full using 1:2 with lines dt 2 lw 2 lc rgb "black" title "full"
set title "k = 256" noenhanced
plot $d1_0 using 1:2 with linespoints lw 2 pt 5 lc rgb "#332288" dt 1 title "window", \
     $d1_1 using 1:2 with linespoints lw 2 pt 6 lc rgb "#cc6677" dt (10,5) title "sink:4", \
     $d1_2 using 1:2 with linespoints lw 2 pt 7 lc rgb "#117733" dt (3,4) title "h2o", \
     $d1_3 using 1:2 with linespoints lw 2 pt 8 lc rgb "#ddcc77" dt (12,4,3,4) title "tova", \
     $d1_4 using 1:2 with linespoints lw 2 pt 9 lc rgb "#88ccee" dt (18,6) title "snapkv", \
     $d1_5 using 1:2 with linespoints lw 2 pt 10 lc rgb "#882255" dt (6,6) title "keydiff", \
     $d1_6 using 1:2 with linespoints lw 2 pt 11 lc rgb "#44aa99" dt (14,4,3,4,3,4) title "kvzip", \
     $d1_7 using 1:2 with linespoints lw 2 pt 12 lc rgb "#999933" dt (8,3) title "expected-attention", \
     $d1_8 using 1:2 with linespoints lw 2 pt 13 lc rgb "#aa4499" dt (2,8) title "rkv", \
     $d1_9 using 1:2 with linespoints lw 2 pt 5 lc rgb "#ee6677" dt (12,3,2,3) title "tova+merge", \
     $d1_10 using 1:2 with linespoints lw 2 pt 6 lc rgb "#4477aa" dt (20,4,6,4) title "h2o+merge", \
     $full using 1:2 with lines dt 2 lw 2 lc rgb "black" title "full"
set title "k = 512" noenhanced
plot $d2_0 using 1:2 with linespoints lw 2 pt 5 lc rgb "#332288" dt 1 title "window", \
     $d2_1 using 1:2 with linespoints lw 2 pt 6 lc rgb "#cc6677" dt (10,5) title "sink:4", \
     $d2_2 using 1:2 with linespoints lw 2 pt 7 lc rgb "#117733" dt (3,4) title "h2o", \
     $d2_3 using 1:2 with linespoints lw 2 pt 8 lc rgb "#ddcc77" dt (12,4,3,4) title "tova", \
     $d2_4 using 1:2 with linespoints lw 2 pt 9 lc rgb "#88ccee" dt (18,6) title "snapkv", \
     $d2_5 using 1:2 with linespoints lw 2 pt 10 lc rgb "#882255" dt (6,6) title "keydiff", \
     $d2_6 using 1:2 with linespoints lw 2 pt 11 lc rgb "#44aa99" dt (14,4,3,4,3,4) title "kvzip", \
     $d2_7 using 1:2 with linespoints lw 2 pt 12 lc rgb "#999933" dt (8,3) title "expected-attention", \
     $d2_8 using 1:2 with linespoints lw 2 pt 13 lc rgb "#aa4499" dt (2,8) title "rkv", \
     $d2_9 using 1:2 with linespoints lw 2 pt 5 lc rgb "#ee6677" dt (12,3,2,3) title "tova+merge", \
     $d2_10 using 1:2 with linespoints lw 2 pt 6 lc rgb "#4477aa" dt (20,4,6,4) title "h2o+merge", \
     $full using 1:2 with lines dt 2 lw 2 lc rgb "black" title "full"
unset multiplot
unset output
