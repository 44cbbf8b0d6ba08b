"""Word classes: what a word is about when it is not about the world.

Two uses. `SOURCE_NOUNS`, `SPEECH_VERBS` and `NEGATIONS` tell a sentence about the sources
("Passage 2 says ...", "The passages do not mention ...") from a sentence about the world. The
discourse vocabulary below (`DISCOURSE_EN`, `DISCOURSE_WORDS`, `PHRASES`, `DISCOURSE_PHRASES`)
is the one exemption from checking (issue 46): a sentence is left unverified only when every
word of it is in it (`assertion.discourse_only`).

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
# Negation: it turns a statement about the world into another one.
NEGATIONS = frozenset(
    """not no never none nobody nothing neither nor cannot can't won't don't doesn't didn't
    isn't aren't wasn't weren't hasn't haven't hadn't shouldn't wouldn't couldn't""".split())


# --- The discourse vocabulary: the one exemption from checking (issue 46) ---------------------
#
# A sentence (or a judge's claim) is left unverified only when every one of its words is in the
# discourse vocabulary of its language (or is a function word, a negation, a label of a source
# or a part, "Passage 3", "[2]", or a word count, "in 80 words"). The classes below are closed
# and reviewed: each holds words that address the reader or point at the answer and its
# sources, never a word that could be the subject or the predicate of a statement about the
# world. Its form decides nothing: a heading, a list item, a bold line, a lead-in with a colon,
# a question or an advice clause with one word outside these lists is verified. A word missing
# here errs on the safe side (the sentence is verified). Stems (`words.stem`) for English.

# Greetings and salutations: "Hello!", "Good morning,", "Dear reader,".
GREETING_WORDS = _stems("""hi hello hey dear greetings morning afternoon evening there everyone
    reader readers user customer friend""")
# Thanks, apologies and wishes: "Thank you for your question!", "Sorry for the confusion."
THANKS_WORDS = _stems("""thank thanks thankful grateful appreciate appreciated sorry apologize
    apologise apology apologies confusion question luck regards cheers hope hopes hoping wish
    wishes""")
# Offers of more help: "Let me know if you have any other questions.", "Feel free to ask."
OFFER_WORDS = _stems("""let know ask asks asking hesitate assist assistance want wants like
    would else anything further more additional other clarification clarify reach out
    questions question inquiry inquiries follow-up need needs concern concerns""")
# Referrals to someone who can advise: "Consult your veterinarian for advice." (advice with a
# reason, "... because X damages the liver", has words about the world and is verified).
REFERRAL_WORDS = _stems("""consult consulting consultation seek seeking advice advise guidance
    personalized personalised professional professionals healthcare provider providers doctor
    doctors physician physicians pharmacist veterinarian vet lawyer attorney expert experts
    specialist specialists qualified double check recommend recommended recommendation
    recommendations advisable speak talk resources instructions""")
# Hedges and discourse markers: "Unfortunately,", "In summary,", "Therefore, to summarize:".
HEDGE_WORDS = _stems("""unfortunately fortunately sadly however therefore thus hence so overall
    finally lastly summary summarize summarise summarizing summarising sum conclusion conclude
    short brief briefly note noted please sure certainly okay ok yes absolutely course indeed
    actually basically essentially simply generally below above following follows mentioned
    confidently honestly afraid""")
# Pointers to the passages and the answer, and refusals: "Based on the given passages, here is
# the answer:", "Unable to answer based on the given passages.", "(See passages 1 and 3.)".
POINTER_WORDS = _stems("""passage passages document documents doc docs source sources article
    articles text texts context contexts information info data excerpt excerpts snippet
    snippets reference references record records structured json format provided given based
    according answer answers reply replies respond response responses output word words
    sentence sentences version request requested mention mentions say says said state states
    stated see cite cited provide provides contain contains include includes discuss
    discusses describe describes explain explains unable determine tell specifically detail
    details point points overview list lists heading headings part parts item items step
    steps option options tip tips section sections page pages paragraph paragraphs pros cons
    similarities differences advantages disadvantages less within news solely entirety
    attempt necessary possibilities replied responded cover covers covered raise raised
    every outline outlines outlined key main draw drawn finding findings agree agrees repeat
    repeats repeated third detailed fully enough address addresses addressed directly rely
    relied others go decide deciding give definitive unclear one specific lyrics quote quotes
    m d""")
# Discourse phrases whose words alone could be a predicate about the world ("It is free.",
# "It helps.", "It is not possible."): they are discourse only together, so they are removed
# as phrases (folded, whole words) before the words are looked up.
PHRASES_EN = tuple("""feel free|good morning|good afternoon|good evening|good day|good luck|
    good question|great question|excellent question|best regards|all the best|best wishes|
    do my best|have a nice day|have a great day|have a good day|have a wonderful day|you re
    welcome|you are welcome|i hope this helps|hope this helps|hope that helps|i hope it helps|
    happy to help|glad to help|glad i could help|help you|help with|can help|need help|need
    any help|need further help|need more help|any help|further help|more help|helpful|
    not possible to|impossible to|not able to|able to answer|enough information|sufficient
    information|insufficient information|relevant information|specific information|specific
    details|available information|information available|provided information|is as follows|
    are as follows|as follows|the following|key points|main points|key details|main
    details|in summary|to summarize|in short|in brief|in conclusion|important to note|
    correct answer|complete answer|detailed answer|detailed explanation|more detailed|
    possible answers|clears things up|clear things up|to wrap up|wrap up|final answer|
    glad to|be glad|so much|no way|for certain|out of reach|what we have|going forward|
    in mind|first things first|that said|put simply|it all depends|up to date|out of date|
    make sure|be sure|happy to|is best to|it s best|do your own"""
    .replace("\n", " ").split("|"))
# The conversation, the writer and the answer as a text: disclaimers ("I am an AI and cannot
# give legal advice."), transitions ("Moving on to the next point."), remarks on the sources'
# quality ("The passages are somewhat contradictory.") and refusals ("I have to decline this
# request."). No adjective here can be a predicate about a thing of the world on its own
# ("available", "free", "safe", "new", "necessary" are not listed: "It is available." is
# verified).
CONVERSATION_WORDS = _stems("""patience depth expand expanding shorter version decline declined
    regrettably request way speculation speculative conclusive certain uncertain unsure
    contradictory consistent inconsistent sufficient insufficient relevant irrelevant touch
    topic topics differ level official decision wise fine print research mind forward
    background kept condense condensed ai assistant language model personal opinion opinions
    access real-time knowledge incomplete informational purpose purposes ability browse
    internet break moving move next look closer thing things said consider considering put
    earlier previous message return original discussed complex aspect aspects depend depends
    view gist takeaway takeaways simple essentials clearer picture legal medical financial
    advisor precise case silent scope outside turn treat refusal lacked missing somewhat
    everything nothing something new add adds here s word long short runs roughly few""")
# Every English discourse word (stems).
DISCOURSE_EN = (GREETING_WORDS | THANKS_WORDS | OFFER_WORDS | REFERRAL_WORDS | HEDGE_WORDS
                | POINTER_WORDS | CONVERSATION_WORDS)

# The same classes in the other supported languages (`language.SUPPORT`), folded lower-case
# words; each list holds the function words its phrases need, so that no stopword list decides
# an exemption. English discourse words and function words are accepted in any language ("OK,
# danke!"). Han, Kana and Hangul are written without spaces: there the phrases themselves are
# listed (`DISCOURSE_PHRASES`) and removed, longest first; what is left must be punctuation.
DISCOURSE_WORDS = {
    "de": frozenset("""hallo guten morgen tag abend liebe lieber sehr geehrte geehrter danke
        vielen dank herzlichen besten gern gerne bitte schön ich hoffe das dies hilfe
        ihnen dir ihr es sie du wir mich mir uns lassen lass lasst wissen weitere fragen frage
        haben hast habt wenn falls noch zögern nicht kein keine keinen zu zur zum mit für viel
        spaß alles gute leider jedoch also zusammenfassend zusammenfassung fazit insgesamt
        hier ist sind eine einer einen ein die der den dem des antwort basierend auf
        grundlage laut gemäß passagen passage dokumente dokument quellen quelle text texte
        informationen angaben kann können nicht beantworten folgt folgende folgenden wie
        und oder gerne entschuldigung""".split()),
    "fr": frozenset("""bonjour bonsoir salut cher chère chers madame monsieur merci beaucoup
        bien je j espère que cela ceci vous aider aidera n hésitez pas si avez d autres
        questions question à me faire savoir bonne journée soirée chance cordialement désolé
        désolée malheureusement cependant donc en résumé conclusion voici voilà la le les une
        un réponse selon d après sur base des passages passage documents document sources
        source texte informations fournies fourni fournis ne peux pas répondre suit comme
        et ou de du au aux avec pour""".split()),
    "es": frozenset("""hola buenos buenas días tardes noches estimado estimada querido
        querida gracias muchas muy amable espero que esto esta te le les ayude ayuda
        ayudado si tienes tiene más otras otra preguntas pregunta no dudes dude en
        preguntar hacérmelo saber saludos suerte lo siento lamentablemente sin embargo por
        tanto resumen conclusión aquí está están la el los las una un respuesta según con
        base basado basada en los pasajes pasaje documentos documento fuentes fuente texto
        información proporcionada puedo responder continuación sigue y o de del al para
        me""".split()),
    "it": frozenset("""ciao buongiorno buonasera salve caro cara cari gentile grazie mille
        molte spero che questo questa ti le vi sia aiuti aiuto utile se hai avete altre
        domande domanda non esitare esitate a chiedere fammi fatemi sapere saluti buona
        fortuna giornata mi dispiace purtroppo tuttavia quindi riassunto conclusione
        ecco la il lo i gli le una un risposta secondo in base ai basato sui passaggi
        passaggio documenti documento fonti fonte testo informazioni fornite posso
        rispondere segue e o di del della al per con""".split()),
    "pt": frozenset("""olá oi bom boa dia tarde noite caro cara prezado prezada obrigado
        obrigada muito espero que isto isso ajude ajuda se tiver tiveres outras outra
        perguntas pergunta não hesite em perguntar me avise saber cumprimentos sorte
        desculpe infelizmente no entanto portanto resumo conclusão aqui está estão a o
        os as uma um resposta segundo com base nos passagens passagem documentos documento
        fontes fonte texto informações fornecidas posso responder segue e ou de do da
        para""".split()),
    "nl": frozenset("""hallo hoi goedemorgen goedemiddag goedenavond beste geachte dank bedankt
        hartelijk je jij u wel ik hoop dat dit helpen laat me weten als heeft hebt
        nog vragen vraag aarzel niet om te stellen succes groeten sorry helaas echter dus
        samenvatting samengevat conclusie hier is zijn een de het antwoord volgens op basis
        van passages passage documenten document bronnen bron tekst informatie kan kunnen
        beantwoorden volgt en of met voor""".split()),
    "sv": frozenset("""hej hallå god morgon dag kväll kära tack så mycket för jag hoppas att
        detta det här hjälp låt mig veta om du ni har fler andra frågor fråga
        tveka inte fråga lycka till hälsningar ursäkta tyvärr dock alltså sammanfattning
        sammanfattningsvis slutsats här är en ett svaret svar enligt baserat på
        passagerna passagen dokumenten dokumentet källorna källan texten informationen kan
        besvara följer och eller med""".split()),
    "da": frozenset("""hej hallo god morgen dag aften kære tak mange for jeg håber at dette
        det her hjælp lad mig vide hvis du i har flere andre spørgsmål tøv ikke med
        at spørge held og lykke hilsen undskyld desværre dog altså sammenfatning
        sammenfattende konklusion her er en et svaret svar ifølge baseret på passagerne
        passagen dokumenterne dokumentet kilderne kilden teksten oplysningerne informationen
        kan besvare følger eller""".split()),
    "no": frozenset("""hei hallo god morgen dag kveld kjære takk tusen for jeg håper at dette
        det her hjelp gi meg beskjed hvis du dere har flere andre spørsmål nøl
        ikke med å spørre lykke til hilsen beklager dessverre likevel altså oppsummering
        oppsummert konklusjon her er en et svaret svar ifølge basert på passasjene
        passasjen dokumentene dokumentet kildene kilden teksten informasjonen kan besvare
        følger og eller""".split()),
    "fi": frozenset("""hei moi terve hyvää huomenta päivää iltaa hyvä kiitos kiitoksia paljon
        toivottavasti tämä tästä apua kerro jos sinulla teillä on muita lisää
        kysymyksiä kysymys älä epäröi kysyä onnea terveisin anteeksi valitettavasti
        kuitenkin siis yhteenveto yhteenvetona johtopäätös tässä vastaus kohtien
        perusteella mukaan kohdat kohta asiakirjat asiakirja lähteet lähde teksti tiedot
        en voi vastata seuraavasti ja tai""".split()),
    "ru": frozenset("""здравствуйте привет добрый доброе день утро вечер уважаемый уважаемая
        дорогой дорогая спасибо большое благодарю надеюсь это этот помогло помощь
        если у вас тебя есть другие ещё еще вопросы вопрос не стесняйтесь спрашивайте
        дайте мне знать удачи с уважением извините к сожалению однако итак таким образом
        итог итоги вывод резюме вот ответ согласно на основе основании основываясь
        отрывков отрывки отрывок документов документы документ источников источники
        источник текста текст информации информация не могу ответить следующим
        следующее образом и или в по""".split()),
    "pl": frozenset("""cześć dzień dobry witam witaj szanowny szanowna drogi droga dziękuję
        dzięki bardzo mam nadzieję że to pomogło pomoc jeśli masz macie inne
        więcej pytania pytanie nie wahaj się pytać daj mi znać powodzenia pozdrawiam
        przepraszam niestety jednak więc podsumowanie podsumowując wniosek oto jest są
        odpowiedź według na podstawie fragmentów fragmenty fragment dokumentów dokumenty
        dokument źródeł źródła źródło tekstu tekst informacji informacje mogę odpowiedzieć
        następująco i lub w z""".split()),
}
# Han, Kana and Hangul discourse phrases (greetings, thanks, "I hope this helps", offers,
# pointers to the passages, refusals), removed from a sentence longest first.
DISCOURSE_PHRASES = {
    "zh": ("您好", "你好", "大家好", "早上好", "下午好", "晚上好", "亲爱的", "尊敬的", "谢谢您",
           "谢谢你", "谢谢", "非常感谢", "感谢您", "感谢", "多谢", "希望这对您有帮助",
           "希望这对你有帮助", "希望对您有帮助", "希望对你有帮助", "希望这能帮到您",
           "希望这有帮助", "希望能帮到您", "如果您还有其他问题", "如果你还有其他问题",
           "如有其他问题", "如有任何问题", "请随时告诉我", "请随时提问", "请随时问我",
           "欢迎随时提问", "祝您好运", "祝您愉快", "祝你好运", "抱歉", "对不起", "很遗憾",
           "不好意思", "总之", "综上所述", "总结", "以下是", "如下", "答案", "回答",
           "根据所提供的段落", "根据提供的段落", "根据所给段落", "根据段落", "根据文章",
           "根据资料", "根据上下文", "根据", "段落", "文章", "资料", "信息", "无法回答",
           "无法", "不能回答", "祝您旅途愉快", "祝你旅途愉快", "旅途愉快", "如果还有其他疑问",
           "如果还有其他问题", "欢迎随时提问", "以下是主要信息", "主要信息", "祝您游玩愉快",
           "我", "您", "你", "的", "是", "了", "吧", "呢",
           "啊"),
    "ja": ("こんにちは", "こんばんは", "おはようございます", "ありがとうございます",
           "ありがとうございました", "ありがとう", "お役に立てれば幸いです",
           "お役に立てれば", "お役に立てて嬉しいです", "他にご質問があれば",
           "ご質問があれば", "お気軽にお尋ねください", "お気軽にどうぞ", "申し訳ありません",
           "すみません", "残念ながら", "まとめると", "要約", "以下の通りです", "以下",
           "回答", "答え", "提供された文章に基づいて", "文章に基づいて", "資料によると",
           "によると", "に基づいて", "お答えできません", "回答できません", "ご不明な点があれば",
           "素敵な旅になりますように", "良い旅を", "主な情報は次のとおりです",
           "楽しい一日をお過ごしください", "です", "ます",
           "は", "が", "を", "に", "の", "ね", "よ"),
    "ko": ("안녕하세요", "안녕", "감사합니다", "고맙습니다", "감사", "도움이 되었으면 좋겠습니다",
           "도움이 되길 바랍니다", "도움이 되셨기를 바랍니다", "다른 질문이 있으시면",
           "언제든지 물어보세요", "언제든지 문의하세요", "죄송합니다", "유감스럽게도", "요약하면",
           "요약", "결론적으로", "다음과 같습니다", "답변", "제공된 구절에 따르면", "구절에 따르면",
           "에 따르면", "답변할 수 없습니다", "답할 수 없습니다", "즐거운 여행 되세요",
           "궁금한 점이 있으면", "도움이 되었기를 바랍니다", "주요 정보는 다음과 같습니다",
           "즐거운 관람 되세요"),
}
# The same in the other languages: the phrases that say "I hope this helps" (their verb alone
# could be a predicate: "Das hilft.").
PHRASES = {
    "en": PHRASES_EN,
    "de": ("ich hoffe das hilft", "ich hoffe dies hilft", "hoffe das hilft",
           "das hilft hoffentlich", "ich wünsche ihnen", "ich wünsche dir", "einen schönen",
           "schönen aufenthalt", "schönen tag", "gute reise", "viel spaß beim besuch", "viel spaß",
           "kurze übersicht", "übersicht"),
    "fr": ("cela vous aide", "ceci vous aide", "cela t aide", "vous aide", "je vous souhaite",
           "bon séjour", "excellent séjour", "bonne visite", "bon voyage", "l essentiel"),
    "es": ("que disfrute", "disfrute de su estancia", "buen viaje", "feliz estancia",
           "si necesita algo más", "si necesitas algo más", "que disfrute de la visita",
           "datos principales", "estos son"),
    "it": ("buona permanenza", "buon soggiorno", "buona visita", "buon viaggio",
           "informazioni principali"),
    "pt": ("espero ter ajudado", "qualquer dúvida", "estou à disposição", "boa estadia",
           "boa viagem", "boa visita", "informações principais", "seguem"),
    "ru": ("хорошего отдыха", "приятного отдыха", "счастливого пути", "обращайтесь",
           "надеюсь это поможет", "это поможет", "основные сведения", "приятной прогулки"),
    "nl": ("hoop dat dit helpt", "dit helpt"),
    "sv": ("hoppas att detta hjälper", "detta hjälper", "det här hjälper"),
    "da": ("håber at dette hjælper", "dette hjælper"),
    "no": ("håper at dette hjelper", "dette hjelper"),
    "fi": ("toivottavasti tämä auttaa", "tämä auttaa"),
    "pl": ("mam nadzieję że to pomoże", "to pomoże"),
}
