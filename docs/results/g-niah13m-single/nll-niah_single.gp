# tova eval: answer NLL minus full's, paired (nats per token) (niah_single). Re-draw with: gnuplot nll-niah_single.gp
$d0 << EOD
# budget delta se
128 7.37933 0.64734
256 7.17263 0.70859
512 4.80795 2.49629
EOD
$d1 << EOD
# budget delta se
128 7.36898 0.66517
256 7.18952 0.70812
512 7.32826 0.68371
EOD
$d2 << EOD
# budget delta se
128 4.09416 2.04231
256 4.00203 1.99209
512 1.43998 1.41394
EOD
$d3 << EOD
# budget delta se
128 2.82806 0.20951
256 3.89775 0.87522
512 5.88572 0.60476
EOD
$d4 << EOD
# budget delta se
128 0.00256 0.00284
256 0.00080 0.00319
512 0.00126 0.00119
EOD
$d5 << EOD
# budget delta se
128 4.76259 0.76124
256 3.46439 0.14841
512 2.22937 0.07073
EOD
$d6 << EOD
# budget delta se
128 3.79994 0.26564
256 2.96428 0.95720
512 0.54867 0.54750
EOD
$d7 << EOD
# budget delta se
128 5.61894 0.06928
256 6.37386 0.37855
512 4.50385 0.86045
EOD
$d8 << EOD
# budget delta se
128 -0.01064 0.00890
256 -0.00977 0.00771
512 -0.00474 0.00376
EOD
$d9 << EOD
# budget delta se
128 5.72044 0.13014
256 6.27615 0.31587
512 4.91211 0.46288
EOD
$d10 << EOD
# budget delta se
128 6.23692 0.35070
256 4.41491 0.28883
512 1.76416 1.40615
EOD
set encoding utf8
set title "niah-13m-f16.gguf: 3 samples per cell, seed 42: niah_single, answer NLL" noenhanced
set xlabel "budget k (states kept per layer)"
set ylabel "answer NLL - full's (nats/token, paired; bars: se)"
set key outside right top noenhanced
set grid
set logscale x 2
set xrange [91.42857142857143:716.8]
set xtics (128, 256, 512)
set terminal pngcairo size 1000,640 font ",11"
set output "nll-niah_single.png"
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
set output "nll-niah_single.svg"
replot
unset output
