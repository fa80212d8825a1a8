# tova eval: answer NLL minus full's, paired (nats per token) (niah_multikey). Re-draw with: gnuplot nll-niah_multikey.gp
$d0 << EOD
# budget delta se
128 -0.06949 0.09275
256 -0.22409 0.04718
512 -0.21679 0.06575
EOD
$d1 << EOD
# budget delta se
128 -0.07438 0.07877
256 -0.21683 0.04481
512 -0.21485 0.06567
EOD
$d2 << EOD
# budget delta se
128 0.32923 0.09825
256 0.27591 0.06892
512 0.05259 0.05170
EOD
$d3 << EOD
# budget delta se
128 -0.04118 0.04716
256 -0.23688 0.08495
512 -0.69779 0.04399
EOD
$d4 << EOD
# budget delta se
128 0.57525 0.07038
256 0.55328 0.04288
512 0.31101 0.02942
EOD
$d5 << EOD
# budget delta se
128 0.77546 0.05096
256 0.09397 0.06323
512 0.04092 0.02855
EOD
$d6 << EOD
# budget delta se
128 0.58869 0.07661
256 0.43607 0.05670
512 0.24590 0.04342
EOD
$d7 << EOD
# budget delta se
128 1.33092 0.11579
256 0.57554 0.05772
512 0.28910 0.03498
EOD
$d8 << EOD
# budget delta se
128 -0.19374 0.09608
256 -0.12483 0.06597
512 -0.03008 0.01552
EOD
$d9 << EOD
# budget delta se
128 0.44575 0.13248
256 2.54051 0.12625
512 0.40710 0.14289
EOD
$d10 << EOD
# budget delta se
128 0.54758 0.16728
256 2.49137 0.16204
512 0.39677 0.09050
EOD
set encoding utf8
set title "booklm-3m.gguf: 4 samples per cell, seed 42: niah_multikey, answer NLL" noenhanced
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
