# tova eval: accuracy by needle depth and length (niah_multikey), one panel per configuration, one colour scale. Re-draw with: gnuplot heat-niah_multikey.gp
$m0 << EOD
100.00
75.00
75.00
EOD
$m1 << EOD
50.00
0.00
25.00
EOD
$m2 << EOD
75.00
25.00
25.00
EOD
$m3 << EOD
75.00
50.00
75.00
EOD
$m4 << EOD
75.00
75.00
50.00
EOD
$m5 << EOD
75.00
75.00
50.00
EOD
$m6 << EOD
100.00
75.00
75.00
EOD
$m7 << EOD
0.00
0.00
0.00
EOD
$m8 << EOD
0.00
0.00
0.00
EOD
$m9 << EOD
0.00
0.00
0.00
EOD
$m10 << EOD
0.00
0.00
0.00
EOD
$m11 << EOD
0.00
0.00
0.00
EOD
$m12 << EOD
0.00
0.00
0.00
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
set terminal pngcairo size 1020,1380 font ",10"
set output "heat-niah_multikey.png"
set multiplot layout 5,3 title "niah-13m-f16.gguf: 3 samples per cell, seed 1001: niah_multikey by depth and length" noenhanced
set title "full" noenhanced
plot $m0 matrix with image notitle
set multiplot next
set multiplot next
set title "snapkv k=128" noenhanced
plot $m1 matrix with image notitle
set title "snapkv k=256" noenhanced
plot $m2 matrix with image notitle
set title "snapkv k=512" noenhanced
plot $m3 matrix with image notitle
set title "kvzip k=128" noenhanced
plot $m4 matrix with image notitle
set title "kvzip k=256" noenhanced
plot $m5 matrix with image notitle
set title "kvzip k=512" noenhanced
plot $m6 matrix with image notitle
set title "expected-attention k=128" noenhanced
plot $m7 matrix with image notitle
set title "expected-attention k=256" noenhanced
plot $m8 matrix with image notitle
set title "expected-attention k=512" noenhanced
plot $m9 matrix with image notitle
set title "tova k=128" noenhanced
plot $m10 matrix with image notitle
set title "tova k=256" noenhanced
plot $m11 matrix with image notitle
set title "tova k=512" noenhanced
plot $m12 matrix with image notitle
unset multiplot
set terminal svg size 1020,1380 dynamic font ",10"
set output "heat-niah_multikey.svg"
set multiplot layout 5,3 title "niah-13m-f16.gguf: 3 samples per cell, seed 1001: niah_multikey by depth and length" noenhanced
set title "full" noenhanced
plot $m0 matrix with image notitle
set multiplot next
set multiplot next
set title "snapkv k=128" noenhanced
plot $m1 matrix with image notitle
set title "snapkv k=256" noenhanced
plot $m2 matrix with image notitle
set title "snapkv k=512" noenhanced
plot $m3 matrix with image notitle
set title "kvzip k=128" noenhanced
plot $m4 matrix with image notitle
set title "kvzip k=256" noenhanced
plot $m5 matrix with image notitle
set title "kvzip k=512" noenhanced
plot $m6 matrix with image notitle
set title "expected-attention k=128" noenhanced
plot $m7 matrix with image notitle
set title "expected-attention k=256" noenhanced
plot $m8 matrix with image notitle
set title "expected-attention k=512" noenhanced
plot $m9 matrix with image notitle
set title "tova k=128" noenhanced
plot $m10 matrix with image notitle
set title "tova k=256" noenhanced
plot $m11 matrix with image notitle
set title "tova k=512" noenhanced
plot $m12 matrix with image notitle
unset multiplot
unset output
