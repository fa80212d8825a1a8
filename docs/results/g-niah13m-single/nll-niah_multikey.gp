# tova eval: answer NLL minus full's, paired (nats per token) (niah_multikey). Re-draw with: gnuplot nll-niah_multikey.gp
$d0 << EOD
# budget delta se
128 7.77541 0.64422
256 7.71345 0.51143
512 7.46644 0.04421
EOD
$d1 << EOD
# budget delta se
128 7.76681 0.63627
256 7.70798 0.52068
512 7.46960 0.07309
EOD
$d2 << EOD
# budget delta se
128 3.91157 3.90914
256 3.95202 3.95213
512 1.11189 1.11184
EOD
$d3 << EOD
# budget delta se
128 5.04340 1.34077
256 6.11068 0.81581
512 4.33320 2.42837
EOD
$d4 << EOD
# budget delta se
128 1.35892 1.35884
256 0.92570 0.92566
512 0.39712 0.39712
EOD
$d5 << EOD
# budget delta se
128 3.57499 0.31030
256 3.24927 0.19335
512 3.22581 0.10888
EOD
$d6 << EOD
# budget delta se
128 3.08533 0.05187
256 1.94872 0.28927
512 0.68713 0.68708
EOD
set encoding utf8
set title "niah-13m-f16.gguf: 2 samples per cell, seed 42: niah_multikey, answer NLL" noenhanced
set xlabel "budget k (states kept per layer)"
set ylabel "answer NLL - full's (nats/token, paired; bars: se)"
set key outside right top noenhanced
set grid
set logscale x 2
set xrange [91.42857142857143:716.8]
set xtics (128, 256, 512)
set terminal pngcairo size 1000,640 font ",11"
set output "nll-niah_multikey.png"
plot $d0 using 1:2:3 with yerrorlines lw 2 pt 5 ps 1 dt 1 title "window", \
     $d1 using 1:2:3 with yerrorlines lw 2 pt 6 ps 1 dt 1 title "sink:4", \
     $d2 using 1:2:3 with yerrorlines lw 2 pt 7 ps 1 dt 1 title "h2o", \
     $d3 using 1:2:3 with yerrorlines lw 2 pt 8 ps 1 dt 1 title "tova", \
     $d4 using 1:2:3 with yerrorlines lw 2 pt 9 ps 1 dt 1 title "snapkv", \
     $d5 using 1:2:3 with yerrorlines lw 2 pt 10 ps 1 dt 1 title "keydiff", \
     $d6 using 1:2:3 with yerrorlines lw 2 pt 11 ps 1 dt 1 title "kvzip", \
     0 with lines dt 2 lw 2 lc rgb "black" title "full"
set terminal svg size 1000,640 dynamic font ",11"
set output "nll-niah_multikey.svg"
replot
unset output
