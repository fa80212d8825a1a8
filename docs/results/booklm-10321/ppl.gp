# tova ppl: perplexity vs budget. Re-draw with: gnuplot ppl.gp
$d0 << EOD
# budget ppl ppl_stderr
32 28.902078 0.322975
64 26.244492 0.302538
128 25.943263 0.299751
256 25.734475 0.293933
512 25.614370 0.288542
EOD
$d1 << EOD
# budget ppl ppl_stderr
32 28.684066 0.322232
64 26.181607 0.301020
128 25.926096 0.299499
256 25.741785 0.294465
512 25.618531 0.288786
EOD
$d2 << EOD
# budget ppl ppl_stderr
32 28.362782 0.320045
64 26.710700 0.303365
128 26.138631 0.298719
256 25.841735 0.292654
512 25.637859 0.288126
EOD
$d3 << EOD
# budget ppl ppl_stderr
32 28.801729 0.324760
64 26.926668 0.311914
128 26.258689 0.304301
256 25.919281 0.295565
512 25.688204 0.290012
EOD
$d4 << EOD
# budget ppl ppl_stderr
32 30.662995 0.344405
64 29.503795 0.330992
128 28.282281 0.314517
256 27.399488 0.309479
512 26.415381 0.301479
EOD
$d5 << EOD
# budget ppl ppl_stderr
32 28.483940 0.320712
64 27.140993 0.311966
128 26.530756 0.300056
256 26.178772 0.296747
512 25.952347 0.294147
EOD
set encoding utf8
set title "booklm-3m.gguf on pg19-test-10321.txt: ctx 1024, 207 chunks" noenhanced
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
     25.639311 with lines dt 2 lw 2 lc rgb "black" title "full"
set terminal svg size 1000,640 dynamic font ",11"
set output "ppl.svg"
replot
unset output
