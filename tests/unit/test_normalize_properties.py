"""Properties of the one normalisation of text (`text.normalize`, issue 46 point 4), both ways.

Faithful: a context whose sentences carry ligatures, soft hyphens, zero-width characters,
decomposed accents, full-width or mathematical forms, bidi controls or Cyrillic and Greek
look-alike letters grounds a quote of the plain sentence (as a model writes it), the claim that
is that sentence stays ENT through grounding and support, and the evidence slices back to the
original text. Hallucinated: a changed number hidden behind the same characters is overturned
under a judge that calls it supported (quoting the closest sentence), and a quote carrying a
changed word or number is not found in the context. Letters never stand for digits: "5O" is
not "50".
"""

from __future__ import annotations

import unicodedata

from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from rt4chart.schemas.records import Document, Trace
from rt4chart.transforms import segment
from rt4chart.transforms.checks import evidence, specifics
from rt4chart.transforms.text.normalize import is_ignorable, mapped, normalize
from rt4chart.transforms.text.words import content_terms, fold

INVISIBLE = ["\u00ad", "\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u200e", "\u200f",
             "\u061c", "\ufe0f", "\u034f"]
BIDI_WRAPS = [("\u202a", "\u202c"), ("\u202b", "\u202c"), ("\u2066", "\u2069"),
              ("\u2067", "\u2069"), ("\u200e", "\u200e")]
LIGATURES = {"ffi": "ﬃ", "ffl": "ﬄ", "ff": "ﬀ", "fi": "ﬁ", "fl": "ﬂ"}
# Latin letter -> look-alikes of another script that TS #39 maps back to it.
LOOKALIKES = {"a": "аα", "c": "с", "e": "е", "i": "іι", "o": "оο", "p": "р", "s": "ѕ",
              "x": "х", "y": "у", "v": "ν", "j": "ј", "k": "κ", "h": "һ"}
NOUNS = ["office", "flask", "ferry", "museum", "kettle", "heater", "library", "official",
         "pharmacy", "coffee", "waffle", "scaffold", "shuffle", "clinic", "harbour", "village",
         "bakery", "garden", "stadium", "factory", "café", "résumé", "naïve", "façade"]
NAMES = ["Fjord", "Orla", "Vela", "Tarn", "Selva", "Brova", "Kestrel", "Nordic", "Fiffin",
         "Alpha", "Crispo", "Effie", "Zoë", "Saõ"]
VERBS = ["serves", "holds", "closes after", "opens after", "employs", "costs", "needs",
         "offers", "fills"]
UNITS = ["days", "hours", "minutes", "people", "kg", "litres", "euros", "visitors"]


def _fullwidth(word: str) -> str:
    return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in word)


def _math_bold(word: str) -> str:
    def bold(c: str) -> str:
        if "a" <= c <= "z":
            return chr(0x1D41A + ord(c) - ord("a"))
        if "A" <= c <= "Z":
            return chr(0x1D400 + ord(c) - ord("A"))
        if "0" <= c <= "9":
            return chr(0x1D7CE + ord(c) - ord("0"))
        return c
    return "".join(bold(c) for c in word)


@st.composite
def _invisible(draw, word: str) -> str:
    spots = draw(st.lists(st.integers(0, len(word)), min_size=1, max_size=3))
    out = word
    for spot in sorted(spots, reverse=True):
        out = out[:spot] + draw(st.sampled_from(INVISIBLE)) + out[spot:]
    return out


@st.composite
def _lookalike(draw, word: str) -> str:
    # Fewer than half of a word's letters: the word stays mostly Latin, as a spoof of it is.
    spots = [i for i, c in enumerate(word) if c.lower() in LOOKALIKES and c.islower()]
    assume(spots and len(word) >= 3)
    chosen = draw(st.lists(st.sampled_from(spots), min_size=1,
                           max_size=max(1, (len(word) - 1) // 2), unique=True))
    chosen = chosen[:max(1, (len(word) - 1) // 2)]
    letters = list(word)
    for i in chosen:
        letters[i] = draw(st.sampled_from(LOOKALIKES[word[i]]))
    return "".join(letters)


def _ligature(word: str) -> str:
    for plain, joined in LIGATURES.items():
        word = word.replace(plain, joined)
    return word


@st.composite
def distorted(draw, word: str) -> str:
    """`word` written in one of the ways a context may write it, all read the same."""
    way = draw(st.sampled_from(["plain", "invisible", "lookalike", "ligature", "decomposed",
                                "fullwidth", "math", "bidi"]))
    if way == "invisible":
        return draw(_invisible(word))
    if way == "lookalike" and any(c in LOOKALIKES for c in word) and len(word) >= 3:
        return draw(_lookalike(word))
    if way == "ligature":
        return _ligature(word)
    if way == "decomposed":
        return unicodedata.normalize("NFD", word)
    if way == "fullwidth":
        return _fullwidth(word)
    if way == "math" and word.isascii():
        return _math_bold(word)
    if way == "bidi":
        start, end = draw(st.sampled_from(BIDI_WRAPS))
        return start + word + end
    return word


@st.composite
def facts(draw, n: int = 3) -> list[tuple[str, str, str, str, int, str]]:
    """n plain facts (name, noun, verb, number, unit) with distinct names, nouns and numbers."""
    names = draw(st.lists(st.sampled_from(NAMES), min_size=n, max_size=n, unique=True))
    nouns = draw(st.lists(st.sampled_from(NOUNS), min_size=n, max_size=n, unique=True))
    numbers = draw(st.lists(st.integers(2, 999), min_size=n, max_size=n, unique=True))
    return [(names[i], nouns[i], draw(st.sampled_from(VERBS)), numbers[i],
             draw(st.sampled_from(UNITS))) for i in range(n)]


def _sentence(fact) -> str:
    name, noun, verb, number, unit = fact
    return f"The {name} {noun} {verb} {number} {unit}."


@st.composite
def written(draw, sentence: str) -> str:
    words = sentence[:-1].split(" ")
    return " ".join(draw(distorted(w)) for w in words) + "."


def _rendered(text: str):
    trace = Trace("t", "r", 0, "", (Document("d0", text),), "An answer.")
    prepared = segment.prepare(trace, segment.SegmentConfig())
    return prepared, segment.render_context(prepared)


def _through(verdict, rendered, claim: str):
    grounded = evidence.grounded_verdict(verdict, rendered, claim)
    return specifics.supported_verdict(grounded, claim, evidence.document_text(rendered))


@settings(deadline=None)
@given(facts(), st.data())
@example([("Vela", "flask", "holds", 500, "litres"), ("Orla", "kettle", "needs", 3, "minutes"),
          ("Tarn", "office", "employs", 24, "people")], None)
def test_a_faithful_quote_of_oddly_written_context_grounds_and_stays_ent(found, data):
    plain = [_sentence(f) for f in found]
    if data is None:  # the example: every kind at once, fixed
        context = "The Vеla ﬂask hol\u00adds \u200e５００\u200e litres. " \
                  "The Оrla kettle needs 𝟑 minu\u200btes. The Tarn oﬃce employs 24 people."
    else:
        context = " ".join(data.draw(written(s)) for s in plain)
    k = 0 if data is None else data.draw(st.integers(0, len(plain) - 1))
    prepared, rendered = _rendered(context)
    assume(len(prepared.sentences) == len(plain))  # the odd characters split no sentence
    label, spans, note, _ = _through(("ENT", [plain[k]]), rendered, plain[k])
    assert label == "ENT" and spans, (context, plain[k], note)
    for e in spans:
        assert context[e.start:e.end] == e.text
        assert normalize(e.text).lower() in normalize(context).lower()


@settings(deadline=None)
@given(facts(), st.data())
def test_a_changed_number_behind_odd_characters_is_overturned_under_a_lucky_quote(found, data):
    plain = [_sentence(f) for f in found]
    context = " ".join(data.draw(written(s)) for s in plain)
    k = data.draw(st.integers(0, len(plain) - 1))
    name, noun, verb, number, unit = found[k]
    other = data.draw(st.integers(2, 999).filter(
        lambda m: all(str(m) not in s for s in plain)))
    claim = _sentence((name, noun, verb, other, unit))
    prepared, rendered = _rendered(context)
    assume(len(prepared.sentences) == len(plain))
    # The judge calls it supported and quotes the sentence it changed, as a model writes it.
    label, _, note, _ = _through(("ENT", [plain[k]]), rendered, claim)
    assert label == "NIC" and "evidence lacks" in note, (context, claim, note)


@settings(deadline=None)
@given(facts(), st.data())
def test_a_quote_with_a_changed_word_or_number_is_not_found(found, data):
    plain = [_sentence(f) for f in found]
    context = " ".join(data.draw(written(s)) for s in plain)
    k = data.draw(st.integers(0, len(plain) - 1))
    name, noun, verb, number, unit = found[k]
    if data.draw(st.booleans()):
        noun = data.draw(st.sampled_from([n for n in NOUNS if n not in (f[1] for f in found)]))
    else:
        number = data.draw(st.integers(2, 999).filter(lambda m: m != number))
    quote = _sentence((name, noun, verb, number, unit))
    _, rendered = _rendered(context)
    found_spans, missing = evidence.align([quote], rendered)
    assert missing == 1 and not found_spans, (context, quote)


@given(st.integers(0, 99999).filter(lambda n: "0" in str(n) or "1" in str(n)),
       st.sampled_from(["O", "О", "Ο", "o", "о"]), st.sampled_from(["l", "I", "І", "ӏ", "Ι"]))
def test_letters_never_read_as_digits(number, zero_like, one_like):
    digits = str(number)
    lookalike = digits.replace("0", zero_like).replace("1", one_like)
    assert normalize(lookalike) != normalize(digits)
    _, rendered = _rendered(f"The course lasts {lookalike} days.")
    assert evidence.align([f"The course lasts {digits} days"], rendered)[1] == 1


@given(st.text(max_size=40), st.lists(st.tuples(st.integers(0, 40), st.sampled_from(INVISIBLE)),
                                      max_size=4))
@example("e\u0301", [(1, "\u200b")])
@example("\u0301a", [(0, "\u00ad")])
def test_invisible_characters_change_nothing_and_spans_map_back(text, inserts):
    spoiled = text
    for spot, ch in sorted(inserts, reverse=True):
        spoiled = spoiled[:spot] + ch + spoiled[spot:]
    assert normalize(spoiled) == normalize(text)
    m = mapped(spoiled)
    assert m.text == normalize(spoiled) or spoiled.isascii()
    assert len(m.starts) == len(m.ends) == len(m.text)
    assert all(0 <= s < e <= len(spoiled) for s, e in zip(m.starts, m.ends, strict=True))
    assert list(m.starts) == sorted(m.starts)
    assert not any(is_ignorable(c) for c in normalize(spoiled))


@given(st.text(max_size=40))
def test_normalising_twice_changes_nothing_and_ascii_is_left_alone(text):
    once = normalize(text)
    assert normalize(once) == once
    if text.isascii():
        assert once == text


@given(st.sampled_from(NOUNS + NAMES), st.data())
def test_every_way_of_writing_a_word_reads_as_the_word(word, data):
    odd = data.draw(distorted(word))
    assert fold(odd) == fold(word)
    assert content_terms(odd) == content_terms(word)


@given(st.sampled_from(["Москва", "работа", "понедельник", "Αθήνα", "ελληνικά", "東京駅",
                        "ホテル", "서울역", "fünf", "Łódź"]))
def test_a_word_of_one_script_is_compared_as_written(word):
    # Russian, Greek or Polish words are not turned into Latin look-alikes.
    assert normalize(word) == unicodedata.normalize("NFKC", word)


@given(st.sampled_from(NOUNS + NAMES), st.data())
def test_an_answer_span_covers_the_whole_of_an_oddly_written_word(word, data):
    from rt4chart.transforms.checks.spans import claim_spans

    odd = data.draw(distorted(word))
    sentence = f"We saw the {odd} there."
    found = claim_spans(sentence, 5, f"the {word}")
    assert found.source == "claim_text"
    ((start, end),) = found.spans
    # Its ligature, combining marks and invisible characters included, none left outside.
    assert sentence[start - 5:end - 5] == f"the {odd}"
