"""No exemption without proof (issue 46), both ways, as properties.

A generated false fact inside any exempt-looking form (a heading, a bold line, a list item, a
greeting or thanks before it, a question tag, a lead-in with a colon, an advice clause, "Here is
how ...", in English, German, French, Spanish, Italian and Chinese) is checkable: coverage
re-adds it when a judge returns no claim, a judge's claim of it is never a non-claim, and the
honest judge of `tests/fakes/honest_judge.py` then finds it NIC. A generated faithful
discourse-only sentence ("I hope this helps!", "Vielen Dank!", "Here is a summary:") is
exempt, so a faithful answer around it keeps its ENT. Sentences written for this test.
"""

from __future__ import annotations

from honest_judge import HonestJudge
from hypothesis import given
from hypothesis import strategies as st

from rt4chart.schemas.records import DecomposeResult, Document, PlacedClaim, Trace
from rt4chart.transforms.checks.coverage import check_coverage
from rt4chart.transforms.decompose import no_claim_note, number_claims
from rt4chart.transforms.judges.offline.claims import decompose_claims
from rt4chart.transforms.segment import SegmentConfig, prepare
from rt4chart.transforms.text.assertion import classify, discourse_only

# Per language: the context, one faithful sentence of it, subjects and false predicates.
LANGUAGES = {
    "en": ("The tablet treats ear infections. The usual dose is 500 mg every 8 hours.",
           "The tablet treats ear infections.", ["the tablet", "this medicine", "amoxicillin"],
           ["cures cancer", "is safe with alcohol", "doubles the risk of stroke",
            "must be taken 3000 mg every hour", "works against viruses in 2 days"]),
    "de": ("Die Tablette behandelt Ohrenentzündungen.", "Die Tablette behandelt Ohrenentzündungen.",
           ["die Tablette", "das Medikament"],
           ["heilt Krebs", "ist mit Alkohol sicher", "wirkt in 2 Tagen gegen Viren"]),
    "fr": ("Le comprimé traite les otites.", "Le comprimé traite les otites.",
           ["le comprimé", "le médicament"],
           ["guérit le cancer", "se prend sans danger avec de l'alcool", "agit en 2 jours"]),
    "es": ("La pastilla trata las otitis.", "La pastilla trata las otitis.",
           ["la pastilla", "el medicamento"],
           ["cura el cáncer", "es segura con alcohol", "actúa en 2 días contra los virus"]),
    "it": ("La compressa cura le otiti.", "La compressa cura le otiti.",
           ["la compressa", "il farmaco"], ["guarisce il cancro", "è sicura con l'alcol"]),
    "zh": ("这种药治疗耳部感染。", "这种药治疗耳部感染。", ["这种药", "该药"],
           ["能治愈癌症", "可以和酒一起服用", "两天内杀死病毒"]),
}
GREETINGS = {
    "en": ["Hi", "Hello", "Thank you", "Thanks", "Sure", "Great question", "Good morning"],
    "de": ["Hallo", "Vielen Dank", "Danke"], "fr": ["Bonjour", "Merci"],
    "es": ["Hola", "Gracias"], "it": ["Ciao", "Grazie"], "zh": ["您好", "谢谢"],
}
TAGS = {"en": ", doesn't it?", "de": ", oder?", "fr": ", n'est-ce pas ?", "es": ", ¿verdad?",
        "it": ", vero?", "zh": "，对吧？"}


def _sentence(subject: str, predicate: str, language: str) -> str:
    joined = subject + predicate if language == "zh" else f"{subject} {predicate}"
    return joined[0].upper() + joined[1:]


def _forms(fact: str, language: str, greeting: str) -> list[str]:
    bare = fact.rstrip(".。")
    end = "。" if language == "zh" else "."
    forms = [f"## {bare}", f"**{bare}**", f"- {bare}", f"Step 2: {bare}", f"{bare}:",
             f"{greeting}, {fact[0].lower() + fact[1:]}{'' if fact.endswith(end) else end}",
             f"{greeting}! {fact}", f"{bare}{TAGS[language]}"]
    if language == "en":
        lower = bare[0].lower() + bare[1:]
        forms += [f"{bare}, as follows:", f"Here is how {lower}.",
                  f"You should consult your doctor because {lower}.",
                  f"Did you know that {lower}?", f"Feel free to note that {lower}."]
    return forms


@st.composite
def hidden_facts(draw):
    language = draw(st.sampled_from(sorted(LANGUAGES)))
    context, faithful, subjects, predicates = LANGUAGES[language]
    fact = _sentence(draw(st.sampled_from(subjects)), draw(st.sampled_from(predicates)),
                     language)
    greeting = draw(st.sampled_from(GREETINGS[language]))
    return language, context, faithful, draw(st.sampled_from(_forms(fact, language, greeting)))


def _claims(context: str, answer: str, decomposer):
    trace = Trace("t", "r", 0, "", (Document("d", context),), answer)
    prepared = prepare(trace, SegmentConfig(25, 10))
    results = [DecomposeResult("t", s.index, tuple(PlacedClaim(c) for c in decomposer(s.text)),
                               "ok") for s in prepared.answer_sentences]
    return number_claims(prepared, results)


@given(hidden_facts())
def test_a_false_fact_in_any_exempt_looking_form_is_checked(case):
    language, context, faithful, hidden = case
    assert classify(hidden).checkable, hidden
    assert no_claim_note(PlacedClaim(hidden)) is None
    assert check_coverage(hidden, []).extra_claim, hidden
    assert any(c.kind == "fact" for c in decompose_claims(hidden)), hidden


@given(hidden_facts(), st.sampled_from(["sentence", "none"]))
def test_a_false_fact_in_any_form_ends_non_ent_under_an_honest_judge(case, mode):
    language, context, faithful, hidden = case
    sep = "" if language == "zh" else "\n"
    claim_set = _claims(context, faithful + sep + hidden,
                        (lambda s: [s]) if mode == "sentence" else (lambda s: []))
    judge = HonestJudge("sentence", "honest")
    labels = [judge._verdict(c.text, context)[0] for c in claim_set.claims]
    # The false fact is verified (not a non-claim, not dropped) and the honest judge does not
    # find it: the answer's AND-join is not ENT.
    assert "NIC" in labels, (hidden, [c.text for c in claim_set.claims])


DISCOURSE = {
    "en": ["I hope this helps!", "Thank you for your question!", "Hello!", "Sure!",
           "Let me know if you have any other questions.", "Here is a summary:",
           "Based on the passages, here is the answer:", "Feel free to ask.", "(Passage 2)",
           "Unable to answer based on the given passages.", "Great question!", "Good luck!",
           "Please consult your doctor.", "I'm sorry, I cannot answer that."],
    "de": ["Vielen Dank!", "Ich hoffe, das hilft!", "Hallo!", "Gerne!",
           "Lassen Sie mich wissen, wenn Sie weitere Fragen haben."],
    "fr": ["Merci !", "J'espère que cela vous aide !", "Bonjour !", "Voici un résumé :",
           "N'hésitez pas si vous avez d'autres questions."],
    "es": ["¡Gracias!", "¡Espero que esto ayude!", "¡Hola!", "Aquí está la respuesta:"],
    "it": ["Grazie!", "Spero che questo aiuti!", "Ciao!", "Ecco la risposta:"],
    "zh": ["谢谢！", "希望这对您有帮助。", "您好！", "如有其他问题，请随时提问。"],
    "ja": ["ありがとうございます！", "お役に立てれば幸いです。"],
}


@st.composite
def discourse_lines(draw):
    language = draw(st.sampled_from(sorted(DISCOURSE)))
    parts = draw(st.lists(st.sampled_from(DISCOURSE[language]), min_size=1, max_size=2))
    line = ("" if language in ("zh", "ja") else " ").join(parts)
    wrap = draw(st.sampled_from(["{}", "**{}**", "## {}", "- {}", "> {}"]))
    case = draw(st.sampled_from([str, str.upper, str.lower]))
    return language, wrap.format(case(line))


@given(discourse_lines())
def test_a_discourse_only_line_stays_exempt(case):
    language, line = case
    assert discourse_only(line), line
    assert not classify(line).checkable, (line, classify(line))
    assert check_coverage(line, []).extra_claim is None
    assert no_claim_note(PlacedClaim(line)) is not None
    assert decompose_claims(line) == []


@given(discourse_lines(), st.sampled_from(["sentence", "none"]))
def test_a_faithful_answer_with_discourse_lines_stays_ent(case, mode):
    language, line = case
    context, faithful = (LANGUAGES.get(language) or LANGUAGES["zh"])[:2]
    if language == "ja":
        context = faithful = "この薬は耳の感染症を治療します。"
    sep = "" if language in ("zh", "ja") else "\n"
    claim_set = _claims(context, faithful + sep + line,
                        (lambda s: [s]) if mode == "sentence" else (lambda s: []))
    judge = HonestJudge("sentence", "honest")
    assert claim_set.claims and all(judge._verdict(c.text, context)[0] == "ENT"
                                    for c in claim_set.claims), [c.text for c in claim_set.claims]
