# tova eval: answer NLL minus full's, paired (nats per token) (niah_single). Re-draw with: gnuplot nll-niah_single.gp
$d0 << EOD
# budget delta se
128 0.37333 0.30501
256 0.36017 0.18338
512 0.11983 0.13029
EOD
$d1 << EOD
# budget delta se
128 0.44975 0.26590
256 0.36182 0.17453
512 0.13685 0.13657
EOD
$d2 << EOD
# budget delta se
128 0.31165 0.26588
256 0.42119 0.25565
512 0.19082 0.20789
EOD
$d3 << EOD
# budget delta se
128 0.17940 0.09895
256 -0.18514 0.08348
512 -0.36376 0.08013
EOD
$d4 << EOD
# budget delta se
128 0.97450 0.22943
256 0.92213 0.11966
512 0.49057 0.05755
EOD
$d5 << EOD
# budget delta se
128 0.59659 0.35174
256 -0.10868 0.27822
512 -0.10953 0.07334
EOD
$d6 << EOD
# budget delta se
128 0.94681 0.23667
256 0.63992 0.13510
512 0.33617 0.08937
EOD
set encoding utf8
set title "booklm-3m.gguf: 4 samples per cell, seed 42: niah_single, answer NLL" noenhanced
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
