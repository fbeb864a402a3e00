"""The procedural problem families: one :class:`Family` per task, as data.

A family is a small stdin/stdout task (sum of a list, reverse the words of a line, ...). Its
instances differ by wording (``templates``), constants (``consts``), input layout (the formats
of its ``kind``) and tests; :mod:`cobalt.data.procedural.generate` makes them. Each family has two
independent implementations of its semantics: ``expr`` (Python source, the reference solution's
core, written into the program) and ``fn`` (used by the generator to compute expected outputs);
the tests check that they agree in the sandbox. ``wrong`` is a plausible buggy ``expr``.

Kinds: ``nums`` (a few named integers), ``list`` (a list ``a`` of integers), ``text`` (a line
``s`` of lowercase words, or one word when ``word`` is true).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field

_WORD_LIST = (
    "apple river stone cloud green light music table water happy quick brown fox jumps over lazy "
    "dog sun moon star tree house paper night bird small large blue red code data open close word "
    "line train plane book pen cat mouse rain snow wind fire earth sky road bridge city lake"
)
WORDS = tuple(_WORD_LIST.split())
LETTERS = "abcdefghijklmnopqrstuvwxyz"


@dataclass(frozen=True)
class Family:
    name: str
    title: str
    kind: str  # nums | list | text
    templates: tuple[str, ...]  # the task sentence; {placeholders} are the constants
    expr: str  # the answer as a Python expression of the input variables (and constants)
    fn: Callable  # fn(datum, consts) -> the answer (int, str or list)
    wrong: str  # a buggy expr, for mutation checks and synthetic wrong attempts
    names: tuple[str, ...] = ()  # nums: the variables, in input order
    lo: int = -100
    hi: int = 100
    out: str = "value"  # value: print(x) | list: numbers, on one line or one per line | space: one line
    answer: str = ""  # what is printed ("YES or NO", ...); default: one integer / the resulting numbers
    consts: Callable[[random.Random], dict] = field(default=lambda rng: {})
    setup: str = ""  # statements before the print (list kind only)
    formats: tuple[str, ...] = ()  # input layouts allowed; empty: all of the kind's
    make: Callable | None = None  # make(rng, case, consts) -> datum, instead of the kind's default
    word: bool = False  # text: one word instead of a line of words
    limits: str = ""  # the input's bounds, when not the kind's default


def _k(lo: int, hi: int, name: str = "k") -> Callable[[random.Random], dict]:
    return lambda rng: {name: rng.randint(lo, hi)}


def _pick(name: str, options) -> Callable[[random.Random], dict]:
    return lambda rng: {name: rng.choice(list(options))}


def _divisible_make(rng, case, c):
    if case == "min":
        return (0,)
    n = rng.randint(0, 10**4) if rng.random() < 0.5 else c["k"] * rng.randint(0, 1000)
    return (n,)


def _divmod_make(rng, case, c):
    if case == "min":
        return (0, rng.randint(1, 50))
    if case == "equal":
        v = rng.randint(1, 50)
        return (v, v)
    return (rng.randint(0, 1000), rng.randint(1, 50))


def _palindrome_make(rng, case, c):
    """Palindromes, near misses (same first and last letter) and plain words."""
    if case == "min":
        return rng.choice(LETTERS)
    half = "".join(rng.choice(LETTERS[:6]) for _ in range(rng.randint(2, 4)))
    word = half + rng.choice(["", rng.choice(LETTERS)]) + half[::-1]
    kind = {"equal": 0.0, "extreme": 0.5}.get(case, rng.random())
    if kind < 0.4:
        return word
    if kind < 0.7:  # change one inner letter: not a palindrome any more
        i = rng.randint(1, len(word) - 2)
        return word[:i] + rng.choice([ch for ch in LETTERS if ch != word[i]]) + word[i + 1 :]
    return rng.choice(WORDS)


def _three_make(order: int):
    """max/min of three: the "large" tests put the answer last (a bug that ignores c shows)."""

    def make(rng, case, c):
        values = [rng.randint(-100, 100) for _ in range(3)]
        if case == "equal":
            return (values[0],) * 3
        return tuple(sorted(values)[::order]) if case == "large" else tuple(values)

    return make


def _greater_make(rng, case, c):
    """count_greater: the "equal" test is all k (a >= for > shows)."""
    n = rng.randint(2, 10) if case != "large" else rng.randint(15, 25)
    if case == "equal":
        return [c["k"]] * n
    return [rng.randint(0, 20) for _ in range(1 if case == "min" else n)]


def _staircase_make(rng, case, c):
    """staircase: small examples (n <= 6), the rest up to 15."""
    return ({"min": 1, "small": rng.randint(1, 6), "extreme": 15}.get(case, rng.randint(1, 15)),)


def _digit_sum(n: int) -> int:
    total = 0
    while n:
        n, d = divmod(n, 10)
        total += d
    return total


def _staircase(n: int, ch: str) -> str:
    return "\n".join(ch * i for i in range(1, n + 1))


def _running(a: list[int]) -> list[int]:
    out, total = [], 0
    for x in a:
        total += x
        out.append(total)
    return out


def _product_mod(a: list[int], k: int) -> int:
    p = 1
    for x in a:
        p *= x
    return p % k


N2, N3 = ("a", "b"), ("a", "b", "c")

# The tables: one family per entry, fields in the order of Family's.
# fmt: off

NUMS = [
    Family("add_two", "Sum of Two Numbers", "nums",
           ("Print a + b.", "Print the sum of a and b.", "Add a and b and print the result."), "a + b",
           lambda x, c: x[0] + x[1], "a - b", N2, -1000, 1000),
    Family("subtract", "Difference", "nums",
           ("Print a - b.", "Subtract b from a and print the result.", "Print a minus b."), "a - b",
           lambda x, c: -(x[1] - x[0]), "b - a", N2, -1000, 1000),
    Family("abs_difference", "Distance", "nums",
           ("Print the absolute difference of a and b.", "Print |a - b|, the distance between a and b."),
           "abs(a - b)", lambda x, c: max(x) - min(x), "a - b", N2, -1000, 1000),
    Family("product_mod", "Product Modulo", "nums",
           ("Print (a * b) mod {k}.", "Print the remainder of a * b divided by {k}."), "a * b % {k}",
           lambda x, c: (x[0] * x[1]) % c["k"], "a * b // {k}", N2, 0, 10**5,
           consts=_pick("k", (7, 10, 13, 97, 100, 1000))),
    Family("max_three", "Largest of Three", "nums",
           ("Print the largest of a, b and c.", "Print the maximum of the three numbers."), "max(a, b, c)",
           lambda x, c: sorted(x)[-1], "max(a, b)", N3, make=_three_make(1)),
    Family("min_three", "Smallest of Three", "nums",
           ("Print the smallest of a, b and c.", "Print the minimum of the three numbers."), "min(a, b, c)",
           lambda x, c: sorted(x)[0], "min(a, b)", N3, make=_three_make(-1)),
    Family("divmod_pair", "Quotient and Remainder", "nums",
           ("Print the quotient a // b and the remainder a mod b, separated by a space.",
            "Divide a by b with integer division; print the quotient and the remainder on one line."),
           "divmod(a, b)", lambda x, c: [x[0] // x[1], x[0] - x[0] // x[1] * x[1]], "divmod(b, a)", N2, 0,
           1000, out="space", answer="two integers", make=_divmod_make,
           limits="0 <= a <= 1000, 1 <= b <= 50."),
    Family("linear", "Linear Function", "nums",
           ("Print {k} * n + {d}.", "Multiply n by {k}, add {d} and print the result."), "{k} * n + {d}",
           lambda x, c: x[0] * c["k"] + c["d"], "{k} * (n + {d})", ("n",), -1000, 1000,
           consts=lambda rng: {"k": rng.randint(2, 9), "d": rng.randint(1, 20)}),
    Family("digit_sum", "Digit Sum", "nums",
           ("Print the sum of the decimal digits of n.", "Add up the digits of n and print the total."),
           "sum(map(int, str(n)))", lambda x, c: _digit_sum(x[0]), "len(str(n))", ("n",), 0, 10**9),
    Family("divisible", "Divisibility", "nums",
           ("Print YES if n is divisible by {k}, otherwise print NO.",
            "If n is a multiple of {k}, print YES; else print NO."),
           '"YES" if n % {k} == 0 else "NO"', lambda x, c: "NO" if x[0] % c["k"] else "YES",
           '"YES" if n % {k} else "NO"', ("n",), 0, 10**4, answer="YES or NO", consts=_k(2, 12),
           make=_divisible_make),
    Family("sum_to_n", "Sum from 1 to n", "nums",
           ("Print 1 + 2 + ... + n.", "Print the sum of all integers from 1 to n."), "n * (n + 1) // 2",
           lambda x, c: sum(range(x[0] + 1)), "n * (n - 1) // 2", ("n",), 1, 10**4),
    Family("square_sum", "Sum of Squares", "nums",
           ("Print a * a + b * b.", "Print the sum of the squares of a and b."), "a * a + b * b",
           lambda x, c: x[0] ** 2 + x[1] ** 2, "(a + b) ** 2", N2),
    Family("staircase", "Staircase", "nums",
           ("Print n lines: line i has i * {w} characters '{ch}'.",
            "Draw a staircase of height n: the i-th line is i * {w} copies of '{ch}'."),
           '"\\n".join("{ch}" * ({w} * i) for i in range(1, n + 1))',
           lambda x, c: _staircase(x[0], c["ch"] * c["w"]),
           '"\\n".join("{ch}" * ({w} * i) for i in range(n))', ("n",), 1, 15, answer="the n lines",
           formats=("line",), consts=lambda rng: {"ch": rng.choice("*#+@o="), "w": rng.randint(1, 3)},
           make=_staircase_make),
    Family("table", "Multiples", "nums",
           ("Print n * 1, n * 2, ..., n * {k} on one line, separated by spaces.",
            "Print the first {k} multiples of n (n, 2n, ...) on one line, separated by spaces."),
           "[n * i for i in range(1, {k} + 1)]", lambda x, c: [x[0] * (i + 1) for i in range(c["k"])],
           "[n * i for i in range({k})]", ("n",), -50, 50, out="space", answer="the numbers",
           consts=_k(3, 10)),
]

LISTS = [
    Family("list_sum", "Sum of a List", "list",
           ("Print the sum of the numbers.", "Print the total of all the numbers."), "sum(a)",
           lambda a, c: _running(a)[-1], "sum(a[1:])"),
    Family("list_max", "Maximum", "list", ("Print the largest number.", "Print the maximum of the numbers."),
           "max(a)", lambda a, c: sorted(a)[-1], "a[-1]"),
    Family("list_min", "Minimum", "list", ("Print the smallest number.", "Print the minimum of the numbers."),
           "min(a)", lambda a, c: sorted(a)[0], "a[0]"),
    Family("average_floor", "Average", "list",
           ("Print the average of the numbers, rounded down to an integer.",
            "Print the integer part of the mean of the numbers."),
           "sum(a) // len(a)", lambda a, c: int(sum(a) / len(a)), "sum(a) // (len(a) + 1)", lo=0, hi=100),
    Family("count_greater", "Count Greater", "list",
           ("Print how many numbers are greater than {k}.", "Count the numbers strictly larger than {k}."),
           "sum(1 for x in a if x > {k})", lambda a, c: len([x for x in a if x > c["k"]]),
           "sum(1 for x in a if x >= {k})", lo=0, hi=20, consts=_k(3, 17), make=_greater_make),
    Family("count_multiples", "Count Multiples", "list",
           ("Print how many of the numbers are divisible by {k}.", "Count the multiples of {k} in the list."),
           "sum(1 for x in a if x % {k} == 0)", lambda a, c: len([x for x in a if not x % c["k"]]),
           "sum(1 for x in a if x % {k})", lo=0, hi=50, consts=_k(2, 5)),
    Family("reverse_list", "Reverse a List", "list",
           ("Print the numbers in reverse order.", "Reverse the list and print it."), "a[::-1]",
           lambda a, c: list(reversed(a)), "a", out="list"),
    Family("sort_asc", "Sort Ascending", "list",
           ("Print the numbers sorted from smallest to largest.", "Sort the numbers in increasing order."),
           "sorted(a)", lambda a, c: sorted(a, key=lambda x: -x)[::-1], "a", out="list"),
    Family("sort_desc", "Sort Descending", "list",
           ("Print the numbers sorted from largest to smallest.", "Sort the numbers in decreasing order."),
           "sorted(a, reverse=True)", lambda a, c: sorted(a)[::-1], "sorted(a)", out="list"),
    Family("filter_evens", "Even Numbers", "list",
           ("Print only the even numbers, in their original order.",
            "Keep the even numbers of the list, in the same order, and print them."),
           "[x for x in a if x % 2 == 0]", lambda a, c: [x for x in a if not x & 1],
           "[x for x in a if x % 2 == 1]", out="list",
           answer="the even numbers (an empty line if there are none)"),
    Family("running_sum", "Running Sums", "list",
           ("Print the running sums: the i-th printed number is the sum of the first i numbers.",
            "Print the prefix sums of the list (a1, a1 + a2, a1 + a2 + a3, ...)."),
           "[sum(a[:i + 1]) for i in range(len(a))]", lambda a, c: _running(a),
           "[sum(a[:i]) for i in range(len(a))]", out="list"),
    Family("max_minus_min", "Spread", "list",
           ("Print the largest number minus the smallest number.",
            "Print the difference between the maximum and the minimum."),
           "max(a) - min(a)", lambda a, c: sorted(a)[-1] - sorted(a)[0], "max(a) - a[0]"),
    Family("add_k", "Add a Constant", "list",
           ("Add {k} to every number and print the results in order.", "Print each number increased by {k}."),
           "[x + {k} for x in a]", lambda a, c: [c["k"] + x for x in a], "[x - {k} for x in a]", out="list",
           consts=_k(1, 20)),
    Family("sum_squares", "Sum of Squares of a List", "list",
           ("Print the sum of the squares of the numbers.", "Square every number and print the total."),
           "sum(x * x for x in a)", lambda a, c: sum(x**2 for x in a), "sum(a) ** 2"),
    Family("count_distinct", "Distinct Values", "list",
           ("Print how many different values the list contains.", "Count the distinct numbers."),
           "len(set(a))", lambda a, c: len({x: 0 for x in a}), "len(a)", lo=0, hi=9),
    Family("product_mod_list", "Product Modulo", "list",
           ("Print the product of all the numbers modulo {k}.",
            "Multiply all the numbers together and print the remainder modulo {k}."),
           "p", lambda a, c: _product_mod(a, c["k"]), "p + 1", lo=1, hi=100,
           setup="p = 1\nfor x in a:\n    p = p * x % {k}\n", consts=_pick("k", (7, 10, 11, 13, 1000))),
]

TEXT = [
    Family("upper_case", "Upper Case", "text",
           ("Print s in upper case.", "Convert every letter of s to a capital letter and print it."),
           "s.upper()", lambda s, c: "".join(chr(ord(ch) - 32) if ch != " " else ch for ch in s), "s.lower()",
           answer="the resulting text"),
    Family("reverse_string", "Reverse a String", "text",
           ("Print s reversed.", "Print the characters of s in reverse order."), "s[::-1]",
           lambda s, c: "".join(reversed(s)), "s", answer="the resulting text"),
    Family("reverse_words", "Reverse the Words", "text",
           ("Print the words of s in reverse order, separated by single spaces.",
            "Reverse the order of the words in s and print them."),
           '" ".join(s.split()[::-1])', lambda s, c: " ".join(reversed(s.split(" "))), "s[::-1]",
           answer="the resulting text"),
    Family("count_vowels", "Count Vowels", "text",
           ("Print how many vowels (a, e, i, o, u) s contains.",
            "Count the letters of s that are vowels (a, e, i, o, u)."),
           'sum(ch in "aeiou" for ch in s)', lambda s, c: len([ch for ch in s if ch in set("aeiou")]),
           's.count("a")'),
    Family("count_char", "Count a Letter", "text",
           ("Print how many times the letter '{ch}' occurs in s.", "Count the occurrences of '{ch}' in s."),
           's.count("{ch}")', lambda s, c: sum(1 for ch in s if ch == c["ch"]), 'len(s) - s.count("{ch}")',
           consts=_pick("ch", "aeort")),
    Family("word_count", "Count Words", "text", ("Print the number of words in s.", "Count the words of s."),
           "len(s.split())", lambda s, c: s.count(" ") + 1, 's.count(" ")'),
    Family("longest_word", "Longest Word", "text",
           ("Print the length of the longest word in s.",
            "Print how many letters the longest word of s has."),
           "max(len(w) for w in s.split())", lambda s, c: sorted(map(len, s.split(" ")))[-1],
           "len(max(s.split()))"),
    Family("palindrome", "Palindrome", "text",
           ("Print YES if s reads the same backwards, otherwise print NO.",
            "If s is a palindrome, print YES; else print NO."),
           '"YES" if s == s[::-1] else "NO"',
           lambda s, c: "YES" if all(s[i] == s[-1 - i] for i in range(len(s))) else "NO",
           '"YES" if s[0] == s[-1] else "NO"', answer="YES or NO", word=True, make=_palindrome_make),
    Family("capitalize_words", "Capitalize Words", "text",
           ("Print s with the first letter of every word in upper case.",
            "Capitalize each word of s and print it."),
           "s.title()", lambda s, c: " ".join(w[:1].upper() + w[1:] for w in s.split(" ")), "s.capitalize()",
           answer="the resulting text"),
    Family("acronym", "Acronym", "text",
           ("Print the first letters of the words of s, in upper case, as one word.",
            "Print the acronym of s: the capitalized first letter of each word."),
           '"".join(w[0] for w in s.split()).upper()',
           lambda s, c: "".join(w[0].upper() for w in s.split(" ")), '"".join(w[0] for w in s.split())',
           answer="the resulting text"),
    Family("remove_vowels", "Remove Vowels", "text",
           ("Print s with every vowel (a, e, i, o, u) removed.",
            "Delete the vowels (a, e, i, o, u) from s and print it."),
           '"".join(ch for ch in s if ch not in "aeiou")',
           lambda s, c: "".join(ch for ch in s if ch not in set("aeiou")), 's.replace("a", "")',
           answer="the resulting text"),
    Family("replace_spaces", "Replace Spaces", "text",
           ("Replace every space in s with '{sep}' and print the result.",
            "Print s with each space changed to '{sep}'."),
           's.replace(" ", "{sep}")', lambda s, c: c["sep"].join(s.split(" ")), 's.replace(" ", "")',
           answer="the resulting text", consts=_pick("sep", "-_.")),
]

# fmt: on

FAMILIES: dict[str, Family] = {f.name: f for f in NUMS + LISTS + TEXT}

# Held out entirely (the out-of-family set): one or two of each kind, each close to families that
# stay in training (min_three ~ max_three, max_minus_min ~ list_max + list_min, ...).
HELDOUT_FAMILIES = ("min_three", "square_sum", "max_minus_min", "running_sum", "word_count", "acronym")
IN_FAMILIES = tuple(name for name in FAMILIES if name not in HELDOUT_FAMILIES)
