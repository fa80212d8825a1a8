# tova eval: answer NLL minus full's, paired (nats per token) (niah_multikey). Re-draw with: gnuplot nll-niah_multikey.gp
$d0 << EOD
# budget delta se
128 7.58404 0.41991
256 7.45222 0.41921
512 5.51998 1.22601
EOD
$d1 << EOD
# budget delta se
128 7.60141 0.41576
256 7.46688 0.41650
512 5.51510 1.22548
EOD
$d2 << EOD
# budget delta se
128 6.01333 1.36208
256 5.17752 1.56757
512 3.31890 1.07169
EOD
$d3 << EOD
# budget delta se
128 4.74230 0.71593
256 5.62552 0.44951
512 4.91944 0.50478
EOD
$d4 << EOD
# budget delta se
128 1.81430 0.63127
256 0.55332 0.26128
512 0.24665 0.21990
EOD
$d5 << EOD
# budget delta se
128 3.33069 0.20490
256 2.95268 0.14266
512 2.92225 0.51664
EOD
$d6 << EOD
# budget delta se
128 3.73169 0.42506
256 1.01209 0.18395
512 0.01156 0.01020
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
