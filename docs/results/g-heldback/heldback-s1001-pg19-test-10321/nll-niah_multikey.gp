# tova eval: answer NLL minus full's, paired (nats per token) (niah_multikey). Re-draw with: gnuplot nll-niah_multikey.gp
$d0 << EOD
# budget delta se
128 1.77202 0.43631
256 1.27207 0.48361
512 0.07979 0.05486
EOD
$d1 << EOD
# budget delta se
128 0.09911 0.10350
256 0.09335 0.09215
512 -0.00394 0.00392
EOD
$d2 << EOD
# budget delta se
128 4.08985 0.18750
256 3.42917 0.32965
512 4.24444 0.45061
EOD
$d3 << EOD
# budget delta se
128 3.69737 0.50956
256 5.67219 0.54642
512 5.37630 0.47687
EOD
set encoding utf8
set title "niah-13m-f16.gguf: 3 samples per cell, seed 1001: niah_multikey, answer NLL" noenhanced
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
