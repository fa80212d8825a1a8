# tova eval: accuracy by needle depth and length (niah_multikey), one panel per configuration, one colour scale. Re-draw with: gnuplot heat-niah_multikey.gp
$m0 << EOD
0.00
0.00
0.00
0.00
EOD
$m1 << EOD
0.00
0.00
0.00
0.00
EOD
$m2 << EOD
0.00
0.00
0.00
0.00
EOD
$m3 << EOD
0.00
0.00
0.00
0.00
EOD
$m4 << EOD
0.00
0.00
0.00
0.00
EOD
$m5 << EOD
0.00
0.00
0.00
0.00
EOD
$m6 << EOD
0.00
0.00
0.00
0.00
EOD
$m7 << EOD
0.00
0.00
0.00
0.00
EOD
$m8 << EOD
0.00
0.00
0.00
0.00
EOD
$m9 << EOD
0.00
0.00
0.00
0.00
EOD
$m10 << EOD
0.00
0.00
0.00
0.00
EOD
$m11 << EOD
0.00
0.00
0.00
0.00
EOD
$m12 << EOD
0.00
0.00
0.00
0.00
EOD
$m13 << EOD
0.00
0.00
0.00
0.00
EOD
$m14 << EOD
0.00
0.00
0.00
0.00
EOD
$m15 << EOD
0.00
0.00
0.00
0.00
EOD
$m16 << EOD
0.00
0.00
0.00
0.00
EOD
$m17 << EOD
0.00
0.00
0.00
0.00
EOD
$m18 << EOD
0.00
0.00
0.00
0.00
EOD
$m19 << EOD
0.00
0.00
0.00
0.00
EOD
$m20 << EOD
0.00
0.00
0.00
0.00
EOD
$m21 << EOD
0.00
0.00
0.00
0.00
EOD
$m22 << EOD
0.00
0.00
0.00
0.00
EOD
$m23 << EOD
0.00
0.00
0.00
0.00
EOD
$m24 << EOD
0.00
0.00
0.00
0.00
EOD
$m25 << EOD
0.00
0.00
0.00
0.00
EOD
$m26 << EOD
0.00
0.00
0.00
0.00
EOD
$m27 << EOD
0.00
0.00
0.00
0.00
EOD
$m28 << EOD
0.00
0.00
0.00
0.00
EOD
$m29 << EOD
0.00
0.00
0.00
0.00
EOD
$m30 << EOD
0.00
0.00
0.00
0.00
EOD
$m31 << EOD
0.00
0.00
0.00
0.00
EOD
$m32 << EOD
0.00
0.00
0.00
0.00
EOD
$m33 << EOD
0.00
0.00
0.00
0.00
EOD
set encoding utf8
set palette defined (0 "#b2182b", 50 "#f7f7f7", 100 "#2166ac")
set cbrange [0:100]
set cblabel "accuracy (%)"
set xtics ("1024" 0)
set ytics ("0" 0, "25" 1, "50" 2, "75" 3)
set xrange [-0.5:0.5]
set yrange [-0.5:3.5]
set xlabel "length (tokens)"
set ylabel "needle depth (%)"
set terminal pngcairo size 1020,3200 font ",10"
set output "heat-niah_multikey.png"
set multiplot layout 12,3 title "booklm-3m.gguf: 4 samples per cell, seed 42: niah_multikey by depth and length" noenhanced
set title "full" noenhanced
plot $m0 matrix with image notitle
set multiplot next
set multiplot next
set title "window k=128" noenhanced
plot $m1 matrix with image notitle
set title "window k=256" noenhanced
plot $m2 matrix with image notitle
set title "window k=512" noenhanced
plot $m3 matrix with image notitle
set title "sink:4 k=128" noenhanced
plot $m4 matrix with image notitle
set title "sink:4 k=256" noenhanced
plot $m5 matrix with image notitle
set title "sink:4 k=512" noenhanced
plot $m6 matrix with image notitle
set title "h2o k=128" noenhanced
plot $m7 matrix with image notitle
set title "h2o k=256" noenhanced
plot $m8 matrix with image notitle
set title "h2o k=512" noenhanced
plot $m9 matrix with image notitle
set title "tova k=128" noenhanced
plot $m10 matrix with image notitle
set title "tova k=256" noenhanced
plot $m11 matrix with image notitle
set title "tova k=512" noenhanced
plot $m12 matrix with image notitle
set title "snapkv k=128" noenhanced
plot $m13 matrix with image notitle
set title "snapkv k=256" noenhanced
plot $m14 matrix with image notitle
set title "snapkv k=512" noenhanced
plot $m15 matrix with image notitle
set title "keydiff k=128" noenhanced
plot $m16 matrix with image notitle
set title "keydiff k=256" noenhanced
plot $m17 matrix with image notitle
set title "keydiff k=512" noenhanced
plot $m18 matrix with image notitle
set title "kvzip k=128" noenhanced
plot $m19 matrix with image notitle
set title "kvzip k=256" noenhanced
plot $m20 matrix with image notitle
set title "kvzip k=512" noenhanced
plot $m21 matrix with image notitle
set title "expected-attention k=128" noenhanced
plot $m22 matrix with image notitle
set title "expected-attention k=256" noenhanced
plot $m23 matrix with image notitle
set title "expected-attention k=512" noenhanced
plot $m24 matrix with image notitle
set title "rkv k=128" noenhanced
plot $m25 matrix with image notitle
set title "rkv k=256" noenhanced
plot $m26 matrix with image notitle
set title "rkv k=512" noenhanced
plot $m27 matrix with image notitle
set title "tova+merge k=128" noenhanced
plot $m28 matrix with image notitle
set title "tova+merge k=256" noenhanced
plot $m29 matrix with image notitle
set title "tova+merge k=512" noenhanced
plot $m30 matrix with image notitle
set title "h2o+merge k=128" noenhanced
plot $m31 matrix with image notitle
set title "h2o+merge k=256" noenhanced
plot $m32 matrix with image notitle
set title "h2o+merge k=512" noenhanced
plot $m33 matrix with image notitle
unset multiplot
set terminal svg size 1020,3200 dynamic font ",10"
set output "heat-niah_multikey.svg"
set multiplot layout 12,3 title "booklm-3m.gguf: 4 samples per cell, seed 42: niah_multikey by depth and length" noenhanced
set title "full" noenhanced
plot $m0 matrix with image notitle
set multiplot next
set multiplot next
set title "window k=128" noenhanced
plot $m1 matrix with image notitle
set title "window k=256" noenhanced
plot $m2 matrix with image notitle
set title "window k=512" noenhanced
plot $m3 matrix with image notitle
set title "sink:4 k=128" noenhanced
plot $m4 matrix with image notitle
set title "sink:4 k=256" noenhanced
plot $m5 matrix with image notitle
set title "sink:4 k=512" noenhanced
plot $m6 matrix with image notitle
set title "h2o k=128" noenhanced
plot $m7 matrix with image notitle
set title "h2o k=256" noenhanced
plot $m8 matrix with image notitle
set title "h2o k=512" noenhanced
plot $m9 matrix with image notitle
set title "tova k=128" noenhanced
plot $m10 matrix with image notitle
set title "tova k=256" noenhanced
plot $m11 matrix with image notitle
set title "tova k=512" noenhanced
plot $m12 matrix with image notitle
set title "snapkv k=128" noenhanced
plot $m13 matrix with image notitle
set title "snapkv k=256" noenhanced
plot $m14 matrix with image notitle
set title "snapkv k=512" noenhanced
plot $m15 matrix with image notitle
set title "keydiff k=128" noenhanced
plot $m16 matrix with image notitle
set title "keydiff k=256" noenhanced
plot $m17 matrix with image notitle
set title "keydiff k=512" noenhanced
plot $m18 matrix with image notitle
set title "kvzip k=128" noenhanced
plot $m19 matrix with image notitle
set title "kvzip k=256" noenhanced
plot $m20 matrix with image notitle
set title "kvzip k=512" noenhanced
plot $m21 matrix with image notitle
set title "expected-attention k=128" noenhanced
plot $m22 matrix with image notitle
set title "expected-attention k=256" noenhanced
plot $m23 matrix with image notitle
set title "expected-attention k=512" noenhanced
plot $m24 matrix with image notitle
set title "rkv k=128" noenhanced
plot $m25 matrix with image notitle
set title "rkv k=256" noenhanced
plot $m26 matrix with image notitle
set title "rkv k=512" noenhanced
plot $m27 matrix with image notitle
set title "tova+merge k=128" noenhanced
plot $m28 matrix with image notitle
set title "tova+merge k=256" noenhanced
plot $m29 matrix with image notitle
set title "tova+merge k=512" noenhanced
plot $m30 matrix with image notitle
set title "h2o+merge k=128" noenhanced
plot $m31 matrix with image notitle
set title "h2o+merge k=256" noenhanced
plot $m32 matrix with image notitle
set title "h2o+merge k=512" noenhanced
plot $m33 matrix with image notitle
unset multiplot
unset output
