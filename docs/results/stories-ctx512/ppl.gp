# tova ppl: perplexity vs budget. Re-draw with: gnuplot ppl.gp
$d0 << EOD
# budget ppl ppl_stderr
16 5.977782 0.073410
32 5.654661 0.071102
64 5.421452 0.069096
128 5.278430 0.068459
256 5.289586 0.072190
EOD
$d1 << EOD
# budget ppl ppl_stderr
16 6.203123 0.075089
32 5.714103 0.071566
64 5.437717 0.069681
128 5.281842 0.068991
256 5.291574 0.072420
EOD
$d2 << EOD
# budget ppl ppl_stderr
16 6.443347 0.080253
32 5.912499 0.080327
64 5.603116 0.079968
128 5.393471 0.076555
256 5.325724 0.075238
EOD
$d3 << EOD
# budget ppl ppl_stderr
16 6.492463 0.079985
32 6.015623 0.083322
64 5.672874 0.080424
128 5.433075 0.077074
256 5.331001 0.075454
EOD
$d4 << EOD
# budget ppl ppl_stderr
16 5.982278 0.077522
32 5.803438 0.075413
64 5.665987 0.075257
128 5.482428 0.074668
256 5.346088 0.074694
EOD
$d5 << EOD
# budget ppl ppl_stderr
16 6.023731 0.082375
32 5.821695 0.080233
64 5.602227 0.077005
128 5.375871 0.074418
256 5.322321 0.075018
EOD
set encoding utf8
set title "stories260K.gguf on tinystories-val-1000.txt: ctx 512, 769 chunks" noenhanced
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
     5.322319 with lines dt 2 lw 2 lc rgb "black" title "full"
set terminal svg size 1000,640 dynamic font ",11"
set output "ppl.svg"
replot
unset output
