#!/usr/bin/python3
"""The expected values of tests/test_host_bleu.c, computed by sacreBLEU itself.

sacreBLEU is not packaged in Debian 12 and PyPI was not reachable from the development
machine, so this script runs sacreBLEU's real source: v2.6.0 from github.com/mjpost/sacrebleu,
unpacked so that SACREBLEU_SRC (default /tmp/sacrebleu-src) holds the `sacrebleu` package
directory. Run it with Debian's python3:

    /usr/bin/python3 tests/bleu_reference.py [SACREBLEU_SRC]

Two things are worked around without touching sacreBLEU's code:
  - the source tree lacks the `sacrebleu/version.py` that packaging generates, which the
    package's __init__ and metrics/base.py import; the package is therefore registered by
    hand (its __path__ only, so that `sacrebleu.metrics` and `sacrebleu.tokenizers` import
    without __init__), and `sacrebleu.version` with __version__ = "2.6.0";
  - `sacrebleu.utils` imports portalocker, tabulate, colorama and (through the data sets)
    lxml at module level, for file locking, tables, terminal colours and WMT XML files that
    BLEU never calls. Where those modules are missing, empty stand-ins are registered.
    (python3-portalocker, python3-tabulate, python3-colorama and python3-lxml exist in Debian 12 and would do as well; they are not needed by the
    test itself, whose expected values are hard-coded, so install-deps does not install them.)

The BLEU is sacreBLEU's default: BLEU() -> tokenize='13a', mixed case, 4-grams, smooth
'exp', no effective order; corpus_score(hyps, [refs]) with one reference per hypothesis.
The output is C, pasted into tests/test_host_bleu.c; floats are printed with repr (the
shortest text that reads back as the same double).
"""
import importlib.util
import os
import sys
import types

src = sys.argv[1] if len(sys.argv) > 1 else "/tmp/sacrebleu-src"
pkg_dir = os.path.join(src, "sacrebleu")
if not os.path.isdir(pkg_dir):
    sys.exit(f"no sacrebleu package under {src}")

for name in ("portalocker", "tabulate", "colorama", "lxml"):
    if importlib.util.find_spec(name) is None:
        stub = types.ModuleType(name)
        stub.tabulate = lambda *a, **k: ""  # `from tabulate import tabulate`
        sys.modules[name] = stub
        if name == "lxml":  # `import lxml.etree` (WMT XML test sets, which BLEU never reads)
            stub.etree = sys.modules["lxml.etree"] = types.ModuleType("lxml.etree")
package = types.ModuleType("sacrebleu")
package.__path__ = [pkg_dir]
sys.modules["sacrebleu"] = package
version = types.ModuleType("sacrebleu.version")  # metrics/base.py imports it for signatures
version.__version__ = "2.6.0"
sys.modules["sacrebleu.version"] = version

from sacrebleu.metrics import BLEU  # noqa: E402
from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a  # noqa: E402

# (name, hypotheses, references): the cases of test_host_bleu.c, in its order.
CASES = [
    ("perfect",
     ["Die Katze sitzt auf der Matte.", "Heute ist ein schöner Tag!"],
     ["Die Katze sitzt auf der Matte.", "Heute ist ein schöner Tag!"]),
    ("no_match",
     ["xyz qrs tuv"],
     ["Das ist gut ."]),
    # unigrams and bigrams match, no 3- or 4-gram does: exp smoothing gives 100/(2*total)
    # and 100/(4*total)
    ("exp_smoothing",
     ["der Hund bellt laut und die Katze schläft"],
     ["die Katze schläft während der Hund bellt"]),
    # the hypothesis is a shorter exact part of the reference: brevity penalty exp(1 - 8/5)
    ("brevity_penalty",
     ["Das Haus ist sehr groß"],
     ["Das Haus ist sehr groß und sehr alt"]),
    # longer than the reference: no penalty, ratio > 1
    ("longer_than_reference",
     ["Das Haus ist sehr groß und sehr alt und schön"],
     ["Das Haus ist sehr groß und sehr alt"]),
    ("german",
     ["Der Preis beträgt 3,50 Euro pro Stück.",
      "„Wir kommen morgen“, sagte sie &amp; lachte.",
      "Die Version 2.6.0 wurde am 12.05.2024 veröffentlicht - endlich!",
      "Die Straße ist 1-2 km lang (ca. 1.500 m).",
      "Klicken Sie auf &quot;Speichern&quot;, um die Datei zu sichern.",
      "Ein E-Mail-Programm für 10-15 Benutzer & mehr.",
      "Fehler: Datei „/etc/passwd“ nicht gefunden (Code 2); erneut versuchen?",
      "Es kostet $5 oder 4,99€ – 20% Rabatt, d.h. fast nichts."],
     ["Der Preis liegt bei 3,50 Euro pro Stück.",
      "\"Wir kommen morgen\", sagte sie und lachte.",
      "Version 2.6.0 wurde am 12.05.2024 veröffentlicht – endlich!",
      "Die Straße ist 1-2 km lang (etwa 1.500 m).",
      "Klicken Sie auf \"Speichern\", um die Datei zu speichern.",
      "Ein E-Mail-Programm für 10-15 Benutzer &amp; mehr.",
      "Fehler: Datei „/etc/passwd“ wurde nicht gefunden (Code 2); nochmal versuchen?",
      "Es kostet 5 $ oder 4,99 € – 20 % Rabatt, d. h. fast nichts."]),
    # 13a's line handling inside BLEU: trailing (Unicode) whitespace is stripped before the
    # tokenizer runs, "<skipped>" vanishes, "-\n" joins, "\n" is a space, &lt; &gt; unescape,
    # and U+00A0 / U+3000 split words like a space
    ("line_handling",
     ["Zeilen-\numbruch <skipped>und\nmehr &lt;b&gt; Text\u00a0hier \u3000",
      "Ende-\n"],
     ["Zeilenumbruch und mehr <b> Text hier",
      "Ende -"]),
    ("empty_hypothesis",
     ["", "Ein Satz hier"],
     ["Ein Satz", "Ein Satz hier"]),
]

# tokenizer-only cases: Tokenizer13a itself (no rstrip; that is BLEU's preprocessing)
TOKENIZER_CASES = [
    "Hello, world. 3.14 and 1,000 -- 5-6 a-b (x){y}[z] <tag> \"q\" 'apos' a/b @#$%^&*+=|~`_!?;:",
    "e.g. ,start end. .5 5. x.,y 7,a a,7 1.2.3",
    "&amp;lt; &quot;zitiert&quot; &gt; &amp; &amp;amp; & ;",
    "a<skipped>b <skip<skipped>ped> line-\nbreak line\nfeed  tab\there ",
    "Größe: 3,5 m²; Preis: 4,99 € — „Zitat“ …",
    "x\u00a0y\u2003z\u3000w\u0085v\u200bu",  # U+200B is not whitespace for str.split
    "",
    "   ",
]


def c_string(s):
    """s as a C string literal of its UTF-8 bytes (printable ASCII kept, the rest escaped)."""
    out, after_hex = [], False
    for b in s.encode("utf-8"):
        c = chr(b)
        if after_hex and c in "0123456789abcdefABCDEF":
            out.append('""')  # a hex escape would swallow the digit
        after_hex = False
        if c == '"' or c == "\\":
            out.append("\\" + c)
        elif c == "\n":
            out.append("\\n")
        elif c == "\t":
            out.append("\\t")
        elif 32 <= b < 127:
            out.append(c)
        else:
            out.append(f"\\x{b:02x}")
            after_hex = True
    return '"' + "".join(out) + '"'


print("/* generated by tests/bleu_reference.py (sacreBLEU 2.6.0 source) */")
print("static const bleu_case cases[] = {")
bleu = BLEU()
for name, hyps, refs in CASES:
    r = bleu.corpus_score(hyps, [refs])
    print(f"    {{.name = \"{name}\", .n = {len(hyps)},")
    print("     .hyp = {" + ", ".join(c_string(h) for h in hyps) + "},")
    print("     .ref = {" + ", ".join(c_string(x) for x in refs) + "},")
    print(f"     .matches = {{{', '.join(str(c) for c in r.counts)}}}, "
          f".totals = {{{', '.join(str(t) for t in r.totals)}}}, "
          f".sys_len = {r.sys_len}, .ref_len = {r.ref_len},")
    print(f"     .score = {r.score!r}, .bp = {r.bp!r}, .ratio = {r.ratio!r},")
    print(f"     .precisions = {{{', '.join(repr(p) for p in r.precisions)}}}}},"
          f"  /* {r.format()} */")
print("};")
print()
tok = Tokenizer13a()
print("static const tokenizer_case tokenizer_cases[] = {")
for text in TOKENIZER_CASES:
    print(f"    {{{c_string(text)},\n     {c_string(tok(text))}}},")
print("};")
