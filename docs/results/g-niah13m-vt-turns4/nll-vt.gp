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
plot $d0 using 1:2:3 with yerrorlines lw 2 pt 5 ps 1 dt 1 title "window", \
     $d1 using 1:2:3 with yerrorlines lw 2 pt 6 ps 1 dt 1 title "sink:4", \
     $d2 using 1:2:3 with yerrorlines lw 2 pt 7 ps 1 dt 1 title "h2o", \
     $d3 using 1:2:3 with yerrorlines lw 2 pt 8 ps 1 dt 1 title "tova", \
     $d4 using 1:2:3 with yerrorlines lw 2 pt 9 ps 1 dt 1 title "snapkv", \
     $d5 using 1:2:3 with yerrorlines lw 2 pt 10 ps 1 dt 1 title "keydiff", \
     $d6 using 1:2:3 with yerrorlines lw 2 pt 11 ps 1 dt 1 title "kvzip", \
     0 with lines dt 2 lw 2 lc rgb "black" title "full"
set terminal svg size 1000,640 dynamic font ",11"
set output "nll-vt.svg"
replot
unset output
