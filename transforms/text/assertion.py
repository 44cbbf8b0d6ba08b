"""Does a sentence assert something checkable? The one classifier of rt4chart.

Decomposition coverage (`coverage.py`) re-adds a sentence that a judge left without claims only
when it makes a statement about the world a judge could hide; the offline decomposer
(`judges/lexical_claims.py`) gives claims only to such sentences. Both ask `classify`.

The decision reads the sentence's grammar and vocabulary, not a list of phrasings:

1. Parts that are not statements are set aside: a list marker or markdown, a trailing lead-in
   ("..., the lyrics are:", "Key points:"), labels of sources and parts ("Passage 3", "the
   second passage", "Option 1 or Option 2", "[2]"), word counts ("in 80 words"), a sentence
   adverb opening the sentence ("Unfortunately,").
2. Every remaining word is a stopword, a word about the sources, the answer, the reader or the
   discourse (`vocabulary.FRAME`), or a word about the world. Numbers, amounts, dates and times
   (`quantities`) and names (a capitalised word inside the sentence) are specifics.
3. A sentence with no world word and no specific asserts nothing checkable: a greeting, an
   offer, a refusal, a statement about the answer's own form, about the sources ("The second
   passage repeats the same information.") or to the reader ("It is recommended to consult an
   expert."), a conditional refusal, an impossibility statement.
4. Without a specific, a clause also asserts nothing when it is advice to look elsewhere
   ("Please contact the museum for details.", "You may want to check with your doctor."), a
   question, the answer presenting itself ("Here's how to poach an egg:"), or a sentence whose
   subject (past an opening phrase such as "Based on the passages,") is the writer, the answer
   or the sources and that reports no content ("The second passage repeats the same
   information.", "I kept the summary brief."); a reporting verb followed by a clause about the
   world ("Passage 2 says the hotel allows pets") is content.
5. Otherwise the sentence asserts something. It is about the sources when a source or label
   noun and a verb of saying frame it ("Passage 2 says the bridge opened in 1932." is a
   `source` claim), and says what they lack when a negation scopes the saying ("The passages
   do not mention the fee.", "There is no information about the price", "No date is given in
   the sources": `absence`), else it
   is a `fact`. A sentence of several clauses (cut at a colon, a semicolon or a dash) asserts
   what its clauses assert: "I hope this helps: the office moved." is a fact.

Errors fall on the safe side: an unknown word counts as a word about the world, so a sentence in
an unseen form is checked, not waved through.

Other languages: the words about the sources, the answer and the reader are English, so in
another language every word that is not a stopword of that language (`words.stopwords_of`)
counts as a word about the world, and a sentence there is `none` only when it has no such word
and no specific. Whether a short remark without a specific concerns what was asked is decided
with the question and the context (`coverage.check_coverage`). In a language that capitalises
its nouns (German) a capital letter does not make a name.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from rt4chart.transforms.text.language import (
    UNDETERMINED,
    detect,
    has_cjk,
    normalize_width,
    remark_length,
)
from rt4chart.transforms.text.names import entities
from rt4chart.transforms.text.quantities import read
from rt4chart.transforms.text.vocabulary import (
    ANSWER_NOUNS,
    COURTESY_VERBS,
    FRAME,
    NEGATIONS,
    REPORTING_VERBS,
    SEEK_VERBS,
    SOURCE_NOUNS,
    SPEECH_VERBS,
    WRAP_VERBS,
)
from rt4chart.transforms.text.words import STOPWORDS, fold, is_stopword, stem, stopwords_of

NONE, FACT, SOURCE, ABSENCE = "none", "fact", "source", "absence"

_MARKER_RE = re.compile(r"^\s*(?:[-*•·▪‣–—>#+]+|\(?\d{1,3}[.)]|\(?[a-z][.)])(?:\s+|$)")
_EMPHASIS_RE = re.compile(r"\*\*|__|`")
_LABEL_WORDS = (
    r"passages?|documents?|docs?|sources?|articles?|references?|paragraphs?|sections?|pages?"
    r"|lines?|options?|steps?|parts?|items?|points?|questions?|answers?|chapters?|figures?"
    r"|tables?|examples?|methods?|tips?|notes?|no\.|nos\.|numbers?|rules?|categor(?:y|ies)"
    r"|cases?|records?|excerpts?|snippets?|texts?|contexts?|reviews?|results?")
_NUMBERING = r"(?:#?\d+[a-z]?|[ivx]+|[a-h])\b"
# "Passage 3", "passages 1 and 2", "Option 1 or Option 2", "step 4:", "[2]", "(Doc 3, 5)".
_LABEL_RE = re.compile(
    r"\b(?:" + _LABEL_WORDS + r")\s*" + _NUMBERING + r"(?:\s*(?:,|&|and|or|-|–|to)\s*"
    + _NUMBERING + r")*(?:\s*[:.]\s*\d+\b)?"
    r"|\[\s*\d+(?:\s*[,;–-]\s*\d+)*\s*\]|^\(\s*\d+(?:\s*[,;–-]\s*\d+)*\s*\)\W*$", re.I)
_ORDINAL_LABEL_RE = re.compile(
    r"\b(?:first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|last|final|"
    r"\d+(?:st|nd|rd|th)|one|two|three|four|five|both|all|several|many|multiple|other)\s+"
    r"(?:of the\s+)?(?:" + _LABEL_WORDS + r")\b", re.I)
_WORD_COUNT_RE = re.compile(r"\b(?:in\s+|within\s+|to\s+)?(?:about\s+|under\s+|less than\s+|"
                            r"fewer than\s+|around\s+|exactly\s+|roughly\s+|nearly\s+|over\s+"
                            r"|some\s+|approximately\s+)?\d+\s+words?\b"
                            r"|\bword\s+count\s*:?\s*\d+", re.I)
_OPENING_ADVERB_RE = re.compile(r"^\s*[A-Za-z]+ly\s*,\s*")
_WORD_RE = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)*")
# Lead-in endings: a verb or determiner left hanging before the colon ("..., the lyrics are:").
_HANGING = frozenset(
    """is are was were be include includes including follows following these those here
    below as such like listed given provided shown summarized summarised outlined""".split())
# A part's label, then a title: "Step 2: Prepare The Dough", "Passage 3: Attaching Frames".
_TITLE_RE = re.compile(r"^(?:" + _LABEL_WORDS + r")\s*" + _NUMBERING + r"\s*[:.-]\s+"
                       r"(?P<title>(?:[A-Z0-9][\w'’&-]*|a|an|the|of|and|or|to|in|for|on|with)"
                       r"(?:\s+(?:[A-Z0-9][\w'’&-]*|a|an|the|of|and|or|to|in|for|on|with))*)$",
                       re.I)
# "Here is a summary of the news", "Below are the key points": the answer presenting its form.
_PRESENTATIVE_RE = re.compile(
    r"^(?:(?:sure|certainly|okay|ok|of course|yes)\W+)?(?P<opener>here(?:['’]s| is| are)"
    r"|below (?:is|are)|the following (?:is|are)|this is|these are)\b", re.I)
# A salutation: "Dear customer,", "Good morning!", "Hello there".
_SALUTATION = frozenset("hi hello hey dear greetings good".split())
_NEGATED_SOURCE_RE = re.compile(
    r"\b(?:no|not any|nothing|never)\s+(?P<a>[\w-]+)(?:\s+(?P<b>[\w-]+))?", re.I)
_PRONOUN_SUBJECTS = frozenset("i we you one".split())
_ADVICE_FILLER = frozenset(
    "not to be a an it is s always also just please do your own double".split())
# An opening phrase before the subject: "Based on the passages, ...", "In summary, ...".
_OPENING_RE = re.compile(r"^[^,]{1,60},\s+")
_DETERMINERS = frozenset("the a an this that these those both each all".split())
_CLAUSE_CUT_RE = re.compile(r"\s*(?:[:;]|\s[—–-]\s|—)\s*")
# What a lead-in announces: "follow these steps:", "the main points are as follows:".
_LEAD_IN_NOUNS = ANSWER_NOUNS | SOURCE_NOUNS | frozenset(stem(w) for w in """step steps tip tips
    way ways method methods thing things example examples instruction instructions guideline
    guidelines follows below data""".split())
# A sentence about the writer, the answer or the sources says nothing checkable only with at most
# this many words about the world: "The article has been criticized for its lack of accuracy
# and for damaging reputations" states what happened to the article.
MAX_FRAMED_WORLD = 3
# What the answer presents itself as: "Here's a brief guide on how to ...".
_PRESENTED_NOUNS = _LEAD_IN_NOUNS | frozenset(
    stem(w) for w in "guide guides walkthrough rundown recap".split())
# What "no ..." says the sources lack: "no information", "no details", "no mention".
_ABSENT_NOUNS = frozenset(stem(w) for w in "mention details detail word record".split())
_YES_NO_RE = re.compile(r"^\s*(?:yes|no|yeah|nope|correct|incorrect|true|false)\b\W*$", re.I)
# A condition or a counterfactual: "If the passages did not contain it, I would have said...".
_CONDITIONAL_RE = re.compile(r"^\s*(?:if|unless|had|were|should)\b|\bwould have\b", re.I)
_FIRST_PERSON = frozenset("i we me us my our".split())
# What follows a verb of looking elsewhere that takes no thing: "check with", "research online".
_ELSEWHERE = frozenset("with for about into up on out as online further more elsewhere first"
                       .split())
# Words that open a subordinate clause before the subject: "If ..., I can say more."
_SUBORDINATORS = frozenset("""if unless when whenever while although though since because as
    once until before after without were had should given""".split())
# Verbs of looking elsewhere that may take a thing instead: "check the oil" is an instruction.
_THING_VERBS = frozenset(stem(w) for w in "check verify confirm double-check read research seek"
                         .split())
_POSSESSIVES = frozenset("your their his her its our my any some".split())
# Subjects of a clause about the writer or the reader: "note that I have no access to ...".
_SELF_SUBJECTS = _FIRST_PERSON | frozenset("you your this these it".split())
_MODALS = frozenset("may might can could should would will must also just".split())
_BE = frozenset("is are was were been be".split())
# Languages whose nouns are all capitalised: a capital letter is no sign of a name there.
NOUN_CAPITALISING = frozenset({"de", "lb"})


@dataclass(frozen=True)
class Assertion:
    """What a sentence asserts, as the classifier reads it.

    Attributes:
        kind: "none" (nothing checkable), "fact", "source" (what the sources say) or "absence"
            (what the sources do not say).
        world: the words about the world (folded, in order, once each).
        specifics: numbers, amounts, dates, times and names, as written.
        negated: whether a negation is part of what it asserts.
        reason: one line saying why, for notes and tests.
    """

    kind: str
    world: tuple[str, ...] = ()
    specifics: tuple[str, ...] = ()
    negated: bool = False
    reason: str = ""

    @property
    def checkable(self) -> bool:
        """Whether it states something about the world that a judge could hide: a world
        word or a specific ("None mentioned." is an absence claim with neither)."""
        return self.kind != NONE and bool(self.world or self.specifics)


def strip_marker(sentence: str) -> str:
    """The sentence without its list marker ("- ", "2. ", "(b) ", "> ") and outer spaces."""
    return _MARKER_RE.sub("", sentence.strip(), count=1).strip()


def _clean(sentence: str) -> str:
    body = strip_marker(normalize_width(sentence))  # "：" is a colon, "？" a question mark
    body = _EMPHASIS_RE.sub("", body).strip()
    return body.strip("\"'“”‘’ \t")


def _drop_lead_in(body: str) -> str:
    """The sentence without a trailing lead-in: a sentence ending in a colon introduces what
    follows. A heading ("Key features:") or a lead-in whose last word is left hanging or names
    the answer's parts ("..., the lyrics are:", "you can follow these steps:") asserts nothing
    by itself unless it has a number; otherwise the words before the colon are kept."""
    text = body.rstrip()
    if not text.endswith(":"):
        return body
    head = text[:-1].rstrip()
    words = head.split()
    if not any(ch.isdigit() for ch in _set_aside(head)):
        last = words[-1].lower().strip(".,\"'") if words else ""
        length = remark_length(head) if has_cjk(head) else len(words)
        if length <= 6 or last in _HANGING or stem(last) in _LEAD_IN_NOUNS:
            return ""
    return head


def _set_aside(body: str) -> str:
    """Blank out labels, word counts and an opening sentence adverb."""
    body = _OPENING_ADVERB_RE.sub(" ", body)
    for pattern in (_ORDINAL_LABEL_RE, _LABEL_RE, _WORD_COUNT_RE):
        body = pattern.sub(" ", body)
    return body


def _heading(body: str) -> bool:
    """A markdown heading, or a part's label followed by a title in Title Case (the title's
    own words capitalised, no full stop)."""
    if re.match(r"^\s*#{1,6}\s", body) or re.match(r"^\s*(\*\*|__)[^*_]+\1\s*:?\s*$", body):
        return True
    match = _TITLE_RE.match(body.strip())
    if not match:
        return False
    title = match.group("title").split()
    return all(w[0].isupper() or w[0].isdigit() or len(w) <= 4 for w in title)


def _salutation(body: str) -> bool:
    words = fold(body).split()
    if words[:1] == ["good"] and words[1:2] not in (["morning"], ["afternoon"], ["evening"],
                                                    ["day"], ["night"], ["question"], ["luck"]):
        return False  # "good options for groups." is not a greeting
    return bool(words) and words[0] in _SALUTATION and len(words) <= 4 and not any(
        ch.isdigit() for ch in body) and body.rstrip()[-1:] in ("!", ",", ".", "")


def _presents_the_answer(body: str) -> bool:
    """"Here is a summary of...", "Here's how to...", "Below are the main points...": the
    answer presenting itself, whatever topic it names, also past an opening phrase ("Based on
    the given passages, here is how to...")."""
    match = _PRESENTATIVE_RE.match(body.strip())
    if match:
        body = body.strip()
    else:
        body = _past_opening(body.strip())
        match = _PRESENTATIVE_RE.match(body)
    if not match:
        return False
    ahead = _WORD_RE.findall(body[match.end("opener"):].lower())[:4]
    if ahead[:1] and ahead[0] in ("how", "what", "why", "where", "when", "which", "who"):
        return True
    return any(stem(w) in _PRESENTED_NOUNS for w in ahead)


def _about_sources(body: str) -> bool:
    """A verb of saying with a source noun or a label ("Passage 2 says..."), or a negated
    source noun ("There is no information about the price")."""
    stems = {stem(w) for w in fold(body).split()}
    if stems & SPEECH_VERBS and (stems & SOURCE_NOUNS or _LABEL_RE.search(body)):
        return True
    return any(stem(word.lower()) in SOURCE_NOUNS | _ABSENT_NOUNS
               for m in _NEGATED_SOURCE_RE.finditer(body) for word in m.groups() if word)


def _negated_saying(body: str) -> bool:
    """A negation that scopes the saying, not the content: "do not mention", "is not stated",
    "no information", "neither passage" (not "the passages say it is not free")."""
    toks = _WORD_RE.findall(body.lower())
    for i, tok in enumerate(toks):
        if tok in NEGATIONS or tok.endswith(("n't", "n’t")):
            ahead = {stem(w) for t in toks[i + 1:i + 4] for w in fold(t).split()}
            if ahead & (SPEECH_VERBS | SOURCE_NOUNS | _ABSENT_NOUNS):
                return True
    return _negated_subject_passive(toks)


def _negated_subject_passive(toks: list[str]) -> bool:
    """A negated subject whose verb is a passive of saying: "No opening date is given in the
    sources", "Nothing about fees was mentioned": the saying is what is denied."""
    if not toks or toks[0] not in ("no", "nothing", "none"):
        return False
    return any(t in _BE and stem(toks[i + 1]) in SPEECH_VERBS
               for i, t in enumerate(toks[:-1]))


def _world_words(text: str, stopwords: frozenset[str] = STOPWORDS,
                 frame: frozenset[str] = FRAME) -> list[str]:
    """Words about the world, folded, once each; a lone capital letter is a name ("X is A").
    A Han, Kana or Hangul bigram that is not a stopword is a word about the world."""
    world: list[str] = []
    for i, raw in enumerate(_WORD_RE.findall(text)):
        single = len(raw) == 1 and raw.isupper() and raw != "I" and not (i == 0 and raw == "A")
        for w in fold(raw).split():
            if (single or len(w) > 1 and not w.isdigit() and not is_stopword(w, stopwords)
                    and w not in NEGATIONS and stem(w) not in frame) and w not in world:
                world.append(w)
    return world


def _names(body: str, stopwords: frozenset[str] = STOPWORDS,
           nouns_capitalised: bool = False) -> list[str]:
    """Capitalised words inside the sentence that are not words about the sources, the
    answer or the reader (none in a language that capitalises its nouns)."""
    if nouns_capitalised:
        return []
    found = []
    for name in entities(body):
        words = fold(name).split()
        if words and not all(stem(w) in FRAME or w in stopwords for w in words):
            found.append(name)
    return found


def _advice(words: list[str]) -> bool:
    """Advice to look elsewhere, or courtesy: after a subject (I / we / you / "it is"), modals
    and the words that wrap advice ("recommend", "best", "consider", "always", "make sure"),
    the first verb sends the reader to someone ("consult", "check with", "contact"), or the
    sentence opens with a courtesy verb ("Feel free...", "Let me know...", "Thank you...").
    "It is recommended to water the plant weekly" is not advice to look elsewhere."""
    if not words:
        return False
    if stem(words[0]) in COURTESY_VERBS and not (words[0] == "let" and words[1:2] and (
            words[1] in _DETERMINERS or words[1] in ("it", "them"))):
        return True  # "Feel free...", "Let me know...", "Please...", not "Let it cool"
    i = 0
    if words[0] in _PRONOUN_SUBJECTS:
        i = 1
    elif words[:2] in (["it", "is"], ["it", "s"], ["it", "would"]):
        i = 2
    while i < len(words) and (words[i] in _MODALS or words[i] in _ADVICE_FILLER
                              or stem(words[i]) in WRAP_VERBS):
        i += 1
    if i >= len(words) or stem(words[i]) not in SEEK_VERBS:
        return False
    return stem(words[i]) not in _THING_VERBS or _sends_elsewhere(words[i + 1:])


def _sends_elsewhere(rest: list[str]) -> bool:
    """Whether a verb that may take a thing ("check", "verify") sends the reader elsewhere:
    "check with your bank", "verify the details", "do your own research as well", not "check
    the tyre pressure" (its object is a word about the world) or "research has found ..."."""
    following = [w for w in rest if w not in _DETERMINERS and w not in _POSSESSIVES]
    return not following or following[0] in _ELSEWHERE or stem(following[0]) in FRAME


def _clauses(body: str) -> list[str]:
    """A sentence cut where a second statement can start: "I hope this helps: the office
    moved.", "Thanks; the refund was issued.", "Here is the answer — it is Canberra."."""
    parts = [p.strip() for p in _CLAUSE_CUT_RE.split(body)]
    return [p for p in parts if any(ch.isalnum() for ch in p)] or [body]


def _past_opening(body: str) -> str:
    """The sentence past opening phrases of discourse words only ("Therefore,", "Based on the
    passages,", "In short,") or subordinate clauses ("If you send me the policy,"); unchanged
    at a phrase with a word about the world ("In Paris,", "The company offers tours, ...")."""
    for _ in range(4):  # stacked: "Based on the passages, according to passage 2, ..."
        opening = _OPENING_RE.match(body)
        lead = fold(opening.group()).split() if opening else []
        # Discourse words only, or a subordinate clause ("If you send me the policy, ..."):
        # "the company provides amenities such as a restroom, and ..." is not an opening.
        if not lead or not (lead[0] in _SUBORDINATORS
                            or all(w in STOPWORDS or stem(w) in FRAME or w.isdigit()
                                   for w in lead)):
            break
        body = body[opening.end():]
    return body


def _subject_is_the_text(body: str) -> bool:
    """The sentence is about the writer, the answer or the sources: its first words (past an
    opening phrase, determiners and discourse words) are I / we / my / our or a source or
    answer noun. "Based on the passages, the clinic accepts walk-ins" is about the clinic."""
    words = fold(_past_opening(body)).split()
    for w in words[:4]:
        if w in _FIRST_PERSON:
            return True
        if w in STOPWORDS or w in _DETERMINERS:
            continue
        return stem(w) in SOURCE_NOUNS | ANSWER_NOUNS
    return False


def _tells_content(toks: list[str], cues: tuple[str, ...]) -> bool:
    """Whether a cue word ("that", or a reporting verb: `cues` empty) inside the sentence
    opens a clause about the world (two world words or more) whose subject is not the writer,
    the reader or the answer: "..., which says the filter must be replaced yearly", not
    "Please note that I have no access to real-time data"."""
    for i, tok in enumerate(toks[1:-1], start=1):
        if (tok in cues if cues else stem(tok) in REPORTING_VERBS):
            rest = [t for t in toks[i + 1:] if t != "that"]
            if rest and rest[0] not in _SELF_SUBJECTS and len(_world_words(" ".join(rest))) >= 2:
                return True
    return False


def _reports_content(body: str) -> bool:
    """A reporting verb followed by a clause with words about the world: "Passage 2 says the
    hotel allows pets" (not "The article covers several related issues")."""
    toks = _WORD_RE.findall(body.lower())
    if _tells_content(toks, ("that",)):
        return True  # "I found that the plant closes in winter", "we can see that ..."
    for i, tok in enumerate(toks):
        if stem(tok) in REPORTING_VERBS:
            rest = " ".join(toks[i + 1:])
            if re.match(r"(?:that|how|whether|when|where|why)\b", rest) or len(
                    _world_words(rest)) >= 2:
                return True
    return False


@functools.lru_cache(maxsize=8192)
def classify(sentence: str) -> Assertion:
    """What `sentence` asserts: see the module docstring for the rules. A sentence of several
    clauses (cut at a colon, a semicolon or a dash) asserts what its clauses assert."""
    if _heading(sentence.strip()):
        return Assertion(NONE, reason="a heading or a title")
    body = _clean(sentence)
    if not any(ch.isalnum() for ch in body):
        return Assertion(NONE, reason="no words")
    if _heading(body) or _salutation(body):
        return Assertion(NONE, reason="a heading, a title or a salutation")
    whole = _classify_clause(body, body)
    if whole.checkable or body.rstrip().endswith(":"):
        return whole
    for clause in _clauses(_set_aside(body)):
        found = _classify_clause(clause, body)
        if found.checkable:
            return found
    return whole


def _frame_without_specifics(body: str, words: list[str], world: list[str],
                             about_sources: bool, sentence: str) -> str:
    """Why a clause with world words but no specific asserts nothing checkable (or says what
    the sources lack), else ""."""
    toks = _WORD_RE.findall(body.lower())
    if (_advice(words) or _advice(fold(_past_opening(body)).split())) and not (
            _tells_content(toks, ()) or _tells_content(toks, ("that",))):
        # not "Consult the manual, which says ...", "Research has found that ..."
        return "advice to look elsewhere, no specific"
    if (about_sources or _LABEL_RE.search(sentence)) and all(
            stem(w) in _LEAD_IN_NOUNS for w in world):
        # "These steps are based on the information in passages 1-2.": the answer's own parts
        # credited to the sources; no word about the world besides the parts' names.
        return "the answer's parts credited to the sources"
    if body.rstrip().endswith("?"):
        return "a question, no specific"
    if _presents_the_answer(body):
        return "the answer presenting its own form"
    if _negated_saying(body) and about_sources:
        return "what the sources lack"
    if (_subject_is_the_text(body) and not _reports_content(body)
            and len(world) <= MAX_FRAMED_WORLD):
        return "about the writer, the answer or the sources, reporting nothing"
    return ""


def _classify_clause(body: str, sentence: str) -> Assertion:
    kept = _set_aside(_drop_lead_in(body))
    specifics = read(kept)
    numbers = [q.text for q in specifics.quantities] + [w.text for w in specifics.whens]
    stopwords = stopwords_of(sentence)
    language = detect(sentence)
    # The frame vocabulary and the grammar rules below are English: elsewhere only a question
    # or a sentence without a word about the world (nor a specific) asserts nothing.
    english = language in ("en", UNDETERMINED)
    names = _names(specifics.rest, stopwords, language in NOUN_CAPITALISING)
    words = fold(specifics.rest).split()
    world = _world_words(specifics.rest, stopwords, FRAME if english else frozenset())
    negated = any(w in NEGATIONS or w.endswith("n't") for w in _WORD_RE.findall(kept.lower()))
    found = tuple(numbers + names)
    about_sources = _about_sources(body)
    if not world and not found and _YES_NO_RE.match(body):
        return Assertion(FACT, reason="a yes or no: it answers the question, nothing of its own")
    if not world and not found:
        if (_negated_saying(body) and about_sources and not _CONDITIONAL_RE.search(sentence)
                and not set(words) & _FIRST_PERSON):
            # "None mentioned in the passages.": the sources lack what the question asks.
            return Assertion(ABSENCE, negated=True, reason="the sources lack the question's"
                             " subject")
        return Assertion(NONE, reason="only words about the sources, the answer or the reader")
    if not found:
        frame = (_frame_without_specifics(body, words, world, about_sources, sentence)
                 if english
                 else "a question, no specific" if body.rstrip().endswith(("?", "？")) else "")
        if frame:
            kind = ABSENCE if frame == "what the sources lack" else NONE
            return Assertion(kind, tuple(world), (), negated, frame)
    if about_sources:
        kind = ABSENCE if _negated_saying(body) else SOURCE
        return Assertion(kind, tuple(world), found, negated, "a statement about the sources")
    return Assertion(FACT, tuple(world), found, negated, "a statement about the world")


def asserts(sentence: str) -> bool:
    """Whether `sentence` asserts something checkable (`classify(...).checkable`)."""
    return classify(sentence).checkable
