# tova eval: answer NLL minus full's, paired (nats per token) (niah_multikey). Re-draw with: gnuplot nll-niah_multikey.gp
$d0 << EOD
# budget delta se
128 0.16802 0.27674
256 -0.02724 0.15567
512 -0.08841 0.15808
EOD
$d1 << EOD
# budget delta se
128 0.18677 0.25832
256 0.00740 0.14256
512 -0.07487 0.15479
EOD
$d2 << EOD
# budget delta se
128 0.15428 0.22101
256 0.43519 0.20927
512 0.10116 0.12470
EOD
$d3 << EOD
# budget delta se
128 -0.02301 0.09252
256 -0.21752 0.06283
512 -0.63974 0.13817
EOD
$d4 << EOD
# budget delta se
128 0.68281 0.14248
256 0.46254 0.13255
512 0.29476 0.10541
EOD
$d5 << EOD
# budget delta se
128 0.35401 0.19897
256 0.19683 0.34253
512 -0.03361 0.01477
EOD
$d6 << EOD
# budget delta se
128 0.71277 0.15776
256 0.51230 0.11505
512 0.35754 0.07911
EOD
$d7 << EOD
# budget delta se
128 1.37687 0.14711
256 0.76783 0.07615
512 0.53420 0.09346
EOD
$d8 << EOD
# budget delta se
128 0.13821 0.19267
256 0.00365 0.20974
512 -0.01606 0.19804
EOD
$d9 << EOD
# budget delta se
128 0.11382 0.42503
256 2.67809 0.15295
512 0.92216 0.20334
EOD
$d10 << EOD
# budget delta se
128 0.43264 0.52906
256 2.68502 0.36509
512 0.58421 0.12088
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
