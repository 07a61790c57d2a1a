#!/usr/bin/env python3
"""Every `kiln ...` command written in the docs is one kiln has, with options its --help lists.

    doc_options.py KILN SOURCE_DIR     checks README.md, docs/ (every .md) and samples/
    doc_options.py KILN --self-test    checks that planted mistakes are found

Where commands are read:
  - Markdown: fenced code blocks, line by line, and inline code spans (which may wrap lines).
  - Shell scripts and every other text file of samples/: each line, with the lines a
    trailing backslash continues joined first; kiln is spelled kiln, build/host/kiln,
    "$kiln", ${KILN}, and so on; "${name[@]}" stands for the words of the array (defined in
    the script or in a file it sources).
  - Python (samples/stability/reproduce.py): the commands are lists of strings, put together
    from pieces, so the option strings of the file (all but argparse's) are checked against
    the help of every command the file runs.

A command is `kiln WORD [SUB]` up to the end of its shell command (|, ;, &&, ), >, a comment
or the end of the span); `kiln train|eval|decode --precision fp16` stands for each of the
three. Its help is what kiln prints for that very line with --help appended: --help anywhere
prints the help of the command the line runs (train's --model picks the kind; eval and decode
without a checkpoint that exists here list every kind's options). Each --option of the line
must start an option row of that help. A word after `kiln` in code that is not a command
kiln --help lists is reported too (prose such as "kiln reads" is not code and is not read).
"""
import os
import re
import shlex
import subprocess
import sys
import tempfile

KILN_TOKEN = r'(?:"?\$\{?(?:kiln|KILN)\}?"?|(?<![\w$.-])(?:[\w./-]*/)?kiln)'
COMMAND_RE = re.compile(KILN_TOKEN + r'[ \t]+([a-z][a-z0-9-]*(?:\|[a-z][a-z0-9-]*)*)')
OPTION_RE = re.compile(r'(?:^|(?<=[\s"\'(]))(--[a-z0-9][a-z0-9-]*)')
# what ends a shell command: a pipe, a list operator, a closing substitution, a redirection,
# a comment
END_RE = re.compile(r'\|\||\||;|&&|&|\)|`|(?:^|(?<=\s))#|[0-9]?>|<')
SUBCOMMANDS = {"tokenizer": {"train", "import", "encode", "decode", "bench"}, "pairs": {"from-mo"}}


def read(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


class Kiln:
    """kiln's command list (from kiln --help) and help texts, each asked once."""

    def __init__(self, exe):
        self.exe = os.path.abspath(exe)
        self.cache = {}
        top = self.run(["--help"])
        self.commands, self.bench = set(), set()
        for line in top.splitlines():
            m = re.match(r"^  (bench [a-z-]+|[a-z-]+) ", line)
            if m:
                words = m.group(1).split()
                (self.bench if len(words) == 2 else self.commands).add(words[-1])
        self.commands.add("dev")  # the developer tools, left out of kiln --help on purpose
        SUBCOMMANDS["bench"] = self.bench
        SUBCOMMANDS["dev"] = {"parity", "seq2seq-parity", "bert-parity"}

    def run(self, args):
        key = tuple(args)
        if key not in self.cache:
            with tempfile.TemporaryDirectory() as here:  # no --ckpt of a doc exists here
                p = subprocess.run([self.exe] + args, cwd=here, capture_output=True, text=True, timeout=60)
            if p.returncode != 0:
                raise SystemExit(f"doc_options: kiln {' '.join(args)}: exit {p.returncode}: {p.stderr.strip()}")
            self.cache[key] = p.stdout
        return self.cache[key]

    def help_options(self, words, args):
        """The options kiln's help for the line `kiln WORDS ARGS --help` lists. Of ARGS only
        what chooses the help is passed (train's --model, bench train's --lora), so that
        the lines of one command share one run; the rest cannot change it (no --ckpt of the
        docs exists where kiln runs), as host_help checks."""
        chosen = []
        for i, a in enumerate(args):
            if a == "--model" and i + 1 < len(args):
                chosen += args[i:i + 2]
            elif a.startswith("--model=") or a == "--lora":
                chosen.append(a)
        text = self.run(words + chosen + ["--help"])
        return set(re.findall(r"^ +(--[a-z0-9][a-z0-9-]*)", text, re.M))


def command_end(text):
    """The length of the shell command at the start of text (quotes are skipped over)."""
    i, quote = 0, None
    while i < len(text):
        c = text[i]
        if quote:
            if c == quote:
                quote = None
        elif c in "\"'":
            quote = c
        elif c == "\n":
            return i
        else:
            m = END_RE.match(text, i)
            if m and (m.group(0) != "#" or i == 0 or text[i - 1].isspace()):
                return i
        i += 1
    return i


def split_args(text):
    try:
        return shlex.split(text)
    except ValueError:
        return text.split()


def quoted_at(text, offset):
    """Whether offset is inside a quoted string of its line."""
    quote = None
    for c in text[text.rfind("\n", 0, offset) + 1:offset]:
        if quote:
            quote = None if c == quote else quote
        elif c in "\"'":
            quote = c
    return quote is not None


def commands_in(text):
    """(offset, word, the text after it, at a command's place) of each kiln command in code
    text. A plain `kiln` inside quotes is text ("build kiln first"), not a command; a word
    after kiln is taken for a command name only where a command starts (a line's start,
    after |, ;, &&, ( or a backtick), else it may be prose in a listing."""
    for m in COMMAND_RE.finditer(text):
        variable = text[m.start()] in "\"$"
        if not variable and quoted_at(text, m.start()):
            continue
        before = text[text.rfind("\n", 0, m.start()) + 1:m.start()].rstrip()
        placed = variable or before in ("", "$") or before.endswith(("|", ";", "&&", "(", "`"))
        rest = text[m.end():]
        for word in m.group(1).split("|"):
            yield m.start(), word, rest, placed


ARRAY_DEF_RE = re.compile(r"\b([A-Za-z_]\w*)\+?=\(([^()]*)\)", re.S)
ARRAY_USE_RE = re.compile(r'"?\$\{([A-Za-z_]\w*)\[@\]\}"?')


def shell_arrays(text, root):
    """The bash arrays the script and the files it sources (paths from the source tree's
    root, as the samples source samples/nanogpt_cpu.sh) define: name -> their words, every
    definition's and addition's together."""
    arrays = {}
    texts = [text]
    for m in re.finditer(r"^\s*(?:\.|source)\s+([\w./-]+\.sh)\s*$", text, re.M):
        if root and os.path.isfile(os.path.join(root, m.group(1))):
            texts.append(read(os.path.join(root, m.group(1))))
    for t in texts:
        for m in ARRAY_DEF_RE.finditer(t):
            arrays[m.group(1)] = arrays.get(m.group(1), "") + " " + m.group(2).replace("\\\n", " ")
    return arrays


def check_code(kiln, path, text, line_of, problems, counts, arrays=None):
    for offset, word, rest, placed in commands_in(text):
        where = f"{path}:{line_of(offset)}"
        if word not in kiln.commands:
            if placed:
                problems.append(f"{where}: `kiln {word}`: no such command in kiln --help")
            continue
        words = [word]
        sub = re.match(r"[ \t]+([a-z][a-z0-9-]*)", rest)
        if word in SUBCOMMANDS and sub and sub.group(1) in SUBCOMMANDS[word]:
            words.append(sub.group(1))
            rest = rest[sub.end():]
        elif word in ("tokenizer", "pairs", "dev"):
            continue  # `kiln tokenizer` alone: the group, whose help names its subcommands
        args = rest[:command_end(rest)]
        if arrays:  # "${config[@]}": the options the array holds
            args = ARRAY_USE_RE.sub(lambda m: arrays.get(m.group(1), m.group(0)), args)
        options = [o for o in OPTION_RE.findall(args) if o != "--help"]
        counts["commands"] += 1
        if not options:
            continue
        listed = kiln.help_options(words, split_args(args))
        for o in options:
            counts["options"] += 1
            if o not in listed:
                problems.append(f"{where}: kiln {' '.join(words)}: {o} is not in its --help")


def line_counter(text):
    starts = [0] + [i + 1 for i, c in enumerate(text) if c == "\n"]

    def line_of(offset):
        lo, hi = 0, len(starts)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (mid, hi) if starts[mid] <= offset else (lo, mid)
        return lo + 1

    return line_of


def check_markdown(kiln, path, text, problems, counts):
    line_of = line_counter(text)
    fenced = []  # (offset, text) of fenced lines
    in_fence = False
    pos = 0
    for line in text.splitlines(keepends=True):
        if line.lstrip().startswith("```"):
            in_fence = not in_fence
        elif in_fence:
            fenced.append((pos, line))
        pos += len(line)
    # each fenced block is a script: continued lines joined, comments read as prose
    blocks = []
    for offset, line in fenced:
        if blocks and blocks[-1][0] + len(blocks[-1][1]) == offset:
            blocks[-1][1] += line
        else:
            blocks.append([offset, line])
    for offset, block in blocks:
        check_script(kiln, path, block, problems, counts, lambda o, base=offset: line_of(base + o))
    # inline spans, fences blanked out (same length, so offsets stay)
    prose = list(text)
    for offset, line in fenced:
        prose[offset:offset + len(line)] = re.sub(r"[^\n]", " ", line)
    prose = "".join(prose)
    prose = re.sub(r"^\s*```.*$", lambda m: " " * len(m.group(0)), prose, flags=re.M)
    for m in re.finditer(r"`([^`]+)`", prose):
        span = m.group(1).replace("\n", " ")
        check_code(kiln, path, span, lambda o, base=m.start(1): line_of(base + o), problems, counts)


def check_script(kiln, path, text, problems, counts, line_of=None):
    line_of = line_of or line_counter(text)
    # a continued line joins the next, offsets kept: the backslash-newline becomes two spaces
    joined = re.sub(r"\\\n", "  ", text)
    # comments are prose: blanked out of the code, their inline code spans read as markdown's
    code = list(joined)
    for m in re.finditer(r"(?:^|(?<=\s))#.*$", joined, re.M):
        if quoted_at(joined, m.start()):
            continue
        code[m.start():m.end()] = " " * (m.end() - m.start())
        for span in re.finditer(r"`([^`]+)`", m.group(0)):
            check_code(kiln, path, span.group(1), lambda o, base=m.start() + span.start(1): line_of(base + o),
                       problems, counts)
    check_code(kiln, path, "".join(code), line_of, problems, counts, shell_arrays(text, ROOT[0]))


def check_python(kiln, path, text, problems, counts):
    words = sorted(set(re.findall(r'\bkiln\b[^\n\]]*?,\s*"([a-z][a-z-]*)"', text)))
    if not words:
        return check_script(kiln, path, text, problems, counts)
    listed = set()
    for w in words:
        if w not in kiln.commands:
            problems.append(f"{path}: runs `kiln {w}`: no such command in kiln --help")
            continue
        listed |= kiln.help_options([w], [])
    line_of = line_counter(text)
    own = set(re.findall(r'add_argument\(\s*"(--[a-z0-9-]+)"', text))  # the script's own options
    for m in re.finditer(r'"(--[a-z0-9][a-z0-9-]*)"', text):
        if m.group(1) in own:
            continue
        counts["options"] += 1
        if m.group(1) not in listed:
            problems.append(f"{path}:{line_of(m.start())}: {m.group(1)} is in no --help of kiln {', '.join(words)}")


def check_file(kiln, path, shown, problems, counts):
    text = read(path)
    counts["files"] += 1
    if path.endswith(".md"):
        check_markdown(kiln, shown, text, problems, counts)
    elif path.endswith(".py"):
        check_python(kiln, shown, text, problems, counts)
    else:
        check_script(kiln, shown, text, problems, counts)


def doc_files(source):
    files = [os.path.join(source, "README.md")]
    for top, want in (("docs", (".md",)), ("samples", None)):
        for root, dirs, names in os.walk(os.path.join(source, top)):
            dirs.sort()
            for name in sorted(names):
                if want is None or name.endswith(want):
                    files.append(os.path.join(root, name))
    return files


def is_text(path):
    with open(path, "rb") as f:
        return b"\0" not in f.read(8192)


ROOT = [None]  # the source tree being checked: where scripts' sourced files are found


def check_tree(kiln, source):
    ROOT[0] = source
    problems, counts = [], {"files": 0, "commands": 0, "options": 0}
    for path in doc_files(source):
        if is_text(path) and not path.endswith((".c", ".h", ".txt", ".json", ".tsv")):
            check_file(kiln, path, os.path.relpath(path, source), problems, counts)
    return problems, counts


def self_test(kiln):
    """Planted mistakes, one of each kind the check must find, and lines it must pass."""
    with tempfile.TemporaryDirectory() as tree:
        os.makedirs(os.path.join(tree, "docs"))
        os.makedirs(os.path.join(tree, "samples"))
        with open(os.path.join(tree, "README.md"), "w") as f:
            f.write("Decode with `kiln decode --ckpt run/model.safetensors\n--beam 4 --no-such-beam 2` and\n"
                    "```\nkiln eval --ckpt m.safetensors --split held-out   # fine: a BERT checkpoint's\n"
                    "kiln tokenizer train --data x --vocab 300 --vocab-size 3 --out t.tok\n"
                    "kiln translate --input x\nkiln train --data x \\\n  --no-such-continued 1   # a comment\n```\n")
        with open(os.path.join(tree, "docs", "a.md"), "w") as f:
            f.write("`kiln train|eval|decode --precision fp16 --bf16` and `kiln train --model seq2seq --batch-tokens 9`\n")
        with open(os.path.join(tree, "samples", "conf.sh"), "w") as f:
            f.write("conf() {\n  config=(--layers 2 --heads 2\n          --no-such-in-array 3)\n}\n")
        with open(os.path.join(tree, "samples", "run.sh"), "w") as f:
            f.write('"$kiln" train --model bert --data "$d" --out "$o" \\\n  --block 30 \\\n'
                    '  --no-such-train-option 1 | grep loss\n"$kiln" bench decode --models x --no-such-bench 1\n'
                    '. samples/conf.sh\nconf\n"$kiln" train --data x "${config[@]}" --out y\n')
        problems, counts = check_tree(kiln, tree)
    expected = [
        "README.md:1: kiln decode: --no-such-beam is not in its --help",
        "README.md:5: kiln tokenizer train: --vocab-size is not in its --help",
        "README.md:6: `kiln translate`: no such command in kiln --help",
        "README.md:7: kiln train: --no-such-continued is not in its --help",
        "docs/a.md:1: kiln train: --bf16 is not in its --help",
        "docs/a.md:1: kiln eval: --bf16 is not in its --help",
        "docs/a.md:1: kiln decode: --bf16 is not in its --help",
        "samples/run.sh:1: kiln train: --no-such-train-option is not in its --help",
        "samples/run.sh:4: kiln bench decode: --no-such-bench is not in its --help",
        "samples/run.sh:7: kiln train: --no-such-in-array is not in its --help",
    ]
    if sorted(problems) != sorted(expected):
        print("doc_options: the self-test's planted mistakes were not found as expected:")
        for p in sorted(set(problems) ^ set(expected)):
            print(("  unexpected: " if p in problems else "  missed:     ") + p)
        return 1
    print(f"ok: the self-test's {len(expected)} planted mistakes are found, and nothing else "
          f"({counts['commands']} commands)")
    return 0


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    kiln = Kiln(argv[1])
    if argv[2] == "--self-test":
        return self_test(kiln)
    problems, counts = check_tree(kiln, argv[2])
    for p in problems:
        print(p)
    # the reading must find the docs' commands, or the check would pass on nothing
    if counts["commands"] < 150 or counts["options"] < 300:
        print(f"doc_options: only {counts['commands']} commands and {counts['options']} options found")
        return 1
    if problems:
        print(f"doc_options: {len(problems)} options or commands in the docs that kiln's --help does not have")
        return 1
    print(f"ok: {counts['options']} options of {counts['commands']} kiln commands in {counts['files']} files "
          "are in their commands' --help")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
