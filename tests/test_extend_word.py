"""One of our word models as the base (SPEC 10.6): SuperBPE's phase 2 with the word model fixed.
On the word model's own corpus it is SuperBPE trained from scratch, byte for byte; on another
corpus the word model's tokens and ids stay, in both backends alike."""
from __future__ import annotations

import warnings

import pytest
import superword
from helpers import GOLDEN, read_jsonl_texts
from superword.reference import model as ref_model

BACKENDS = ["reference", "rust"]


def taylor() -> list[str]:
    return read_jsonl_texts(GOLDEN / "taylorswift_400.jsonl")


def multi() -> list[str]:
    return read_jsonl_texts(GOLDEN / "multi_1230.jsonl")


@pytest.fixture(scope="module", params=[True, False], ids=["script-aware", "simple"])
def word(request):
    """A word model of ours (script-aware or simple mode), trained on taylorswift."""
    return superword.train(taylor(), 700, "bpe", script_aware=request.param)


def expand(model: superword.Tokenizer, ids: list[int]) -> list[int]:
    """Each superword replaced by the two tokens its supermerge joined, again and again."""
    parsed = ref_model.loads(model.model_text(), "m")
    id_of = {t: i for i, t in enumerate(parsed.vocab)}
    parts: dict[int, tuple[int, int]] = {}
    for m in parsed.supermerges:
        parts.setdefault(id_of[m.left + m.right], (id_of[m.left], id_of[m.right]))
    out: list[int] = []
    stack = list(reversed(ids))
    while stack:
        i = stack.pop()
        if parsed.is_super[i]:
            stack.extend(reversed(parts[i]))
        else:
            out.append(i)
    return out


@pytest.mark.parametrize("backend", BACKENDS)
def test_on_its_own_corpus_it_is_superbpe_trained_from_scratch(word, backend):
    n = len(word)
    extended = superword.train(taylor(), algorithm="superbpe", base=word, supermerges=60, backend=backend)
    scratch = superword.train(taylor(), n + 60, "superbpe", supermerges=60, script_aware=word._script_aware(),
                              backend=backend)
    assert extended.kind == "superbpe" and extended.num_supermerges >= 60
    assert extended.model_text() == scratch.model_text()


def test_on_another_corpus_the_backends_agree_and_the_word_ids_stay(word):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (enough text for every superword asked)
        models = [superword.train(multi(), algorithm="superbpe", base=word, supermerges=60, backend=b)
                  for b in BACKENDS]
    assert models[0].model_text() == models[1].model_text()
    tok = models[1]
    assert sum(sup for _, _, sup in tok) == 60
    assert [(i, t) for i, t, sup in tok if not sup] == [(i, t) for i, t, _ in word]  # every word token, its id
    assert all(i >= len(word) for i, _, sup in tok if sup)
    texts = [*multi()[:200], *taylor()[:50]]
    ours = [tok.encode(t) for t in texts]
    assert ours == [models[0].encode(t) for t in texts]
    assert sum(tok.is_superword(i) for ids in ours for i in ids) > 100
    assert [expand(tok, ids) for ids in ours] == [word.encode(t) for t in texts]


def test_a_model_file_is_a_base_and_counts_give_the_model_of_the_text(word, tmp_path):
    path = tmp_path / "word.model"
    word.save(path)
    direct = superword.train(multi(), algorithm="superbpe", base=str(path), supermerges=40)
    s = ref_model.loads(word.model_text(), "w").settings
    counts = superword.count(multi(), pattern=s.main_regex, script_aware=s.script_specific_regex is not None,
                             script_pattern=s.script_specific_regex, scripts=s.script_specific_scripts)
    counted = superword.train(counts=counts, algorithm="superbpe", base=word, supermerges=40)
    assert counted.model_text() == direct.model_text()
    assert direct.provenance["settings"]["base"] == "word.model"
    other = superword.count(multi(), script_aware=s.script_specific_regex is None)
    with pytest.raises(ValueError, match="needs counts made with its own"):
        superword.train(counts=other, algorithm="superbpe", base=word, supermerges=40)


def test_a_word_model_with_special_tokens_is_refused():
    tok = superword.train(taylor()[:50], 300, "bpe")
    tok.register_special_tokens(["<|end|>"])
    with pytest.raises(ValueError, match="special tokens cannot be a base"):
        superword.train(taylor(), algorithm="superbpe", base=tok, supermerges=5)


def test_superword_models_are_refused_as_a_base():
    boundless = superword.train(taylor()[:100], 400, "boundless")
    with pytest.raises(ValueError, match="has supermerges already"):
        superword.train(taylor(), algorithm="superbpe", base=boundless, supermerges=5)
