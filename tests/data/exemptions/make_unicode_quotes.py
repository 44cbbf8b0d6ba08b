"""Writes unicode_quotes.jsonl: faithful answers whose context is written with ordinary Unicode
(ligatures, soft hyphens, zero-width characters, decomposed accents, full-width forms, bidi
controls, mathematical letters, half-width katakana, look-alike letters of another script), and
hallucinated controls on the same contexts (a changed number or word, hidden behind the same
characters), for issue 46 point 4. Written for it; no case comes from ../shared/data.

    python tests/data/exemptions/make_unicode_quotes.py

Each line is a trace as `rt4chart audit` reads it. Its metadata carries what the judges of
`tests/fakes/unicode_judges.py` need: `plain`, the context as a model quoting it writes it
(the same text without the odd characters), `kind`, and `hallucinated` ("true"/"false").
An answer sentence is faithful exactly when it is a sentence of `plain`.
"""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
SHY, ZWSP, ZWJ, ZWNJ, WJ, BOM = "\u00ad", "\u200b", "\u200d", "\u200c", "\u2060", "\ufeff"
LRM, RLM, LRE, PDF, LRI, PDI = "\u200e", "\u200f", "\u202a", "\u202c", "\u2066", "\u2069"
ACUTE, DIAERESIS, TILDE = "\u0301", "\u0308", "\u0303"

# (id, kind, plain context, context as written, faithful answer, hallucinated answer).
# A hallucinated answer changes one fact of the faithful one; the changed value sits in a
# sentence the context writes with the case's characters.
CASES = [
    ("ligature-fi", "ligature",
     "The Vela flask keeps drinks hot for 12 hours. Its first batch shipped in 2019. "
     "The flask holds 500 ml.",
     "The Vela ﬂask keeps drinks hot for 12 hours. Its ﬁrst batch shipped in 2019. "
     "The ﬂask holds 500 ml.",
     "Its first batch shipped in 2019. The flask holds 500 ml.",
     "Its first batch shipped in 2017. The flask holds 500 ml."),
    ("ligature-ff", "ligature",
     "The Tarn heater offers three efficient modes. It costs $89 at launch. "
     "The heater switches off after 8 hours.",
     "The Tarn heater oﬀers three eﬃcient modes. It costs $89 at launch. "
     "The heater switches oﬀ after 8 hours.",
     "The Tarn heater offers three efficient modes. The heater switches off after 8 hours.",
     "The Tarn heater offers three efficient modes. The heater switches off after 6 hours."),
    ("soft-hyphen", "soft hyphen",
     "The medication is recommended for adults over 40. A course lasts fourteen days. "
     "Pharmacists dispense it without prescription.",
     f"The medi{SHY}cation is recom{SHY}mended for adults over 4{SHY}0. A course lasts "
     f"four{SHY}teen days. Pharma{SHY}cists dis{SHY}pense it without pre{SHY}scription.",
     "The medication is recommended for adults over 40. A course lasts fourteen days.",
     "The medication is recommended for adults over 60. A course lasts fourteen days."),
    ("zero-width-space", "zero-width space",
     "Amoxicillin is taken every 8 hours. The usual adult dose is 250 mg. "
     "Tablets are stored below 25 degrees.",
     f"Amoxi{ZWSP}cillin is taken every {ZWSP}8 hours. The usual adult dose is 2{ZWSP}50 mg. "
     f"Tab{ZWSP}lets are stored below 25 degrees.",
     "Amoxicillin is taken every 8 hours. The usual adult dose is 250 mg.",
     "Amoxicillin is taken every 8 hours. The usual adult dose is 500 mg."),
    ("joiners", "zero-width joiners and BOM",
     "The Brova library opens at 9 am. Membership costs 15% less for students. "
     "The reading room seats 120 people.",
     f"The Br{ZWJ}ova library opens at 9{WJ} am. Member{ZWNJ}ship costs 15{BOM}% less for "
     f"stu{WJ}dents. The reading room seats 1{ZWJ}20 people.",
     "The Brova library opens at 9 am. Membership costs 15% less for students.",
     "The Brova library opens at 9 am. Membership costs 25% less for students."),
    ("decomposed-accent", "decomposed accents",
     "The café on Rua Augusta opened in 1998. Its owner, Zoë Almeida, was born in São Paulo. "
     "The café closes on Mondays.",
     f"The cafe{ACUTE} on Rua Augusta opened in 1998. Its owner, Zoe{DIAERESIS} Almeida, was "
     f"born in Sa{TILDE}o Paulo. The cafe{ACUTE} closes on Mondays.",
     "The café on Rua Augusta opened in 1998. Its owner, Zoë Almeida, was born in São Paulo.",
     "The café on Rua Augusta opened in 2003. Its owner, Zoë Almeida, was born in São Paulo."),
    ("full-width", "full-width forms",
     "The ACME pump delivers 120 litres per minute. It weighs 35 kg. "
     "The warranty covers 3 years.",
     "The ＡＣＭＥ pump delivers １２０ litres per minute. It weighs ３５ ｋｇ. "
     "The warranty covers ３ years.",
     "The ACME pump delivers 120 litres per minute. It weighs 35 kg.",
     "The ACME pump delivers 120 litres per minute. It weighs 53 kg."),
    ("cyrillic-lookalike", "Cyrillic look-alike letters",
     "The Orla kettle was designed in Lisbon. The Orla kettle boils water in 3 minutes. "
     "The Orla kettle has a blue light.",
     "The Оrla kettle was designed in Lisbоn. The Orla kеttle boils water in 3 minutes. "
     "The Оrla kettle has a blue light.",
     "The Orla kettle was designed in Lisbon. The Orla kettle boils water in 3 minutes.",
     "The Orla kettle was designed in Lisbon. The Orla kettle boils water in 5 minutes."),
    ("greek-lookalike", "Greek look-alike letters",
     "The Nordic Museum opened in 1907. Entry is free on Tuesdays. "
     "The museum holds 1.5 million objects.",
     "Τhe Nοrdic Museum opened in 1907. Entry is free on Τuesdays. "
     "Τhe museum hοlds 1.5 million objects.",
     "The Nordic Museum opened in 1907. Entry is free on Tuesdays.",
     "The Nordic Museum opened in 1907. Entry is free on Thursdays."),
    ("bidi-controls", "bidi controls",
     "The Selva ferry leaves at 7:30 every morning. A return ticket costs 42 euros. "
     "The crossing takes 95 minutes.",
     f"The Selva ferry leaves at {LRM}7:30{LRM} every morning. A return ticket costs "
     f"{LRE}42{PDF} euros. The crossing takes {LRI}95{PDI} minutes{RLM}.",
     "The Selva ferry leaves at 7:30 every morning. The crossing takes 95 minutes.",
     "The Selva ferry leaves at 7:30 every morning. The crossing takes 59 minutes."),
    ("math-letters", "mathematical letters",
     "The Kestrel drone flies for 40 minutes. Kestrel drones weigh 249 grams. "
     "The camera records 4K video.",
     "The 𝐊𝐞𝐬𝐭𝐫𝐞𝐥 drone flies for 𝟒𝟎 minutes. 𝐊𝐞𝐬𝐭𝐫𝐞𝐥 drones weigh 249 grams. "
     "The camera records 4K video.",
     "The Kestrel drone flies for 40 minutes. Kestrel drones weigh 249 grams.",
     "The Kestrel drone flies for 40 minutes. Kestrel drones weigh 294 grams."),
    ("mixed", "several at once",
     "The Fjord office is open from Monday to Friday. Its staff of 24 speak five languages. "
     "The office was refurbished in 2021.",
     f"The Fjord oﬃce is open from Mon{SHY}day to Fri{ZWSP}day. Its staﬀ of ２４ speak "
     f"fivе lan{SHY}guages. The oﬃce was refurbished in {LRM}２０２１.",
     "The Fjord office is open from Monday to Friday. Its staff of 24 speak five languages.",
     "The Fjord office is open from Monday to Friday. Its staff of 42 speak five languages."),
    ("russian-latin-lookalike", "a Latin look-alike in a Russian word",
     "Музей находится в Москве с 1995 года. Билет стоит 300 рублей. "
     "Музей закрыт по понедельникам.",
     "Музей находится в Mоскве с 1995 года. Билет стоит 300 рублей. "
     "Музей закрыт по пoнедельникам.",
     "Музей находится в Москве с 1995 года. Музей закрыт по понедельникам.",
     "Музей находится в Москве с 1985 года. Музей закрыт по понедельникам."),
    ("half-width-katakana", "half-width katakana",
     "ホテルは駅から5分です。朝食は7時から提供されます。",
     "ﾎﾃﾙは駅から5分です。朝食は7時から提供されます。",
     "ホテルは駅から5分です。",
     "ホテルは駅から15分です。"),
]

# Controls whose context writes a number a reader cannot take for another: "5O%" with a
# letter O is not 50% (TS #39 puts "0" and "O" together; this normalisation does not).
LETTER_FOR_DIGIT = [
    ("letter-o-for-zero", "a letter O where a zero would be",
     "About 5O% of patients respond within a week. The trial ran at 12 hospitals.",
     "About 5O% of patients respond within a week. The trial ran at 12 hospitals.",
     None,
     "About 50% of patients respond within a week. The trial ran at 12 hospitals."),
]


def _trace(case_id: str, kind: str, plain: str, context: str, answer: str,
           hallucinated: bool) -> dict:
    return {
        "trace_id": f"{case_id}-{'hallucinated' if hallucinated else 'faithful'}",
        "route": kind,
        "question": "What do the passages say?",
        "contexts": [{"doc_id": f"{case_id} sheet", "text": context}],
        "answer": answer,
        "metadata": {"kind": kind, "plain": plain,
                     "hallucinated": "true" if hallucinated else "false"},
    }


def traces() -> list[dict]:
    """Every trace of the corpus: a faithful and a hallucinated answer per case."""
    out = []
    for case_id, kind, plain, context, faithful, hallucinated in CASES + LETTER_FOR_DIGIT:
        if faithful is not None:
            out.append(_trace(case_id, kind, plain, context, faithful, False))
        out.append(_trace(case_id, kind, plain, context, hallucinated, True))
    return out


def main() -> None:
    with open(HERE / "unicode_quotes.jsonl", "w", encoding="utf-8") as fh:
        for trace in traces():
            fh.write(json.dumps(trace, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
