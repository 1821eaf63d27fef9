"""Supermerges on runs of pretokens (SPEC 7.4): the Rust encoder's scans (a stack scan for
runs of up to 32 tokens, the general one beyond) against the reference encoder, on random
texts made of the golden models' supermerge parts, so that runs of every length from 2 to a
few hundred tokens occur, most of them with many supermerges."""
from __future__ import annotations

import contextlib
import random

import pytest
import superword
from helpers import GOLDEN, need
from superword.reference.model import read_model

MODELS = [("taylorswift_400_v600", "boundless"), ("taylorswift_400_v600", "super"),
          ("multi_1230_v1500", "boundless"), ("multi_1230_v1500", "super")]


def parts(path) -> list[str]:
    """The texts of the tokens that supermerges join (those that decode as UTF-8)."""
    out = set()
    for m in read_model(path).supermerges:
        for t in (m.left, m.right):
            with contextlib.suppress(UnicodeDecodeError):
                out.add(t.decode("utf-8"))
    return sorted(out)


def texts(pieces: list[str], seed: int) -> tuple[list[str], int]:
    """Random texts of runs of `pieces`, cut by punctuation (which ends a run in these
    models); also the number of pieces used."""
    rng = random.Random(seed)
    out, used = [], 0
    for _ in range(300):
        runs = []
        for _ in range(rng.randint(1, 4)):
            # mostly short runs as in prose, some past the stack scan's 32 tokens
            n = rng.choice([1, 2, 2, 3, 4, 5, 8, 16, 31, 32, 33, 40, 100, 300])
            runs.append("".join(rng.choice(pieces) for _ in range(n)))
            used += n
        out.append(rng.choice([".", "!\n", ", 1984", "; ", "\n\n"]).join(runs))
    return out, used


@pytest.mark.parametrize("folder,name", MODELS, ids=[f"{f}-{n}" for f, n in MODELS])
def test_supermerge_runs_match_the_reference(folder, name):
    path = need(GOLDEN / folder / f"{name}.model")
    rust = superword.Tokenizer.load(path, backend="rust")
    ref = superword.Tokenizer.load(path, backend="reference")
    model = read_model(path)
    pieces = parts(path)
    assert len(pieces) >= 10
    docs, used = texts(pieces, seed=len(pieces))
    got = [rust.encode_ordinary(d) for d in docs]
    assert got == [ref.encode_ordinary(d) for d in docs]
    assert rust.encode_batch(docs, threads=2) == got
    # the texts really exercise supermerges: superword tokens in every text on average
    made = sum(model.is_super[i] for ids in got for i in ids)
    assert made > len(docs), (made, used)
