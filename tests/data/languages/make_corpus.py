"""Writes tests/data/languages/{traces,gold}.jsonl from the cases below (run once)."""
import json
from pathlib import Path

# (lang, trace id, question, context sentences, answer as [(sentence, gold)]); gold: an index
# into the context (ENT, quoted), "none" (asserts nothing), or "NIC:number" / "NIC:name"
# (hallucinated: a number or a name the context does not state).
CASES = [
 ("de", "de-1", "Wann hat das Museum geöffnet?",
  ["Das Stadtmuseum ist von Dienstag bis Sonntag geöffnet.", "Der Eintritt kostet 12,50 Euro.",
   "Im Jahr 2023 kamen 30.000 Besucher."],
  [("Das Stadtmuseum ist von Dienstag bis Sonntag geöffnet.", 0),
   ("Der Eintritt kostet 12,50 Euro.", 1), ("Ich hoffe, das hilft!", "none")]),
 ("de", "de-2", "Wie viele Besucher kamen?",
  ["Das Stadtmuseum ist von Dienstag bis Sonntag geöffnet.", "Im Jahr 2023 kamen 30.000 Besucher."],
  [("Im Jahr 2023 kamen 45.000 Besucher.", "NIC:number"), ("Ich hoffe, das hilft!", "none")]),
 ("fr", "fr-1", "Combien coûte le billet de train ?",
  ["Le train pour Lyon part à 8 h 15.", "Le billet coûte 49 euros en seconde classe.",
   "Le trajet dure environ deux heures."],
  [("Le billet coûte 49 euros en seconde classe.", 1), ("Le train pour Lyon part à 8 h 15.", 0),
   ("J'espère que cela vous aide.", "none")]),
 ("fr", "fr-2", "Où va le train ?",
  ["Le train pour Lyon part à 8 h 15.", "Le billet coûte 49 euros en seconde classe."],
  [("Le train pour Marseille part à 8 h 15.", "NIC:name"),
   ("J'espère que cela vous aide.", "none")]),
 ("es", "es-1", "¿Cuántas habitaciones tiene el hotel?",
  ["El hotel tiene 120 habitaciones con vistas al mar.", "El desayuno se sirve de 7:00 a 10:30.",
   "La tarifa es de 1 250 pesos por noche."],
  [("El hotel tiene 120 habitaciones con vistas al mar.", 0),
   ("El desayuno se sirve de 7:00 a 10:30.", 1), ("Espero que esto le ayude.", "none")]),
 ("es", "es-2", "¿Cuánto cuesta la noche?",
  ["El hotel tiene 120 habitaciones con vistas al mar.", "La tarifa es de 1 250 pesos por noche."],
  [("La tarifa es de 2 300 pesos por noche.", "NIC:number"),
   ("Espero que esto le ayude.", "none")]),
 ("it", "it-1", "Il ristorante è aperto la domenica?",
  ["Il ristorante Da Mario è aperto tutti i giorni tranne il lunedì.",
   "Il menù degustazione costa 65 euro.", "La cucina chiude alle 22:30."],
  [("Il ristorante Da Mario è aperto tutti i giorni tranne il lunedì.", 0),
   ("La cucina chiude alle 22:30.", 2), ("Spero che questo ti sia utile.", "none")]),
 ("it", "it-2", "Quanto costa il menù?",
  ["Il ristorante Da Mario è aperto tutti i giorni tranne il lunedì.",
   "Il menù degustazione costa 65 euro."],
  [("Il menù degustazione costa 85 euro.", "NIC:number"),
   ("Spero che questo ti sia utile.", "none")]),
 ("pt", "pt-1", "Qual é o horário da clínica?",
  ["A clínica atende de segunda a sexta, das 8h às 18h.", "A consulta custa R$ 200,00.",
   "O Dr. Ricardo Alves é o diretor clínico."],
  [("A consulta custa R$ 200,00.", 1), ("O Dr. Ricardo Alves é o diretor clínico.", 2),
   ("Espero que isso ajude.", "none")]),
 ("pt", "pt-2", "Quem é o diretor?",
  ["A clínica atende de segunda a sexta, das 8h às 18h.",
   "O Dr. Ricardo Alves é o diretor clínico."],
  [("O Dr. Fernando Costa é o diretor clínico.", "NIC:name"), ("Espero que isso ajude.", "none")]),
 ("ru", "ru-1", "Когда работает библиотека?",
  ["Библиотека работает с 9 до 20 часов.", "В фонде библиотеки 250 000 книг.",
   "Читательский билет выдаётся бесплатно."],
  [("В фонде библиотеки 250 000 книг.", 1), ("Читательский билет выдаётся бесплатно.", 2),
   ("Надеюсь, это поможет.", "none")]),
 ("ru", "ru-2", "Сколько книг в библиотеке?",
  ["Библиотека работает с 9 до 20 часов.", "В фонде библиотеки 250 000 книг."],
  [("В фонде библиотеки 400 000 книг.", "NIC:number"), ("Надеюсь, это поможет.", "none")]),
 ("zh", "zh-1", "酒店提供早餐吗？",
  ["酒店每天早上7点至10点提供自助早餐。", "酒店共有120间客房。", "博物馆收藏了三千多件文物。"],
  [("酒店提供自助早餐。", 0), ("酒店共有120间客房。", 1), ("希望这对您有帮助。", "none")]),
 ("zh", "zh-2", "酒店有多少间客房？",
  ["酒店每天早上7点至10点提供自助早餐。", "酒店共有120间客房。"],
  [("酒店共有180间客房。", "NIC:number"), ("希望这对您有帮助。", "none")]),
 ("zh", "zh-3", "博物馆有多少件文物？",
  ["博物馆收藏了三千多件文物。", "门票价格为两千日元。"],
  [("博物馆收藏了三千多件文物。", 0), ("如有其他问题，请随时告诉我。", "none")]),
 ("ja", "ja-1", "美術館は何時に開きますか？",
  ["美術館は午前9時に開館します。", "入館料は1,500円です。",
   "館内には約200点の作品が展示されています。"],
  [("美術館は午前9時に開館します。", 0), ("入館料は1,500円です。", 1),
   ("お役に立てれば幸いです。", "none")]),
 ("ja", "ja-2", "入館料はいくらですか？",
  ["美術館は午前9時に開館します。", "入館料は1,500円です。"],
  [("入館料は2,000円です。", "NIC:number"), ("お役に立てれば幸いです。", "none")]),
 ("ko", "ko-1", "헬스장은 몇 시에 문을 여나요?",
  ["헬스장은 매일 오전 6시에 문을 엽니다.", "월 회원권은 5만 원입니다.",
   "샤워실과 사우나를 이용할 수 있습니다."],
  [("헬스장은 매일 오전 6시에 문을 엽니다.", 0), ("월 회원권은 5만 원입니다.", 1),
   ("도움이 되었기를 바랍니다.", "none")]),
 ("ko", "ko-2", "회원권은 얼마인가요?",
  ["헬스장은 매일 오전 6시에 문을 엽니다.", "월 회원권은 5만 원입니다."],
  [("월 회원권은 8만 원입니다.", "NIC:number"), ("도움이 되었기를 바랍니다.", "none")]),
 # Lists under a lead-in, vague amounts and locale numbers (answers of "-list" traces are one
 # sentence a line).
 ("de", "de-list", "Was bietet der Zoo?",
  ["Der Zoo beherbergt mehrere tausend Tiere.", "Die Jahreskarte kostet 89,90 Euro.",
   "Der Zoo wurde 1 250 000 Mal besucht."],
  [("Hier ist eine kurze Übersicht:", "none"),
   ("- Der Zoo beherbergt mehrere tausend Tiere.", 0),
   ("- Die Jahreskarte kostet 89,90 Euro.", 1), ("Viel Spaß beim Besuch!", "none")]),
 ("de", "de-vague", "Wie oft wurde der Zoo besucht?",
  ["Der Zoo beherbergt mehrere tausend Tiere.", "Der Zoo wurde 1 250 000 Mal besucht."],
  [("Der Zoo wurde 2 500 000 Mal besucht.", "NIC:number")]),
 ("fr", "fr-list", "Que propose le musée ?",
  ["Le musée expose plusieurs centaines de tableaux.", "Le tarif réduit est de 7,50 euros.",
   "La collection compte 12 400 objets."],
  [("Voici l'essentiel :", "none"), ("- Le musée expose plusieurs centaines de tableaux.", 0),
   ("- Le tarif réduit est de 7,50 euros.", 1), ("Bonne visite !", "none")]),
 ("fr", "fr-vague", "Combien d'objets compte la collection ?",
  ["Le musée expose plusieurs centaines de tableaux.", "La collection compte 12 400 objets."],
  [("La collection compte 21 400 objets.", "NIC:number")]),
 ("es", "es-list", "¿Qué ofrece el parque?",
  ["El parque tiene más de 40 kilómetros de senderos.", "La entrada cuesta 12,5 euros.",
   "Cada año lo visitan 2.400 escolares."],
  [("Estos son los datos principales:", "none"),
   ("- El parque tiene más de 40 kilómetros de senderos.", 0),
   ("- La entrada cuesta 12,5 euros.", 1), ("¡Que disfrute de la visita!", "none")]),
 ("es", "es-vague", "¿Cuántos escolares lo visitan?",
  ["El parque tiene más de 40 kilómetros de senderos.", "Cada año lo visitan 2.400 escolares."],
  [("Cada año lo visitan 4.200 escolares.", "NIC:number")]),
 ("it", "it-list", "Cosa offre il castello?",
  ["Il castello ospita alcune centinaia di armature.", "Il biglietto intero costa 14,50 euro.",
   "Nel 2022 i visitatori sono stati 30.000."],
  [("Ecco le informazioni principali:", "none"),
   ("- Il castello ospita alcune centinaia di armature.", 0),
   ("- Il biglietto intero costa 14,50 euro.", 1), ("Buona visita!", "none")]),
 ("it", "it-vague", "Quanti visitatori nel 2022?",
  ["Il castello ospita alcune centinaia di armature.", "Nel 2022 i visitatori sono stati 30.000."],
  [("Nel 2022 i visitatori sono stati 50.000.", "NIC:number")]),
 ("pt", "pt-list", "O que oferece o aquário?",
  ["O aquário abriga cerca de 8.000 animais.", "O bilhete custa R$ 75,00.",
   "A visita dura em média duas horas."],
  [("Seguem as informações principais:", "none"),
   ("- O aquário abriga cerca de 8.000 animais.", 0), ("- O bilhete custa R$ 75,00.", 1),
   ("Boa visita!", "none")]),
 ("pt", "pt-vague", "Quanto custa o bilhete?",
  ["O aquário abriga cerca de 8.000 animais.", "O bilhete custa R$ 75,00."],
  [("O bilhete custa R$ 95,00.", "NIC:number")]),
 ("ru", "ru-list", "Что есть в парке?",
  ["В парке растёт несколько тысяч деревьев.", "Аренда лодки стоит 450 рублей.",
   "Площадь парка составляет 12,5 гектара."],
  [("Вот основные сведения:", "none"), ("- В парке растёт несколько тысяч деревьев.", 0),
   ("- Аренда лодки стоит 450 рублей.", 1), ("Приятной прогулки!", "none")]),
 ("ru", "ru-vague", "Какова площадь парка?",
  ["В парке растёт несколько тысяч деревьев.", "Площадь парка составляет 12,5 гектара."],
  [("Площадь парка составляет 25,5 гектара.", "NIC:number")]),
 ("zh", "zh-list", "动物园有什么？",
  ["动物园有数百种动物。", "成人门票为八十五元。", "每年约有两百万名游客。"],
  [("以下是主要信息：", "none"), ("- 动物园有数百种动物。", 0), ("- 成人门票为八十五元。", 1),
   ("祝您游玩愉快！", "none")]),
 ("zh", "zh-vague", "门票多少钱？",
  ["动物园有数百种动物。", "成人门票为八十五元。"],
  [("成人门票为一百二十元。", "NIC:number")]),
 ("ja", "ja-list", "水族館について教えてください。",
  ["水族館には数千匹の魚がいます。", "大人の入館料は２，４００円です。",
   "年間の来館者は約百万人です。"],
  [("主な情報は次のとおりです：", "none"), ("- 水族館には数千匹の魚がいます。", 0),
   ("- 大人の入館料は２，４００円です。", 1), ("楽しい一日をお過ごしください。", "none")]),
 ("ja", "ja-vague", "入館料はいくらですか？",
  ["水族館には数千匹の魚がいます。", "大人の入館料は２，４００円です。"],
  [("大人の入館料は３，２００円です。", "NIC:number")]),
 ("ko", "ko-list", "수목원에는 무엇이 있나요?",
  ["수목원에는 수천 종의 식물이 있습니다.", "입장료는 9,000원입니다.",
   "연간 방문객은 약 30만 명입니다."],
  [("주요 정보는 다음과 같습니다:", "none"), ("- 수목원에는 수천 종의 식물이 있습니다.", 0),
   ("- 입장료는 9,000원입니다.", 1), ("즐거운 관람 되세요!", "none")]),
 ("ko", "ko-vague", "입장료는 얼마인가요?",
  ["수목원에는 수천 종의 식물이 있습니다.", "입장료는 9,000원입니다."],
  [("입장료는 12,000원입니다.", "NIC:number")]),
]


def main() -> None:
    out = Path(__file__).resolve().parent
    traces, gold = [], []
    for lang, trace_id, question, context, answer in CASES:
        text = " ".join(context) if lang not in ("zh", "ja") else "".join(context)
        glue = "\n" if trace_id.endswith("-list") else "" if lang in ("zh", "ja") else " "
        joined = glue.join(s for s, _ in answer)
        traces.append({"trace_id": trace_id, "question": question, "answer": joined,
                       "contexts": [{"doc_id": f"{trace_id}-doc", "text": text}],
                       "metadata": {"language": lang}})
        for sentence, g in answer:
            label, _, why = g.partition(":") if isinstance(g, str) else ("ENT", "", "")
            gold.append({"trace_id": trace_id, "sentence": sentence.removeprefix("- "),
                         "label": label, "why": why,
                         "quote": context[g] if isinstance(g, int) else None})
    evals = []  # for `rt4chart eval --dataset jsonl`: the traces with their gold spans
    for trace in traces:
        spans = []
        for row in gold:
            if row["trace_id"] == trace["trace_id"] and row["label"] == "NIC":
                start = trace["answer"].index(row["sentence"])
                spans.append({"start": start, "end": start + len(row["sentence"]),
                              "label": "NIC"})
        evals.append({**trace, "gold_spans": spans})
    for name, rows in (("traces.jsonl", traces), ("gold.jsonl", gold), ("eval.jsonl", evals)):
        with open(out / name, "w", encoding="utf-8") as fh:
            fh.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)


if __name__ == "__main__":
    main()
