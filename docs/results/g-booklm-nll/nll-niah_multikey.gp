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
