"""The looped encoder of S5's word problem against two outside checks: Chapter 8's decoder
(``compile_dfa`` on ``word_problem_dfa``) and products of permutations computed here."""

import itertools

import pytest
import torch

from companion import steps
from companion.languages import all_strings, random_strings, word_problem
from companion.looped import looped_word_problem, loops, prefix_products

LETTERS = {0: (1, 0, 2, 3, 4), 1: (1, 2, 3, 4, 0)}  # (01) and (01234), x -> p[x]
INVERSE = {0: [0], 1: [1, 1, 1, 1]}  # (01234)^-1 = (01234)^4


def prefixes(word):
    """The product of each prefix, letters applied left to right, multiplied here."""
    p, found = tuple(range(5)), []
    for letter in word:
        p = tuple(LETTERS[letter][image] for image in p)
        found.append(p)
    return found


def identity_word(generator, m):
    """A random word of m letters followed by its inverse: always the identity."""
    u = random_strings(1, m, generator=generator)[0].tolist()
    return u + [x for letter in reversed(u) for x in INVERSE[letter]]


def test_every_word_to_length_9_matches_the_decoder_at_every_prefix():
    encoder = looped_word_problem(9)
    decoder = steps.compile_dfa(*steps.word_problem_dfa())
    states = torch.tensor(list(itertools.permutations(range(5))))
    for m in range(1, 10):
        w = all_strings(m)
        written, verdict = steps.decode(decoder, w)
        assert torch.equal(encoder(w) > 0, verdict), m
        assert torch.equal(prefix_products(encoder, w), states[written]), m


def test_long_words_are_multiplied_out_at_every_prefix():
    generator = torch.Generator().manual_seed(0)
    encoder = looped_word_problem(300)
    assert len(encoder.layers) == loops(300) + 1 == 10
    assert all(layer is encoder.block for layer in encoder.layers[:-1])  # weight-tied
    random = random_strings(8, 300, generator=generator)
    words = [identity_word(generator, 60) for _ in range(4)]
    for w in [*random.tolist(), *words]:
        expected = prefixes(w)
        got = prefix_products(encoder, torch.tensor([w]))[0]
        assert [tuple(p) for p in got.tolist()] == expected
        text = "".join("(01)" if x == 0 else "(01234)" for x in w)
        assert bool(encoder(torch.tensor([w]))[0] > 0) == word_problem(text)


def test_identity_words_are_accepted():
    generator = torch.Generator().manual_seed(1)
    encoder = looped_word_problem(256)
    for _ in range(6):
        w = identity_word(generator, 40)
        assert bool(encoder(torch.tensor([w]))[0] > 0), w
        assert not bool(encoder(torch.tensor([w + [1]]))[0] > 0)


def test_bad_input_is_refused_by_name():
    with pytest.raises(ValueError, match="max_length"):
        looped_word_problem(0)
    with pytest.raises(ValueError, match="max_length"):
        looped_word_problem(4)(all_strings(5))
    with pytest.raises(TypeError, match="generators"):
        looped_word_problem(4, generators="(01)")
    with pytest.raises(ValueError, match="generators"):
        looped_word_problem(4, generators=("(01)",))
    with pytest.raises(TypeError, match="encoder"):
        prefix_products(steps.parity_decoder(), "01")
