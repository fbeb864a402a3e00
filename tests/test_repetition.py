"""The fast repetition check answers exactly like the definition."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from cobalt.reward.repetition import has_repetitive_pattern, naive_has_repetitive_pattern


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="ab\n", max_size=500))
def test_matches_definition_on_random_small_alphabet(s):
    assert has_repetitive_pattern(s) == naive_has_repetitive_pattern(s)


@st.composite
def near_repetitions(draw):
    """A block repeated 6..9 times, maybe cut or mutated, inside random text: the hard cases."""
    block = draw(st.text(alphabet="abc ", min_size=30, max_size=40))
    repeats = draw(st.integers(6, 9))
    body = block * repeats + block[: draw(st.integers(0, len(block)))]
    if draw(st.booleans()):
        at = draw(st.integers(0, len(body) - 1))
        body = body[:at] + "Z" + body[at + 1 :]
    return draw(st.text(alphabet="abc", max_size=60)) + body + draw(st.text(alphabet="abc", max_size=60))


@settings(max_examples=300, deadline=None)
@given(near_repetitions())
def test_matches_definition_on_adversarial_strings(s):
    assert has_repetitive_pattern(s) == naive_has_repetitive_pattern(s)


def test_boundaries():
    block = "0123456789abcdefghijklmnopqrstuv"  # 32 characters
    assert has_repetitive_pattern(block * 8)
    assert not has_repetitive_pattern(block * 7 + block[:-1])
    assert not has_repetitive_pattern("x" * 31 * 8 + "y")  # 248 x: one short of a 32-block x 8
    assert naive_has_repetitive_pattern("x" * 31 * 8 + "y") == has_repetitive_pattern("x" * 31 * 8 + "y")
    assert has_repetitive_pattern("x" * 256)  # a 32-block of x repeated 8 times
    assert not has_repetitive_pattern("")
