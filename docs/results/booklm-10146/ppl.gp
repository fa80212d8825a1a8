# tova ppl: perplexity vs budget. Re-draw with: gnuplot ppl.gp
$d0 << EOD
# budget ppl ppl_stderr
32 23.105221 0.354233
64 20.812520 0.320527
128 20.431119 0.314957
256 20.215783 0.308972
512 20.102619 0.303248
EOD
$d1 << EOD
# budget ppl ppl_stderr
32 22.817352 0.341703
64 20.713395 0.315235
128 20.405224 0.313052
256 20.212695 0.308854
512 20.104787 0.303366
EOD
$d2 << EOD
# budget ppl ppl_stderr
32 22.555430 0.325786
64 20.929440 0.313876
128 20.482793 0.309387
256 20.287834 0.307986
512 20.169397 0.305014
EOD
$d3 << EOD
# budget ppl ppl_stderr
32 22.934691 0.337104
64 21.029533 0.316649
128 20.478433 0.311319
256 20.267896 0.308382
512 20.155515 0.305224
EOD
$d4 << EOD
# budget ppl ppl_stderr
32 25.315258 0.367832
64 24.426208 0.349635
128 23.179048 0.334094
256 21.911363 0.318770
512 20.718116 0.308588
EOD
$d5 << EOD
# budget ppl ppl_stderr
32 22.735987 0.370446
64 21.653640 0.334554
128 21.200984 0.318622
256 20.797606 0.312781
512 20.395803 0.304295
EOD
set encoding utf8
set title "booklm-3m.gguf on pg19-test-10146.txt: ctx 1024, 161 chunks" noenhanced
set xlabel "budget k (states kept per layer)"
set ylabel "perplexity"
set key outside right top noenhanced
set grid
set logscale x 2
set xrange [22.857142857142858:716.8]
set xtics (32, 64, 128, 256, 512)
set terminal pngcairo size 1000,640 font ",11"
set output "ppl.png"
plot $d0 using ($1*0.9576):2:3 with yerrorlines lw 2 pt 7 ps 0.8 title "window", \
     $d1 using ($1*0.9743):2:3 with yerrorlines lw 2 pt 7 ps 0.8 title "sink:4", \
     $d2 using ($1*0.9914):2:3 with yerrorlines lw 2 pt 7 ps 0.8 title "h2o-head", \
     $d3 using ($1*1.0087):2:3 with yerrorlines lw 2 pt 7 ps 0.8 title "h2o", \
     $d4 using ($1*1.0263):2:3 with yerrorlines lw 2 pt 7 ps 0.8 title "tova-head", \
     $d5 using ($1*1.0443):2:3 with yerrorlines lw 2 pt 7 ps 0.8 title "tova", \
     20.111824 with lines dt 2 lw 2 lc rgb "black" title "full"
set terminal svg size 1000,640 dynamic font ",11"
set output "ppl.svg"
replot
unset output
