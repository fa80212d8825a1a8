# tova eval: accuracy by needle depth and length (niah_multikey), one panel per configuration, one colour scale. Re-draw with: gnuplot heat-niah_multikey.gp
$m0 << EOD
50.00
75.00
25.00
EOD
$m1 << EOD
25.00
100.00
0.00
EOD
$m2 << EOD
25.00
100.00
0.00
EOD
$m3 << EOD
50.00
75.00
25.00
EOD
set encoding utf8
set palette defined (0 "#b2182b", 50 "#f7f7f7", 100 "#2166ac")
set cbrange [0:100]
set cblabel "accuracy (%)"
set xtics ("1024" 0)
set ytics ("0" 0, "25" 1, "50" 2)
set xrange [-0.5:0.5]
set yrange [-0.5:2.5]
set xlabel "length (tokens)"
set ylabel "needle depth (%)"
set terminal pngcairo size 1020,600 font ",10"
set output "heat-niah_multikey.png"
set multiplot layout 2,3 title "niah-13m-f16.gguf: 3 samples per cell, seed 3003: niah_multikey by depth and length" noenhanced
set title "full" noenhanced
plot $m0 matrix with image notitle
set multiplot next
set multiplot next
set title "rkv k=128" noenhanced
plot $m1 matrix with image notitle
set title "rkv k=256" noenhanced
plot $m2 matrix with image notitle
set title "rkv k=512" noenhanced
plot $m3 matrix with image notitle
unset multiplot
set terminal svg size 1020,600 dynamic font ",10"
set output "heat-niah_multikey.svg"
set multiplot layout 2,3 title "niah-13m-f16.gguf: 3 samples per cell, seed 3003: niah_multikey by depth and length" noenhanced
set title "full" noenhanced
plot $m0 matrix with image notitle
set multiplot next
set multiplot next
set title "rkv k=128" noenhanced
plot $m1 matrix with image notitle
set title "rkv k=256" noenhanced
plot $m2 matrix with image notitle
set title "rkv k=512" noenhanced
plot $m3 matrix with image notitle
unset multiplot
unset output
