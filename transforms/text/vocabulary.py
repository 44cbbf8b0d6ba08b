"""Word classes: what a word is about when it is not about the world.

A sentence of an answer can talk about the world ("The museum opens at 9 am"), about its
sources ("Passage 3 provides the necessary information"), about itself ("Here is a brief
summary:"), or to the reader ("It is recommended to consult an expert"). The assertion
classifier (`assertion.py`) tells them apart by the classes of their words, not by phrasings:
a word in none of these classes (and not a stopword) is a word about the world. Each class is
a set of stems (`words.stem`), so inflections need no entry.

These lists are vocabulary, not patterns: a new phrasing made of these words is recognised
without an edit, and a word missing here errs on the safe side (it counts as content, so a
sentence made with it is checked rather than waved through).
"""

from __future__ import annotations

from rt4chart.transforms.text.words import stem


def _stems(words: str) -> frozenset[str]:
    return frozenset(stem(w) for w in words.split())


# The sources and their parts: what a RAG answer cites.
SOURCE_NOUNS = _stems(
    """passage passages article articles text texts context contexts document documents doc
    docs source sources information info data excerpt excerpts record records material
    materials snippet snippets reference references content contents paragraph paragraphs
    section sections page pages line lines extract extracts retrieval retrieved
    knowledge input inputs""")
# The answer, the question and their form.
ANSWER_NOUNS = _stems(
    """answer answers question questions query queries response responses reply replies
    summary summaries overview explanation explanations conclusion output word words sentence
    sentences point points detail details list lists heading headings format bullet bullets
    part parts option options item items version request topic topics subject matter aspect
    aspects breakdown description lyrics quote quotes title""")
# Nouns that a number labels rather than counts: "Passage 3", "Option 2", "step 4".
LABEL_NOUNS = SOURCE_NOUNS | _stems(
    """option options step steps part parts item items point points question questions answer
    answers chapter chapters figure figures table tables example examples method methods tip
    tips note notes number no rule rules category categories case cases scenario""")
# Verbs of saying, containing and answering: what a sentence about the sources does.
SPEECH_VERBS = _stems(
    """say says said state states stated mention mentions mentioned provide provides provided
    providing indicate indicates indicated describe describes described explain explains
    explained contain contains contained include includes included discuss discusses discussed
    cover covers covered address addresses addressed specify specifies specified detail
    details detailed list lists listed repeat repeats repeated agree agrees agreed confirm
    confirms confirmed note notes noted report reports reported refer refers referred cite
    cites cited reference referenced focus focuses focused talk talks write writes written
    present presents presented offer offers offered give gives gave given show shows showed
    shown outline outlines outlined highlight highlights highlighted summarize summarizes
    summarise summarises summarized summarised answer answers answered reply replied replies
    respond responds responded clarify clarifies clarified support supports supported
    elaborate elaborates elaborated base based derive derived draw drawn found find finds
    concern concerns concerned relate relates related touch touches deal deals dealt reveal
    reveals revealed suggest suggests suggested read reads see seen accord according rely
    relied relies draw drew raise raised""")
# Verbs that send the reader elsewhere or address them: "Contact...", "Feel free...", "You may
# want to check with...", "I hope...". With no specific, such a sentence asserts nothing.
# Verbs that send the reader to someone or somewhere else: "Consult...", "check with...".
SEEK_VERBS = frozenset(stem(w) for w in """contact consult ask reach seek check refer verify
    confirm speak talk double-check inquire enquire call research read""".split())
# Verbs of courtesy, which open a sentence addressed to the reader ("Feel free...", "Let me
# know...", "Hope this helps"), and words that wrap advice ("I'd suggest", "It is best to",
# "Consider", "Make sure to", "Always").
COURTESY_VERBS = frozenset(stem(w) for w in """feel let hope wish thank apologize apologise
    please want""".split())
RECOMMEND_WORDS = frozenset(stem(w) for w in """recommend suggest advise encourage urge consider
    make sure always best wise worth advisable recommended important good idea try keep
    remember""".split())
WRAP_VERBS = COURTESY_VERBS | RECOMMEND_WORDS
# Words of knowing, sufficiency and possibility: how much the sources or the answer can say.
EPISTEMIC = _stems(
    """possible impossible possibly able unable ability necessary unnecessary sufficient
    insufficient sufficiently enough adequate inadequate additional further more specific
    specifically relevant irrelevant exact exactly precise precisely explicit explicitly clear
    clearly unclear complete completely incomplete certain certainty uncertain sure definitive
    definitively definite accurate accurately inaccurate determine determined know known
    knowledge tell told same similar above below following follows here there given
    accordance according brief briefly short concise concisely direct directly full fully
    entire entirety original only solely limited limit beyond scope available unavailable
    without lack lacks lacking missing absent provided mere merely sole just simply
    comprehensive thorough detailed general generally certainly actually indeed anything
    something everything nothing else whatever key main primary principal important
    essential relevant notable ground""")
# The reader, the writer and the conversation: courtesy, offers, advice to seek help.
READER = _stems(
    """i me my mine myself we us our you your yours yourself help helps helped helpful assist
    assists assistance assistant hope hopes hoping wish wishes glad happy pleased sorry
    apologize apologise apology apologies thank thanks thankful grateful welcome feel
    hesitate ask asks asked asking reach contact legal medical financial clarification
    recommend recommends
    recommended recommendation recommendations advise advises advised advice advisable
    encourage encourages encouraged consult consulting consultation seek seeking guidance
    expert experts professional professionals specialist specialists resource resources
    concern concerns ai model language bot chatbot luck regard regards cheer cheers enjoy
    best great good nice wonderful day morning afternoon evening hi hello hey greetings dear
    certainly sure okay ok yes
    absolutely course please let want wants need needs like would interest interested
    happy assist further question questions inquiry inquiries curious curiosity
    understand understanding clarify appreciate appreciated feedback follow-up afraid""")
# Markers of discourse: they order or conclude, they do not state.
DISCOURSE = _stems(
    """therefore thus hence so overall finally lastly firstly secondly thirdly additionally
    also however moreover furthermore conclusion conclude concluding summary summarize
    summarise summing short brief regarding concerning related relation respect terms
    regard basis based note noted notably importantly essentially basically ultimately
    altogether alternatively otherwise anyway again below above following follows mentioned
    then first second third wrap""")
# Conversation management and words that describe texts rather than the world: "Moving on to
# the next point", "a shorter version", "pure speculation", "the passages are contradictory".
CONVERSATION = _stems(
    """move moving go going went back forward next previous earlier now later part point
    points thing things consider mind look closer gist picture view depend depends simple
    simply clearer clear speculation speculative pure conclusive conclusion reach way depth
    shorter longer long short length version word count request decline declined refusal
    silent correct incorrect turn treat case event scope cf ibid see above contradictory
    consistent inconsistent conflicting differ differs different vary varies level related
    issue issues new add adds added nothing useful reliable unreliable vague ambiguous
    overlap overlaps extensive lengthy structured condense condensed keep kept requested
    message discussed discuss informational purpose purposes opinion opinions personal
    ability browse internet date advisor advisors situation qualified print fine research
    provider providers doctor doctors physician pharmacist lawyer attorney vet veterinarian
    well mind several various hopefully within across among amongst every others one another
    toward towards throughout along despite""")
# All words that are not about the world.
FRAME = (SOURCE_NOUNS | ANSWER_NOUNS | SPEECH_VERBS | EPISTEMIC | READER | DISCOURSE
         | CONVERSATION)
# Verbs that report what a source says: after them, a clause is the source's content.
REPORTING_VERBS = _stems(
    """say says said state states stated note notes noted mention mentions mentioned report
    reports reported explain explains explained indicate indicates indicated claim claims
    claimed suggest suggests suggested confirm confirms confirmed show shows showed reveal
    reveals revealed describe describes described add adds added write writes wrote list
    lists listed specify specifies specified argue argues warn warns agree agrees agreed""")
# Negation: it turns a statement about the world into another one.
NEGATIONS = frozenset(
    """not no never none nobody nothing neither nor cannot can't won't don't doesn't didn't
    isn't aren't wasn't weren't hasn't haven't hadn't shouldn't wouldn't couldn't""".split())
