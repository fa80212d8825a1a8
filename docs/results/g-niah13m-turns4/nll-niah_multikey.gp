# tova eval: answer NLL minus full's, paired (nats per token) (niah_multikey). Re-draw with: gnuplot nll-niah_multikey.gp
$d0 << EOD
# budget delta se
128 7.52539 0.40074
256 7.19048 0.36998
512 4.17822 1.08582
EOD
$d1 << EOD
# budget delta se
128 7.53905 0.39940
256 7.20504 0.36959
512 4.17034 1.08421
EOD
$d2 << EOD
# budget delta se
128 6.21913 0.93807
256 5.15834 1.08551
512 3.52725 0.84530
EOD
$d3 << EOD
# budget delta se
128 4.76954 0.50190
256 5.14786 0.48267
512 5.46987 0.48018
EOD
$d4 << EOD
# budget delta se
128 1.33645 0.48033
256 0.49790 0.22533
512 0.16202 0.15063
EOD
$d5 << EOD
# budget delta se
128 3.35170 0.15263
256 2.95663 0.11856
512 2.70077 0.39526
EOD
$d6 << EOD
# budget delta se
128 3.60758 0.34031
256 1.05295 0.17834
512 0.06361 0.06071
EOD
$d7 << EOD
# budget delta se
128 5.94316 0.14435
256 4.87164 0.27693
512 2.98176 0.17890
EOD
$d8 << EOD
# budget delta se
128 0.94110 0.26147
256 0.27108 0.20277
512 -0.00173 0.00277
EOD
$d9 << EOD
# budget delta se
128 5.59731 0.08857
256 5.60215 0.15930
512 4.81474 0.25523
EOD
$d10 << EOD
# budget delta se
128 5.51405 0.11510
256 4.90657 0.90827
512 3.48574 0.81714
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
