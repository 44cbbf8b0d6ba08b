"""Language-aware text analysis (issue 34), on sentences written for these tests: language
detection, CJK word units, per-language stopwords, CJK numbers, courtesy lines and facts."""

from __future__ import annotations

import pytest

from rt4chart.schemas.records import Evidence
from rt4chart.transforms.checks.coverage import check_coverage
from rt4chart.transforms.checks.evidence import ground
from rt4chart.transforms.text.assertion import NONE, classify
from rt4chart.transforms.text.language import (
    anchor_units,
    cjk_units,
    detect,
    normalize_width,
    support,
)
from rt4chart.transforms.text.quantities import number_terms, read
from rt4chart.transforms.text.words import content_terms, content_words, fold

DETECTED = [
    ("Die Bibliothek bleibt am Wochenende geschlossen.", "de"),
    ("La piscine est chauffée toute l'année.", "fr"),
    ("El parque nacional tiene tres senderos señalizados.", "es"),
    ("Il treno per Firenze parte dal binario sei.", "it"),
    ("A farmácia fica aberta até a meia-noite.", "pt"),
    ("Музей закрыт по понедельникам и вторникам.", "ru"),
    ("图书馆周末不开放。", "zh"),
    ("図書館は週末に閉まっています。", "ja"),
    ("도서관은 주말에 문을 닫습니다.", "ko"),
    ("The ferry leaves the harbour every two hours.", "en"),
]


@pytest.mark.parametrize(("text", "code"), DETECTED)
def test_the_language_of_a_sentence_is_detected(text, code):
    assert detect(text) == code


@pytest.mark.parametrize("text", ["OK.", "", "42", "Merci !", "—"])
def test_too_little_text_has_no_language(text):
    assert detect(text) == "und"


def test_support_says_which_languages_have_frame_vocabulary():
    assert support("en").frame and not support("de").frame
    assert support("zh").words == support("ja").words == "bigrams"
    assert support("xx").stopwords == "none"


def test_han_runs_are_cut_into_bigrams_and_full_width_forms_read_as_ascii():
    assert cjk_units("自助早餐") == ["自助", "助早", "早餐"]
    assert fold("商店有ＷｉＦｉ和２４小时服务") == "商店 店有 wi fi 和 24 小时 时服 服务"
    assert normalize_width("１２０％") == "120%"
    assert "早餐" in content_words("酒店提供自助早餐。")


def test_topic_units_leave_out_japanese_particles_and_korean_endings():
    assert anchor_units("駅から徒歩五分です") == ["徒歩", "歩五", "五分"]
    assert anchor_units("박물관은 월요일에 쉽니다") == ["박물", "월요", "쉽니"]


def test_per_language_stopwords_leave_the_content_words():
    assert content_terms("Nous avons une chambre avec vue sur la mer.") >= {"chambr", "mer"}
    assert not {"nous", "avons", "une", "avec", "sur"} & content_terms(
        "Nous avons une chambre avec vue sur la mer.")
    assert not {"und", "der", "ist"} & content_terms("Der Park ist groß und schön.")


def _evidence(text: str) -> tuple[Evidence, ...]:
    return (Evidence("d", 0, 0, len(text), text),)


@pytest.mark.parametrize(("claim", "quote"), [
    ("商场提供免费停车。", "商场每天上午10点至晚上9点营业，并提供免费停车。"),
    ("美術館は月曜日が休館日です。", "なお、美術館は月曜日が休館日となっております。"),
    ("수영장은 무료로 이용할 수 있습니다.", "투숙객은 호텔 수영장을 무료로 이용할 수 있습니다."),
])
def test_a_cjk_quote_with_more_around_the_claim_grounds(claim, quote):
    label, evidence, note = ground("ENT", _evidence(quote), 0, 1, claim)
    assert (label, note) == ("ENT", None) and evidence


def test_a_cjk_quote_about_something_else_does_not_ground():
    quote = _evidence("商场每天上午10点开始营业。")
    label, _, note = ground("ENT", quote, 0, 1, "酒店有室内泳池。")
    assert label == "NIC" and "share no content word" in note


@pytest.mark.parametrize(("text", "terms"), [
    ("博物馆每年接待两千名游客。", {"2000 people"}),
    ("展览持续三天。", {"3 day"}),
    ("门票价格为八十五元。", {"85 cny"}),
    ("大桥于2019年10月1日通车。", {"date 2019-10-1"}),
    ("商店下午4点半关门。", {"time 16:30"}),
    ("入場料は１，２００円です。", {"1200 yen"}),
    ("会員は約三百人です。", {"300 people"}),
    ("회원권은 한 달에 5만 원입니다.", {"50000 krw"}),
    ("百分之十五的房间可以看到海。", {"15 %"}),
    ("Der Eintritt kostet 7,50 €.", {"7.5 eur"}),
    ("Im Jahr 2023 kamen 30.000 Besucher.", {"30000"}),
    ("La ville compte 1 250 000 habitants.", {"1250000"}),
    ("La tasa de paro bajó al 12,5 %.", {"12.5 %"}),
    ("A consulta custa R$ 200,00.", {"200 usd"}),
    ("Il biglietto costa 2.400 lire.", {"2400"}),
    ("Visitors: 30,000.", {"30000"}),
])
def test_cjk_and_locale_numbers_are_read(text, terms):
    assert terms <= number_terms(text)


@pytest.mark.parametrize(("text", "low", "high"), [
    ("该村有三千多名居民。", 3000, float("inf")),
    ("每天有数百人参观。", 200, 999),
    ("公园里有几千棵树。", 2000, 9999),
    ("这座桥长不到500米。", float("-inf"), 500),
    ("入場者は数百人でした。", 200, 999),
])
def test_cjk_vague_amounts_are_ranges(text, low, high):
    (quantity,) = read(text).quantities
    assert quantity.interval() == (low, high)


@pytest.mark.parametrize("text", ["他十分高兴。", "我们一起去吧。", "这是唯一的入口。",
                                  "第一次来。",
                                  "星期一休息。", "万一下雨怎么办？", "统一价格。"])
def test_words_with_numeral_characters_are_not_numbers(text):
    assert not read(text).quantities


CONTEXT = {
    "de": "Der Campingplatz am See hat 80 Stellplätze und einen Kiosk.",
    "fr": "Le camping au bord du lac dispose de 80 emplacements et d'un kiosque.",
    "es": "El camping junto al lago tiene 80 parcelas y un quiosco.",
    "it": "Il campeggio sul lago ha 80 piazzole e un chiosco.",
    "pt": "O parque de campismo junto ao lago tem 80 lugares e um quiosque.",
    "ru": "В кемпинге у озера 80 мест и есть киоск.",
    "zh": "湖边的露营地有80个营位和一个小卖部。",
    "ja": "湖畔のキャンプ場には80区画と売店があります。",
    "ko": "호숫가 캠핑장에는 80개의 사이트와 매점이 있습니다.",
}
COURTESY = [
    ("de", "Ich wünsche Ihnen einen schönen Aufenthalt!"),
    ("fr", "N'hésitez pas si vous avez d'autres questions."),
    ("fr", "Je vous souhaite un excellent séjour !"),
    ("es", "¡Que disfrute de su estancia!"),
    ("es", "No dude en preguntar si necesita algo más."),
    ("it", "Buona permanenza!"),
    ("it", "Fammi sapere se hai altre domande."),
    ("pt", "Espero ter ajudado!"),
    ("pt", "Qualquer dúvida, estou à disposição."),
    ("ru", "Хорошего отдыха!"),
    ("ru", "Если у вас есть вопросы, обращайтесь."),
    ("zh", "祝您旅途愉快！"),
    ("zh", "如果还有其他疑问，欢迎随时提问。"),
    ("ja", "ご不明な点があればお気軽にお尋ねください。"),
    ("ja", "素敵な旅になりますように。"),
    ("ko", "즐거운 여행 되세요!"),
    ("ko", "궁금한 점이 있으면 언제든지 물어보세요."),
]


@pytest.mark.parametrize(("language", "sentence"), COURTESY)
def test_a_courtesy_line_without_a_claim_is_not_re_added(language, sentence):
    assert check_coverage(sentence, []).extra_claim is None


@pytest.mark.parametrize("sentence", [
    "Viel Spaß beim Zelten!",  # a wish naming the activity: a word outside the vocabulary
    "Der Eintritt ist frei!", "Merci ! Le camping est gratuit.", "谢谢！湖水很深。",
    "Hallo, der Kiosk öffnet um 7 Uhr.", "¿Sabías que el lago es muy profundo?",
])
def test_a_courtesy_form_with_a_word_of_the_world_is_re_added(sentence):
    # Issue 46: no exemption for an exclamation, a greeting prefix or a question.
    assert check_coverage(sentence, []).extra_claim


FACTS = {
    "de": ["Der Kiosk öffnet um 7 Uhr.", "Hunde sind auf dem Platz erlaubt.",
           "Der See ist zum Baden freigegeben.", "Die Duschen kosten einen Euro.",
           "Strom gibt es an jedem Stellplatz.", "Der Platz liegt direkt am Ufer.",
           "Im Winter ist der Platz geschlossen.", "Die Anmeldung erfolgt an der Rezeption.",
           "Es gibt einen Spielplatz für Kinder.", "Feuer machen ist verboten."],
    "fr": ["Le kiosque ouvre à 7 heures.", "Les chiens sont acceptés.",
           "La baignade est autorisée dans le lac.", "Les douches sont gratuites.",
           "Chaque emplacement a l'électricité.", "Le camping est fermé en hiver.",
           "L'accueil se trouve à l'entrée.", "Les feux sont interdits.",
           "Il y a une aire de jeux.", "Le lac est très profond."],
    "es": ["El quiosco abre a las 7.", "Se admiten perros.", "Está permitido bañarse en el lago.",
           "Las duchas son gratuitas.", "Cada parcela tiene electricidad.",
           "El camping cierra en invierno.", "La recepción está en la entrada.",
           "Están prohibidas las hogueras.", "Hay un parque infantil.", "El lago es muy profundo."],
    "it": ["Il chiosco apre alle 7.", "I cani sono ammessi.", "Si può fare il bagno nel lago.",
           "Le docce sono gratuite.", "Ogni piazzola ha la corrente.",
           "Il campeggio chiude d'inverno.", "La reception è all'ingresso.",
           "I fuochi sono vietati.", "C'è un parco giochi.", "Il lago è molto profondo."],
    "pt": ["O quiosque abre às 7 horas.", "Cães são permitidos.", "É permitido nadar no lago.",
           "Os chuveiros são gratuitos.", "Cada lugar tem eletricidade.",
           "O parque fecha no inverno.", "A receção fica à entrada.",
           "As fogueiras são proibidas.", "Há um parque infantil.", "O lago é muito fundo."],
    "ru": ["Киоск открывается в 7 утра.", "С собаками можно.", "Купаться в озере разрешено.",
           "Душ бесплатный.", "На каждом месте есть электричество.", "Зимой кемпинг закрыт.",
           "Ресепшен находится у входа.", "Разводить костры запрещено.",
           "Есть детская площадка.", "Озеро очень глубокое."],
    "zh": ["小卖部早上7点开门。", "允许携带宠物狗。", "湖里可以游泳。", "淋浴免费。",
           "每个营位都有电。", "冬天营地关闭。", "前台在入口处。", "禁止生火。",
           "有儿童游乐场。", "湖水很深。"],
    "ja": ["売店は朝7時に開きます。", "犬の同伴ができます。", "湖で泳ぐことができます。",
           "シャワーは無料です。", "各区画に電源があります。", "冬はキャンプ場が閉鎖されます。",
           "受付は入口にあります。", "焚き火は禁止です。", "子ども用の遊び場があります。",
           "湖はとても深いです。"],
    "ko": ["매점은 오전 7시에 문을 엽니다.", "반려견 동반이 가능합니다.",
           "호수에서 수영할 수 있습니다.", "샤워는 무료입니다.", "모든 사이트에 전기가 있습니다.",
           "겨울에는 캠핑장이 문을 닫습니다.",
           "접수처는 입구에 있습니다.", "불을 피우는 것은 금지되어 있습니다.",
           "어린이 놀이터가 있습니다.", "호수는 매우 깊습니다."],
}


@pytest.mark.parametrize("language", sorted(FACTS))
def test_a_fact_is_never_called_an_assertion_of_nothing(language):
    assert len(FACTS[language]) >= 10
    wrong = [s for s in FACTS[language] if classify(s).kind == NONE]
    assert not wrong


@pytest.mark.parametrize("language", sorted(FACTS))
def test_a_fact_left_without_claims_is_re_added(language):
    assert all(check_coverage(s, []).extra_claim for s in FACTS[language])


@pytest.mark.parametrize(("text", "sentences"), [
    ("Die Messe beginnt am 4. Oktober im Messezentrum. Der Eintritt kostet ca. 15 Euro. Bis bald!",
     ["Die Messe beginnt am 4. Oktober im Messezentrum.", "Der Eintritt kostet ca. 15 Euro.",
      "Bis bald!"]),
    ("会议将于十月四日开始。门票约十五欧元！欢迎参加？",
     ["会议将于十月四日开始。", "门票约十五欧元！", "欢迎参加？"]),
    ("見本市は10月4日に始まります。入場料は約15ユーロです。",
     ["見本市は10月4日に始まります。", "入場料は約15ユーロです。"]),
])
def test_sentences_are_split_by_the_rules_of_their_language(text, sentences):
    from rt4chart.transforms.segment import split_sentences

    assert [text[a:b] for a, b in split_sentences(text)] == sentences


def test_the_offline_judge_warns_once_per_language_it_has_no_vocabulary_for(caplog):
    import asyncio

    from rt4chart.transforms.judges.offline.judge import OfflineJudge

    judge = OfflineJudge()
    chunk = "Das Freibad öffnet um 8 Uhr. Der Eintritt kostet 4 Euro."
    with caplog.at_level("WARNING"):
        for claim in ("Das Freibad öffnet um 8 Uhr.", "Der Eintritt kostet 4 Euro.",
                      "The pool opens at 8 am."):
            asyncio.run(judge.verify_local(claim, chunk, ""))
    warnings = [r.getMessage() for r in caplog.records if "offline judge" in r.getMessage()]
    assert len(warnings) == 1 and "'de'" in warnings[0]
