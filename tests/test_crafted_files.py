"""Small crafted files, one per format, each built to cost a reader much more than its size:
a model whose merges make tokens of megabytes, a minbpe file whose merges double a token, a
count file whose runs share all but one id.  Each must load and encode, or be refused with a
``ValueError`` naming the file, in a child process whose peak memory stays under
``PEAK_MB`` (no timings: the memory bound is the test)."""
from __future__ import annotations

import base64
import json
import os
import subprocess
import sys

import pytest
import superword
from superword.reference.tokens import render

PEAK_MB = 300

#: merges k = (k-1, k-1) from "a", up to a token of 2**DOUBLINGS bytes (1 MB)
DOUBLINGS = 20

CHILD = r'''
import json, resource, sys, warnings
import superword
from superword.minbpe import RegexTokenizer
path, kind, backend = sys.argv[1:4]
report = {}
try:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if kind == "model":
            tok = superword.Tokenizer.load(path, backend=backend)
        elif kind == "tiktoken":
            tok = superword.Tokenizer.from_tiktoken(path, superword.CL100K_PATTERN, backend=backend)
        elif kind == "hf":
            tok = superword.Tokenizer.from_hf(path, backend=backend)
        elif kind == "minbpe":
            tok = RegexTokenizer()
            tok.load(path)
        elif kind == "counts":
            tok = None
            superword.train(counts=path, vocab_size=300, backend=backend)
    if tok is not None:
        encode = tok.encode_ordinary if kind == "minbpe" else tok.encode
        report["ids"] = len(encode("a" * 2 ** int(sys.argv[4])))
    report["warnings"] = [str(w.message) for w in caught]
except ValueError as e:
    report["refused"] = str(e)
# this process's own high-water mark: Linux carries ru_maxrss over from the forking parent
# (pytest, hundreds of MB late in a run) across exec, VmHWM belongs to the new address space
with open("/proc/self/status") as status:
    hwm = [line.split()[1] for line in status if line.startswith("VmHWM:")]
report["peak_mb"] = int(hwm[0]) / 1024 if hwm else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps(report))
'''


def run_child(path, kind: str, backend: str = "rust", text_log2: int = DOUBLINGS) -> dict:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    out = subprocess.run([sys.executable, "-c", CHILD, str(path), kind, backend, str(text_log2)],
                         capture_output=True, text=True, env=env, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    report = json.loads(out.stdout.splitlines()[-1])
    assert report["peak_mb"] < PEAK_MB, report
    return report


def chain(n: int) -> list[bytes]:
    """The halves of the doubling merges: "a", "aa", "aaaa", ... (``n`` of them)."""
    return [b"a" * (1 << k) for k in range(n)]


def v2_doubling_file(tmp_path, n: int = DOUBLINGS):
    base = superword.train(["the cat sat on the mat"] * 3, 260, "bpe", backend="reference")
    lines = base.model_text().split("\n")
    config = lines[lines.index("words") + 1]
    vocab = [bytes([b]) for b in range(256)] + [h + h for h in chain(n)]
    out = ["BoundlessBPE v2 word", "vocabulary", str(len(vocab))]
    out += [f"{i} {render(t)} 0 0" for i, t in enumerate(vocab)]
    out += ["special_tokens", "0", "words", config, "merges", str(n)]
    out += [f"{k} {render(h)} {render(h)} 1 0" for k, h in enumerate(chain(n))]
    out += ["deletions", "0", ""]
    path = tmp_path / "chain.model"
    path.write_text("\n".join(out), encoding="utf-8")
    return path


@pytest.mark.parametrize("backend", ["rust", "reference"])
def test_a_model_of_megabyte_tokens_loads_and_encodes(tmp_path, backend):
    # 20 merges, 4 MB of file; the rust encoder finds the reachable tokens from the merges,
    # the reference by encoding each one (so it is given a smaller chain)
    n = DOUBLINGS if backend == "rust" else 14
    report = run_child(v2_doubling_file(tmp_path, n), "model", backend, text_log2=n)
    assert report["ids"] == 1, report


def test_a_minbpe_file_of_doubling_merges_is_refused_naming_the_file_and_line(tmp_path):
    # 339 bytes whose merges k = (k-1, k-1) would make a token of 2**44 bytes
    lines = ["minbpe v1", "", "0", "97 97", *(f"{k - 1} {k - 1}" for k in range(257, 300))]
    path = tmp_path / "d.model"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    report = run_child(path, "minbpe")
    assert report.get("refused", "").startswith(f"{path}, line "), report


def test_a_minbpe_file_of_doubling_merges_within_the_limit_loads(tmp_path):
    lines = ["minbpe v1", "", "0", "97 97", *(f"{k - 1} {k - 1}" for k in range(257, 256 + 16))]
    path = tmp_path / "d.model"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert run_child(path, "minbpe", text_log2=16)["ids"] == 1


def test_a_tiktoken_file_of_megabyte_tokens_loads_and_encodes(tmp_path):
    tokens = [bytes([b]) for b in range(256)] + [h + h for h in chain(DOUBLINGS)]
    path = tmp_path / "chain.tiktoken"
    path.write_bytes(b"".join(base64.b64encode(t) + b" %d\n" % i for i, t in enumerate(tokens)))
    assert run_child(path, "tiktoken")["ids"] == 1


def test_a_tokenizer_json_of_megabyte_tokens_loads_and_encodes(tmp_path):
    tok = superword.train(["the cat sat on the mat"] * 3, 260, "bpe", script_aware=False, backend="rust")
    tok.save_hf(tmp_path / "hf")
    path = tmp_path / "hf" / "tokenizer.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    model = data["model"]
    for h in chain(DOUBLINGS):
        if render(h + h) not in model["vocab"]:
            model["vocab"][render(h + h)] = len(model["vocab"])
        model["merges"].append(f"{render(h)} {render(h)}")
    path.write_text(json.dumps(data), encoding="utf-8")
    assert run_child(path, "hf")["ids"] == 1


def count_file_with_shared_runs(long: int, many: int) -> bytes:
    """A valid count file whose runs share all but one id with the run before (as in
    ``test_hostile_files.py``): written out, about ``long * many`` ids."""
    import struct
    import zlib

    from superword.reference.countfile import MAGIC, VERSION, _str, _varint
    body = bytearray()
    _str(body, r"\w+|\s+|[^\w\s]+")
    body.append(0)
    _str(body, r"\p{L}")
    body.append(1)
    _varint(body, 1)
    _varint(body, 1)
    _varint(body, long)
    body += b"\x00" * long
    _varint(body, 1)
    for k in range(many):
        for v in (long - 1 - k, 1, 1, 1):
            _varint(body, v)
    data = MAGIC + struct.pack("<IQ", VERSION, len(body)) + bytes(body)
    return data + struct.pack("<I", zlib.crc32(data))


@pytest.mark.parametrize("backend", ["rust", "reference"])
def test_a_count_file_of_shared_prefix_runs_is_refused_naming_the_file(tmp_path, backend):
    path = tmp_path / "runs.counts"
    path.write_bytes(count_file_with_shared_runs(90_000, 89_000))
    report = run_child(path, "counts", backend)
    assert report.get("refused", "").startswith(str(path)), report


def test_a_provenance_sidecar_nested_too_deep_is_ignored_with_a_warning_naming_it(tmp_path):
    tok = superword.train(["the cat sat on the mat"] * 3, 260, "bpe", backend="rust")
    path = tmp_path / "m.model"
    tok.save(path)
    sidecar = tmp_path / "m.model.json"
    sidecar.write_text("[" * 1_000_000, encoding="utf-8")
    report = run_child(path, "model", text_log2=10)
    assert report["ids"] >= 1
    assert any(w.startswith(f"{sidecar}: provenance sidecar ignored") for w in report["warnings"]), report
