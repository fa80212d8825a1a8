# tova eval: answer NLL minus full's, paired (nats per token) (niah_multikey). Re-draw with: gnuplot nll-niah_multikey.gp
$d0 << EOD
# budget delta se
128 2.13697 0.42962
256 1.79196 0.39541
512 0.79253 0.37305
EOD
$d1 << EOD
# budget delta se
128 3.39414 0.21176
256 1.07574 0.24404
512 -0.00497 0.00519
EOD
$d2 << EOD
# budget delta se
128 5.98070 0.12883
256 6.51616 0.32441
512 3.46827 0.23705
EOD
$d3 << EOD
# budget delta se
128 4.61396 0.43966
256 4.89095 0.44261
512 4.55269 0.42040
EOD
set encoding utf8
set title "niah-13m-f16.gguf: 3 samples per cell, seed 3003: niah_multikey, answer NLL" noenhanced
set xlabel "budget k (states kept per layer)"
set ylabel "answer NLL - full's (nats/token, paired; bars: se)"
set key outside right top noenhanced
set grid
set logscale x 2
set xrange [91.42857142857143:716.8]
set xtics (128, 256, 512)
set terminal pngcairo size 1000,640 font ",11"
set output "nll-niah_multikey.png"
plot $d0 using 1:2:3 with yerrorlines lw 2 pt 5 ps 1 lc rgb "#332288" dt 1 title "snapkv", \
     $d1 using 1:2:3 with yerrorlines lw 2 pt 6 ps 1 lc rgb "#cc6677" dt (10,5) title "kvzip", \
     $d2 using 1:2:3 with yerrorlines lw 2 pt 7 ps 1 lc rgb "#117733" dt (3,4) title "expected-attention", \
     $d3 using 1:2:3 with yerrorlines lw 2 pt 8 ps 1 lc rgb "#ddcc77" dt (12,4,3,4) title "tova", \
     0 with lines dt 2 lw 2 lc rgb "black" title "full"
set terminal svg size 1000,640 dynamic font ",11"
set output "nll-niah_multikey.svg"
replot
unset output
