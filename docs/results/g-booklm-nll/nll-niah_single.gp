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
$d7 << EOD
# budget delta se
128 2.33278 0.42741
256 1.17813 0.28860
512 0.43141 0.06814
EOD
$d8 << EOD
# budget delta se
128 0.14105 0.12876
256 0.24950 0.13439
512 0.11907 0.04494
EOD
$d9 << EOD
# budget delta se
128 0.98723 0.17185
256 2.68499 0.42241
512 0.66417 0.15728
EOD
$d10 << EOD
# budget delta se
128 0.98687 0.50400
256 2.02725 0.20540
512 0.30070 0.14925
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
