# tova ppl: perplexity vs budget. Re-draw with: gnuplot ppl.gp
$d0 << EOD
# budget ppl ppl_stderr
16 5.725242 0.103730
32 5.384467 0.100281
64 5.138201 0.096415
128 4.984526 0.093885
256 5.003438 0.100125
EOD
$d1 << EOD
# budget ppl ppl_stderr
16 6.136647 0.110906
32 5.645428 0.105865
64 5.369200 0.102729
128 5.198567 0.100204
256 5.213326 0.106467
EOD
$d2 << EOD
# budget ppl ppl_stderr
16 6.608120 0.125965
32 6.402620 0.150556
64 6.395134 0.168598
128 6.330769 0.170207
256 6.294940 0.170052
EOD
$d3 << EOD
# budget ppl ppl_stderr
16 6.513327 0.123436
32 6.390487 0.162531
64 6.248579 0.166218
128 6.138777 0.163781
256 6.175976 0.165957
EOD
$d4 << EOD
# budget ppl ppl_stderr
16 5.776348 0.116802
32 5.627766 0.118032
64 5.516313 0.119707
128 5.373826 0.124196
256 5.337940 0.129460
EOD
$d5 << EOD
# budget ppl ppl_stderr
16 6.005311 0.151773
32 5.786907 0.147667
64 5.556552 0.140900
128 5.320370 0.135733
256 5.399172 0.144539
EOD
set encoding utf8
set title "stories260K.gguf on tinystories-val-1000.txt: ctx 2048, 191 chunks" noenhanced
set xlabel "budget k (states kept per layer)"
set ylabel "perplexity"
set key outside right top noenhanced
set grid
set logscale x 2
set xrange [11.428571428571429:358.4]
set xtics (16, 32, 64, 128, 256)
set terminal pngcairo size 1000,640 font ",11"
set output "ppl.png"
plot $d0 using ($1*0.9576):2:3 with yerrorlines lw 2 pt 7 ps 0.8 title "window", \
     $d1 using ($1*0.9743):2:3 with yerrorlines lw 2 pt 7 ps 0.8 title "sink:4", \
     $d2 using ($1*0.9914):2:3 with yerrorlines lw 2 pt 7 ps 0.8 title "h2o-head", \
     $d3 using ($1*1.0087):2:3 with yerrorlines lw 2 pt 7 ps 0.8 title "h2o", \
     $d4 using ($1*1.0263):2:3 with yerrorlines lw 2 pt 7 ps 0.8 title "tova-head", \
     $d5 using ($1*1.0443):2:3 with yerrorlines lw 2 pt 7 ps 0.8 title "tova", \
     6.247570 with lines dt 2 lw 2 lc rgb "black" title "full"
set terminal svg size 1000,640 dynamic font ",11"
set output "ppl.svg"
replot
unset output
