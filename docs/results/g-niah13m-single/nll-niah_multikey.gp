# tova eval: answer NLL minus full's, paired (nats per token) (niah_multikey). Re-draw with: gnuplot nll-niah_multikey.gp
$d0 << EOD
# budget delta se
128 8.14430 0.52385
256 7.84421 0.32293
512 7.61296 0.14873
EOD
$d1 << EOD
# budget delta se
128 8.14604 0.52798
256 7.83437 0.32610
512 7.61404 0.15047
EOD
$d2 << EOD
# budget delta se
128 5.53608 2.78080
256 5.57386 2.79943
512 2.97649 1.97200
EOD
$d3 << EOD
# budget delta se
128 4.46153 0.96840
256 5.15590 1.06464
512 4.28632 1.40281
EOD
$d4 << EOD
# budget delta se
128 0.90820 0.90478
256 0.61864 0.61636
512 0.26635 0.26395
EOD
$d5 << EOD
# budget delta se
128 3.45775 0.21410
256 3.19444 0.12437
512 3.41329 0.19774
EOD
$d6 << EOD
# budget delta se
128 3.02368 0.06854
256 2.09711 0.22341
512 0.46409 0.45509
EOD
$d7 << EOD
# budget delta se
128 6.10439 0.11389
256 6.04327 0.33898
512 4.13119 1.17344
EOD
$d8 << EOD
# budget delta se
128 -0.02164 0.01137
256 -0.01871 0.01281
512 0.00370 0.00576
EOD
$d9 << EOD
# budget delta se
128 5.31398 0.14609
256 6.03956 0.14090
512 5.25775 0.66922
EOD
$d10 << EOD
# budget delta se
128 5.35568 0.14899
256 4.27647 1.92659
512 3.06623 1.64881
EOD
set encoding utf8
set title "niah-13m-f16.gguf: 3 samples per cell, seed 42: niah_multikey, answer NLL" noenhanced
set xlabel "budget k (states kept per layer)"
set ylabel "answer NLL - full's (nats/token, paired; bars: se)"
set key outside right top noenhanced
set grid
set logscale x 2
set xrange [91.42857142857143:716.8]
set xtics (128, 256, 512)
set terminal pngcairo size 1000,640 font ",11"
set output "nll-niah_multikey.png"
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
set output "nll-niah_multikey.svg"
replot
unset output
