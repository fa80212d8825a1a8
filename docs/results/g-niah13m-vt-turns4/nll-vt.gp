# tova eval: answer NLL minus full's, paired (nats per token) (vt). Re-draw with: gnuplot nll-vt.gp
$d0 << EOD
# budget delta se
128 -0.10508 0.04276
256 0.17071 0.07619
512 0.13686 0.05601
EOD
$d1 << EOD
# budget delta se
128 -0.09966 0.03983
256 0.12599 0.08078
512 0.13174 0.05822
EOD
$d2 << EOD
# budget delta se
128 -0.11838 0.01534
256 0.00927 0.06921
512 0.12752 0.07969
EOD
$d3 << EOD
# budget delta se
128 -0.21853 0.05252
256 -0.07119 0.04801
512 -0.08501 0.04200
EOD
$d4 << EOD
# budget delta se
128 -0.16841 0.05432
256 -0.19362 0.06007
512 -0.18441 0.06868
EOD
$d5 << EOD
# budget delta se
128 -0.30976 0.02070
256 -0.32314 0.01473
512 -0.23170 0.03758
EOD
$d6 << EOD
# budget delta se
128 -0.18339 0.23919
256 -0.21389 0.12189
512 -0.17414 0.04986
EOD
$d7 << EOD
# budget delta se
128 2.51191 0.17033
256 2.11832 0.15195
512 0.63062 0.31639
EOD
$d8 << EOD
# budget delta se
128 0.05120 0.06105
256 0.02262 0.04658
512 -0.02630 0.02717
EOD
$d9 << EOD
# budget delta se
128 2.36347 0.17516
256 2.84771 0.12307
512 2.80863 0.14358
EOD
$d10 << EOD
# budget delta se
128 2.71861 0.22531
256 2.01833 0.13168
512 -0.02287 0.03739
EOD
set encoding utf8
set title "niah-13m-f16.gguf: 1 samples per cell, seed 42: vt, answer NLL" noenhanced
set xlabel "budget k (states kept per layer)"
set ylabel "answer NLL - full's (nats/token, paired; bars: se)"
set key outside right top noenhanced
set grid
set logscale x 2
set xrange [91.42857142857143:716.8]
set xtics (128, 256, 512)
set terminal pngcairo size 1000,640 font ",11"
set output "nll-vt.png"
plot $d0 using 1:2:3 with yerrorlines lw 2 pt 5 ps 1 lc rgb "#332288" dt 1 title "window", \
     $d1 using 1:2:3 with yerrorlines lw 2 pt 6 ps 1 lc rgb "#cc6677" dt (10,5) title "sink:4", \
     $d2 using 1:2:3 with yerrorlines lw 2 pt 7 ps 1 lc rgb "#117733" dt (3,4) title "h2o", \
     $d3 using 1:2:3 with yerrorlines lw 2 pt 8 ps 1 lc rgb "#ddcc77" dt (12,4,3,4) title "tova", \
     $d4 using 1:2:3 with yerrorlines lw 2 pt 9 ps 1 lc rgb "#88ccee" dt (18,6) title "snapkv", \
     $d5 using 1:2:3 with yerrorlines lw 2 pt 10 ps 1 lc rgb "#882255" dt (6,6) title "keydiff", \
     $d6 using 1:2:3 with yerrorlines lw 2 pt 11 ps 1 lc rgb "#44aa99" dt (14,4,3,4,3,4) title "kvzip", \
     $d7 using 1:2:3 with yerrorlines lw 2 pt 12 ps 1 lc rgb "#999933" dt (8,3) title "expected-attention", \
     $d8 using 1:2:3 with yerrorlines lw 2 pt 13 ps 1 lc rgb "#aa4499" dt (2,8) title "rkv", \
     $d9 using 1:2:3 with yerrorlines lw 2 pt 5 ps 1 lc rgb "#ee6677" dt (12,3,2,3) title "tova+merge", \
     $d10 using 1:2:3 with yerrorlines lw 2 pt 6 ps 1 lc rgb "#4477aa" dt (20,4,6,4) title "h2o+merge", \
     0 with lines dt 2 lw 2 lc rgb "black" title "full"
set terminal svg size 1000,640 dynamic font ",11"
set output "nll-vt.svg"
replot
unset output
