# tova eval: answer NLL minus full's, paired (nats per token) (niah_single). Re-draw with: gnuplot nll-niah_single.gp
$d0 << EOD
# budget delta se
128 7.67030 1.00157
256 7.49989 1.08858
512 7.21202 1.16435
EOD
$d1 << EOD
# budget delta se
128 7.68089 1.01760
256 7.51129 1.09257
512 7.21160 1.16685
EOD
$d2 << EOD
# budget delta se
128 3.07710 3.06755
256 3.02900 3.01081
512 0.02613 0.02557
EOD
$d3 << EOD
# budget delta se
128 2.81389 0.36205
256 4.34922 1.29868
512 6.07010 0.99761
EOD
$d4 << EOD
# budget delta se
128 0.00417 0.00405
256 0.00141 0.00542
512 0.00206 0.00152
EOD
$d5 << EOD
# budget delta se
128 5.50012 0.32650
256 3.56248 0.19290
512 2.27306 0.09635
EOD
$d6 << EOD
# budget delta se
128 3.75015 0.45194
256 3.73050 0.99369
512 0.82271 0.82096
EOD
set encoding utf8
set title "niah-13m-f16.gguf: 2 samples per cell, seed 42: niah_single, answer NLL" noenhanced
set xlabel "budget k (states kept per layer)"
set ylabel "answer NLL - full's (nats/token, paired; bars: se)"
set key outside right top noenhanced
set grid
set logscale x 2
set xrange [91.42857142857143:716.8]
set xtics (128, 256, 512)
set terminal pngcairo size 1000,640 font ",11"
set output "nll-niah_single.png"
plot $d0 using 1:2:3 with yerrorlines lw 2 pt 5 ps 1 dt 1 title "window", \
     $d1 using 1:2:3 with yerrorlines lw 2 pt 6 ps 1 dt 1 title "sink:4", \
     $d2 using 1:2:3 with yerrorlines lw 2 pt 7 ps 1 dt 1 title "h2o", \
     $d3 using 1:2:3 with yerrorlines lw 2 pt 8 ps 1 dt 1 title "tova", \
     $d4 using 1:2:3 with yerrorlines lw 2 pt 9 ps 1 dt 1 title "snapkv", \
     $d5 using 1:2:3 with yerrorlines lw 2 pt 10 ps 1 dt 1 title "keydiff", \
     $d6 using 1:2:3 with yerrorlines lw 2 pt 11 ps 1 dt 1 title "kvzip", \
     0 with lines dt 2 lw 2 lc rgb "black" title "full"
set terminal svg size 1000,640 dynamic font ",11"
set output "nll-niah_single.svg"
replot
unset output
