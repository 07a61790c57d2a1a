# The NAME line of each man page in a stream of pages (roff with the man or the mdoc macros,
# one page after another: each starts with .TH, or .Dd/.Dt for mdoc), as whatis(1) shows it:
# "name - description", one a line. Pages whose NAME line uses an escape this does not know,
# or does not read "name[, name...] - description", are left out.
#   zcat -f /usr/share/man/man1/*.gz | awk -f man_names.awk
function flush(   t) {
    t = text
    on = 0; done = 0; text = ""
    gsub(/\\f\(..|\\f\[[^]]*\]|\\f./, "", t)                  # font changes
    gsub(/\\-|\\\(en|\\\(em|\\\[em\]|\\\[en\]/, "-", t)         # dashes
    gsub(/\\&|\\%|\\:|\\c/, "", t)                             # zero-width escapes
    gsub(/\\\(aq/, "'", t); gsub(/\\ /, " ", t); gsub(/"/, "", t)
    gsub(/[ \t]+/, " ", t); sub(/^ /, "", t); sub(/ $/, "", t)
    if (t ~ /\\/) return
    if (t ~ /^[A-Za-z0-9_.:+-]+(, ?[A-Za-z0-9_.:+-]+)* - [^ ]/ && length(t) <= 120) print t
}
/^\.(TH|Dd|Dt)[ \t]/ { flush(); next }
/^\.S[Hh][ \t]/ {
    if (on) { done = 1; on = 0; next }
    h = $0; sub(/^\.S[Hh][ \t]+/, "", h); gsub(/"/, "", h)
    if (!done && toupper(h) == "NAME") on = 1
    next
}
!on { next }
/^\.N[md][ \t]/ {                                              # mdoc: .Nm name, .Nd description
    v = $0; sub(/^\.N[md][ \t]+/, "", v)
    text = text ($0 ~ /^\.Nd/ ? " - " : (text == "" ? "" : ", ")) v
    next
}
/^\.(B|I|BR|IR|RB|RI)[ \t]/ { v = $0; sub(/^\.[A-Z]+[ \t]+/, "", v); text = text " " v; next }
/^\./ { next }
{ text = text " " $0 }
END { flush() }
