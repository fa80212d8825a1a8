# tova eval: accuracy vs budget (niah_multikey). Re-draw with: gnuplot acc-niah_multikey.gp
$d0 << EOD
# budget accuracy%
128 41.667
256 41.667
512 50.000
EOD
set encoding utf8
set title "niah-13m-f16.gguf: 3 samples per cell, seed 3003: niah_multikey" noenhanced
set xlabel "budget k (states kept per layer)"
set ylabel "accuracy (%)"
set yrange [-3:103]
set key outside right top noenhanced
set grid
set logscale x 2
set xrange [91.42857142857143:716.8]
set xtics (128, 256, 512)
set terminal pngcairo size 1000,640 font ",11"
set output "acc-niah_multikey.png"
plot $d0 using 1:2 with linespoints lw 2 pt 5 ps 1 lc rgb "#332288" dt 1 title "rkv", \
     50.000 with lines dt 2 lw 2 lc rgb "black" title "full"
set terminal svg size 1000,640 dynamic font ",11"
set output "acc-niah_multikey.svg"
replot
unset output
