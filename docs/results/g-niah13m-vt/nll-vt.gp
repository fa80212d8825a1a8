# tova eval: answer NLL minus full's, paired (nats per token) (vt). Re-draw with: gnuplot nll-vt.gp
$d0 << EOD
# budget delta se
128 0.03996 0.06718
256 0.03138 0.04474
512 -0.00645 0.00547
EOD
$d1 << EOD
# budget delta se
128 0.04132 0.07170
256 0.03149 0.03976
512 -0.00624 0.00209
EOD
$d2 << EOD
# budget delta se
128 0.03313 0.05260
256 0.04969 0.03076
512 0.04739 0.02743
EOD
$d3 << EOD
# budget delta se
128 -0.03629 0.02116
256 -0.02672 0.04238
512 -0.02451 0.01014
EOD
$d4 << EOD
# budget delta se
128 -0.06074 0.08569
256 -0.01113 0.02934
512 0.00065 0.02095
EOD
$d5 << EOD
# budget delta se
128 -0.34538 0.08128
256 -0.15381 0.03247
512 -0.10249 0.03707
EOD
$d6 << EOD
# budget delta se
128 0.86699 0.20472
256 0.41708 0.23486
512 0.06247 0.04798
EOD
$d7 << EOD
# budget delta se
128 2.85299 0.20108
256 0.29119 0.00635
512 -0.03092 0.03701
EOD
$d8 << EOD
# budget delta se
128 0.01834 0.03424
256 -0.03206 0.03523
512 -0.02276 0.03084
EOD
$d9 << EOD
# budget delta se
128 2.78448 0.05685
256 3.29974 0.30762
512 0.23042 0.06768
EOD
$d10 << EOD
# budget delta se
128 2.72081 0.01541
256 1.74000 0.62220
512 0.06454 0.06169
EOD
set encoding utf8
set title "niah-13m-f16.gguf: 2 samples per cell, seed 42: vt, answer NLL" noenhanced
set xlabel "budget k (states kept per layer)"
set ylabel "answer NLL - full's (nats/token, paired; bars: se)"
set key outside right top noenhanced
set grid
set logscale x 2
set xrange [91.42857142857143:716.8]
set xtics (128, 256, 512)
set terminal pngcairo size 1000,640 font ",11"
set output "nll-vt.png"
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
set output "nll-vt.svg"
replot
unset output
