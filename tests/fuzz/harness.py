"""The parent side of the fuzzer: seed files, mutations, workers, the table."""
from __future__ import annotations

import base64
import json
import os
import random
import re
import resource
import select
import subprocess
import sys
import tempfile
import time
from collections import Counter

FORMATS = ("v2", "minbpe", "tiktoken", "hf", "counts", "sidecar", "extension")
BACKENDS = ("rust", "reference")
CLASSES = ("ok", "refused", "round-trip", "crash", "hang", "memory")
DOCS = ["the cat sat on the mat", "the dog sat on the log", "今日は良い天気です",
        "naïve café, x\u0301 🙂!"] * 4
#: special tokens in the seeds, so that mutations reach every reader's special-token door
SPECIALS = ["<|endoftext|>", "<|pad|>", "<|fim_prefix|>"]


def seeds() -> tuple[dict[str, bytes], bytes]:
    """A small valid file of each format (and the model the sidecar belongs to)."""
    import superword
    from superword import _provenance
    from superword.minbpe import RegexTokenizer
    out: dict[str, bytes] = {}
    with tempfile.TemporaryDirectory() as folder:
        tok = superword.train(DOCS, 275, "boundless", backend="rust")
        tok.register_special_tokens(SPECIALS)
        out["v2"] = tok.model_text().encode("utf-8")
        model = out["v2"]
        record = _provenance.make("boundless", {"vocab_size": 275}, [{"name": "docs.txt", "documents": 16,
                                                                     "bytes": 300}], {"count": 0.1}, 0.2)
        _provenance.write(os.path.join(folder, "m.model"), record, tok.model_text())
        with open(os.path.join(folder, "m.model.json"), "rb") as f:
            out["sidecar"] = f.read()
        m = RegexTokenizer()
        m.train(" ".join(DOCS), 300)
        m.register_special_tokens({s: 300 + i for i, s in enumerate(SPECIALS)})
        m.save(os.path.join(folder, "mb"))
        with open(os.path.join(folder, "mb.model"), "rb") as f:
            out["minbpe"] = f.read()
        plain = superword.train(DOCS, 275, "bpe", script_aware=False, backend="rust")
        plain.register_special_tokens(SPECIALS)
        plain.save_hf(os.path.join(folder, "hf"))
        with open(os.path.join(folder, "hf", "tokenizer.json"), "rb") as f:
            out["hf"] = f.read()
        ranks = [f"{base64.b64encode(bytes([b])).decode()} {b}" for b in range(256)]
        ranks += [f"{base64.b64encode(t.encode()).decode()} {256 + i}"
                  for i, t in enumerate(["th", "the", " c", " cat", "at", " s", " sat"])]
        out["tiktoken"] = ("\n".join(ranks) + "\n").encode()
        base = superword.Tokenizer.from_tiktoken(_write(
            os.path.join(folder, "r.tiktoken"), out["tiktoken"]), r" ?\w+| ?[^\w\s]+|\s+",
            {s: 263 + i for i, s in enumerate(SPECIALS)}, backend="rust")
        ext = superword.train(DOCS, algorithm="superbpe", base=base, supermerges=2, backend="rust")
        out["extension"] = ext.model_text().encode("utf-8")
        out["counts"] = superword.count(DOCS, backend="rust").to_bytes()
    return out, model


def _write(path: str, data: bytes) -> str:
    with open(path, "wb") as f:
        f.write(data)
    return path


_NUMBER = re.compile(rb"\d+")
_HOSTILE_NUMBERS = [b"0", b"1", b"-1", b"4294967295", b"4294967296", b"18446744073709551616",
                    b"99999999999999", b"9" * 40]


def mutate(data: bytes, rng: random.Random) -> bytes:
    """One to four random edits: flip a byte, cut, repeat or insert a stretch, swap or repeat
    lines, set a number to a hostile value, or cut the end."""
    b = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        if not b:
            b += bytes([rng.randrange(256)])
        op = rng.randrange(8)
        i = rng.randrange(len(b))
        if op == 0:
            b[i] ^= 1 << rng.randrange(8)
        elif op == 1:
            del b[i:i + rng.randint(1, 64)]
        elif op == 2:
            j = min(len(b), i + rng.randint(1, 256))
            b[i:i] = b[i:j] * rng.choice([1, 2, 16, 256])
        elif op == 3:
            b[i:i] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
        elif op == 4:
            numbers = list(_NUMBER.finditer(b))
            if numbers:
                m = rng.choice(numbers)
                b[m.start():m.end()] = rng.choice(_HOSTILE_NUMBERS)
        elif op == 5:
            lines = bytes(b).split(b"\n")
            x, y = rng.randrange(len(lines)), rng.randrange(len(lines))
            lines[x], lines[y] = lines[y], lines[x]
            b = bytearray(b"\n".join(lines))
        elif op == 6:
            lines = bytes(b).split(b"\n")
            x = rng.randrange(len(lines))
            lines[x:x] = [lines[x]] * rng.choice([1, 2, 50])
            b = bytearray(b"\n".join(lines))
        else:
            del b[rng.randrange(len(b) + 1):]
    return bytes(b)


class Worker:
    def __init__(self, memory: int):
        self.memory = memory
        self.start()

    def start(self) -> None:
        def limit() -> None:
            resource.setrlimit(resource.RLIMIT_AS, (self.memory, self.memory))
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in [root, *sys.path] if p))
        self.proc = subprocess.Popen([sys.executable, "-m", "tests.fuzz.worker"], cwd=root, env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, preexec_fn=limit)

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait()

    def ask(self, case: dict[str, str], timeout: float) -> tuple[str, str]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        try:
            self.proc.stdin.write((json.dumps(case) + "\n").encode())
            self.proc.stdin.flush()
        except BrokenPipeError:
            pass
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not ready:
            self.stop()
            self.start()
            return "hang", f"no answer in {timeout} s"
        line = self.proc.stdout.readline()
        if not line:
            code = self.proc.wait()
            self.start()
            # a worker that dies under the memory limit most likely ran out (a Rust abort)
            return ("memory" if code == -6 else "crash"), f"worker died ({code})"
        answer = json.loads(line)
        return answer["class"], answer.get("detail", "")


def run(seconds: float, seed: int, keep: str | None, memory: int, timeout: float) -> Counter:
    rng = random.Random(seed)
    files, model = seeds()
    table: Counter = Counter()
    found: dict[tuple[str, str], str] = {}
    worker = Worker(memory)
    end = time.monotonic() + seconds
    try:
        while time.monotonic() < end:
            fmt = rng.choice(FORMATS)
            backend = rng.choice(BACKENDS)
            data = mutate(files[fmt], rng)
            case = {"format": fmt, "backend": backend, "data": base64.b64encode(data).decode()}
            if fmt == "sidecar":
                case["model"] = base64.b64encode(model).decode()
            cls, detail = worker.ask(case, timeout)
            table[(fmt, cls)] += 1
            if cls not in ("ok", "refused") and (fmt, cls) not in found:
                found[(fmt, cls)] = detail
                if keep:
                    os.makedirs(keep, exist_ok=True)
                    with open(os.path.join(keep, f"{fmt}-{cls}-{table[(fmt, cls)]}-{backend}"), "wb") as f:
                        f.write(data)
    finally:
        worker.stop()
    print(f"{'format':10}" + "".join(f"{c:>11}" for c in CLASSES))
    for fmt in FORMATS:
        print(f"{fmt:10}" + "".join(f"{table[(fmt, c)]:>11}" for c in CLASSES))
    for (fmt, cls), detail in sorted(found.items()):
        print(f"first {cls} in {fmt}: {detail}")
    return table
