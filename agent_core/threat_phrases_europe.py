"""The threat scan's phrases in Spanish, Portuguese (and Italian overrides), French, German and
Russian: instruction override, role or identity hijack, secret exfiltration, hidden-instruction
markers. Written in ordinary spelling; the scanner folds their literal parts like the scanned
text (see `threat_phrases`).
"""

from __future__ import annotations

from agent_core.threat_patterns import RawPattern, gap, sep

__all__ = ["EUROPEAN"]

_S = sep()
_URL_OR_MAIL = r"(?:https?://|ftp://|\S+@\S+\.)"

# --- Spanish / Portuguese / Italian ----------------------------------------------------------
_ES_IGNORE = (
    rf"(?:ignora|ignore|ignorar|ignoren|olvida|olvide|olvidar|olviden|descarta|descarte|omite|"
    rf"omita|desestima|desatiende|no{_S}hagas{_S}caso{_S}(?:de|a)|haz{_S}caso{_S}omiso{_S}(?:de|a)|"
    rf"esquece|esqueça|esquecer|desconsidere|desconsidera|despreze|dimentica|ignorate)"
)
_ES_INSTR = (
    r"(?:instrucciones|instruções|instrucoes|istruzioni|indicaciones|indicações|directrices|"
    r"diretrizes|reglas|regras|regole|órdenes|ordens|comandos)"
)
_ES_PRIOR = (
    rf"(?:anteriores|previas|prévias|precedentes|precedenti|anteriori|originales|originais|"
    rf"iniciales|iniciais|de{_S}arriba|acima|del{_S}sistema|do{_S}sistema|tus|tuas|suas|"
    rf"todas{_S}(?:las|as)|todos{_S}(?:los|os)|tutte{_S}le)"
)
_ES_SECRET = (
    rf"(?:claves?{_S}(?:de{_S})?api|api{_S}keys?|contraseñas?|senhas?|credenciales|credenciais|"
    rf"secretos|segredos|tokens?|variables{_S}de{_S}entorno|variáveis{_S}de{_S}ambiente|"
    rf"prompt{_S}del?{_S}sistema|prompt{_S}do{_S}sistema|instrucciones{_S}del{_S}sistema|"
    rf"instruções{_S}do{_S}sistema)"
)
_ES_ROLE = (
    r"(?:ia|asistente|assistente|modelo|chatbot|personaje|personagem|dan|libre|livre|"
    r"sin\W{1,8}(?:restricciones|límites|filtros|censura|reglas)|sem\W{1,8}(?:restrições|limites|"
    r"filtros|censura|regras)|malvad[oa]|malign[oa])"
)
_ES_UNBOUND = rf"(?:sin{_S}(?:restricciones|límites|filtros|censura|reglas)|sem{_S}(?:restrições|limites|filtros|censura|regras)|malvad[oa]|malign[oa])"

# --- French ----------------------------------------------------------------------------------
_FR_IGNORE = (
    rf"(?:ignore[rz]?|oublie[rz]?|n[eé]glige[rz]?|ne{_S}tiens{_S}pas{_S}compte{_S}d[eu]s?|"
    rf"ne{_S}tenez{_S}pas{_S}compte{_S}d[eu]s?|fais{_S}abstraction{_S}d[eu]s?|"
    rf"faites{_S}abstraction{_S}d[eu]s?|passe[rz]?{_S}outre|écarte[rz]?|annule[rz]?)"
)
_FR_INSTR = r"(?:instructions|consignes|directives|règles|ordres|commandes)"
_FR_PRIOR = (
    rf"(?:précédentes|antérieures|ci-dessus|initiales|originales|d'origine|du{_S}système|"
    rf"tes|vos|toutes{_S}les)"
)
_FR_SECRET = (
    rf"(?:clés?{_S}(?:d')?api|clés|mots{_S}de{_S}passe|identifiants|secrets|jetons|tokens?|"
    rf"variables{_S}d'environnement|prompt{_S}système|invite{_S}système|instructions{_S}système)"
)

# --- German ----------------------------------------------------------------------------------
_DE_IGNORE = (
    rf"(?:ignoriere|ignorieren|ignorier|vergiss(?!{_S}nicht)|vergessen(?!{_S}sie{_S}nicht)|"
    rf"missachte|missachten|verwirf|verwerfen|übergehe|übergehen|überschreibe|überschreiben)"
)
_DE_UNLESS = (
    r"(?:beachte|beachten|befolge|befolgen|lass|lassen|setze|setzen|hebe|heben|folge|folgen)"
)
_DE_INSTR = (
    r"(?:anweisungen|anweisung|instruktionen|befehle|regeln|vorgaben|richtlinien|"
    r"systemanweisungen|systemanweisung|systemprompt|anordnungen|einschränkungen)"
)
_DE_PRIOR = (
    r"(?:vorherigen?|vorigen?|bisherigen?|früheren?|obigen?|vorangegangenen?|ursprünglichen?|"
    r"alten?|alle|sämtliche|deine|ihre)"
)
_DE_SECRET = (
    rf"(?:api-?{_S}?schlüssel|schlüssel|passwörter|passwort|kennwörter|kennwort|zugangsdaten|"
    rf"geheimnisse|tokens?|umgebungsvariablen|systemprompt|systemanweisungen)"
)

# --- Russian ---------------------------------------------------------------------------------
_RU_IGNORE = (
    rf"(?:игнорируй|игнорируйте|игнорировать|проигнорируй|проигнорируйте|забудь|забудьте|"
    rf"отбрось|отбросьте|не{_S}обращай{_S}внимания{_S}на|"
    rf"не{_S}обращайте{_S}внимания{_S}на|не{_S}следуй|не{_S}следуйте|не{_S}выполняй|"
    rf"перестань{_S}следовать|больше{_S}не{_S}следуй)"
)
_RU_PRIOR = (
    r"(?:предыдущи\w*|прошлы\w*|прежни\w*|все|всё|вышеуказанны\w*|вышеприведенны\w*|"
    r"исходны\w*|первоначальны\w*|системны\w*|сво\w*|твои\w*)"
)
_RU_INSTR = r"(?:инструкци\w*|указани\w*|команд\w*|правил\w*|установк\w*|ограничени\w*|промпт\w*)"
_RU_SECRET = (
    rf"(?:ключ\w*{_S}api|api{_S}ключ\w*|api-ключ\w*|ключи|парол\w+|токен\w*|секрет\w*|"
    rf"учётные{_S}данные|учетные{_S}данные|переменные{_S}окружения|системн\w+{_S}промпт\w*|"
    rf"системн\w+{_S}инструкци\w+)"
)

EUROPEAN: tuple[RawPattern, ...] = (
    # --- Spanish / Portuguese / Italian ------------------------------------------------------
    (
        "prompt_injection_es_pt_it",
        "asks the model to ignore its previous instructions (Spanish/Portuguese/Italian)",
        rf"\b{_ES_IGNORE}{_S}{gap(3)}(?:{_ES_INSTR}{_S}{gap(2)}{_ES_PRIOR}|{_ES_PRIOR}{_S}"
        rf"{gap(1)}{_ES_INSTR})\b"
        rf"|\b(?:olvida|olvide|ignora|ignore|esqueça|esquece|descarta){_S}(?:todo{_S}lo{_S}"
        rf"(?:anterior|que{_S}te{_S}(?:dijeron|han{_S}dicho))|tudo{_S}(?:acima|o{_S}que{_S}"
        rf"(?:te|lhe){_S}(?:disseram|foi{_S}dito)))\b",
        False,
        ("ignor", "olvid", "descart", "omit", "desestim", "desatiend", "caso", "esquec", "esqueç",
         "desconsider", "desprez", "dimentic"),
    ),
    (
        "role_hijack_es_pt",
        "tries to give the model a new identity (Spanish/Portuguese)",
        rf"\b(?:a{_S}partir{_S}de{_S}(?:ahora|este{_S}momento|agora)|(?:ahora|agora)),?{_S}"
        rf"(?:tú{_S}|você{_S}|tu{_S})?(?:eres|serás|actuarás{_S}como|vas{_S}a{_S}ser|é|será|"
        rf"vai{_S}ser|agirá{_S}como|és){_S}{gap(3)}{_ES_ROLE}\b"
        rf"|\b(?:ya{_S}no{_S}eres|você{_S}não{_S}é{_S}mais|tu{_S}já{_S}não{_S}és|não{_S}és{_S}mais)\b"
        rf"|\b(?:actúa|actua|compórtate|finge{_S}ser|aja|atue|finja{_S}ser|comporte-se){_S}"
        rf"(?:como{_S})?(?:si{_S}fueras{_S}|se{_S}fosse{_S})?(?:un|una|um|uma)?{_S}?{gap(2)}"
        rf"{_ES_UNBOUND}"
        rf"|\bmodo{_S}(?:dan|jailbreak|sin{_S}restricciones|sem{_S}restrições)\b",
        False,
        ("partir", "ahora", "agora", "eres", "mais", "restricciones", "límites", "filtros",
         "censura", "reglas", "restrições", "limites", "regras", "malvad", "malign", "jailbreak",
         "dan"),
    ),
    (
        "send_secrets_es_pt",
        "asks to send or reveal secrets (Spanish/Portuguese)",
        rf"\b(?:envía|envia|envie|manda|mande|reenvía|reenvie|sube|suba|filtra|vaze|comparte|"
        rf"compartilhe|encaminhe|transmite|transmita){_S}{gap(4)}{_ES_SECRET}{_S}{gap(3)}"
        rf"(?:a|al|hacia|para|pro){_S}{_URL_OR_MAIL}"
        rf"|\b(?:revela|revele|muestra|mostra|mostre|imprime|imprima|dime|dame|diga-me|me{_S}diga)"
        rf"{_S}(?:todas{_S}|todos{_S})?(?:tus|tu|seus|suas|seu|sua|teu|tua|"
        rf"teus|tuas){_S}{_ES_SECRET}",
        False,
        ("envi", "manda", "mande", "reenvi", "sube", "suba", "filtra", "vaze", "compart",
         "encaminhe", "transmit", "revel", "muestra", "mostr", "imprim", "dime", "dame", "diga"),
    ),
    (
        "hidden_instructions_es_pt",
        "carries instructions hidden from the user (Spanish/Portuguese)",
        rf"\bno{_S}(?:le{_S})?(?:digas|cuentes|menciones|informes|reveles|avises){_S}(?:nada{_S})?"
        rf"(?:de{_S}esto{_S}|esto{_S})?al{_S}usuario\b"
        rf"|\bsin{_S}(?:que{_S}el{_S}usuario{_S}(?:lo{_S})?(?:sepa|note|vea)|decírselo{_S}al"
        rf"{_S}usuario|avisar{_S}al{_S}usuario|informar{_S}al{_S}usuario)\b"
        rf"|\bnão{_S}(?:conte|diga|mencione|informe|revele|avise){_S}(?:nada{_S})?(?:disso{_S}|"
        rf"isso{_S})?(?:ao|para{_S}o){_S}usuário\b"
        rf"|\bsem{_S}(?:que{_S}o{_S}usuário{_S}(?:saiba|perceba|veja)|avisar{_S}o{_S}usuário|"
        rf"informar{_S}o{_S}usuário|contar{_S}ao{_S}usuário)\b"
        rf"|\binstrucciones{_S}(?:ocultas|secretas)\b|\binstruções{_S}(?:ocultas|secretas|"
        rf"escondidas)\b",
        False,
        ("usuario", "usuário", "ocultas", "secretas", "escondidas"),
    ),
    # --- French ------------------------------------------------------------------------------
    (
        "prompt_injection_fr",
        "asks the model to ignore its previous instructions (French)",
        rf"\b{_FR_IGNORE}{_S}{gap(3)}(?:{_FR_INSTR}{_S}{gap(2)}{_FR_PRIOR}|{_FR_PRIOR}{_S}"
        rf"{gap(1)}{_FR_INSTR})\b"
        rf"|\boublie[zr]?{_S}tout{_S}(?:ce{_S}qu(?:e|'){_S}?(?:on{_S}t'a|je{_S}t'ai|on{_S}vous{_S}a|"
        rf"tu{_S}as|vous{_S}avez)|ce{_S}qui{_S}précède)",
        False,
        ("ignore", "oublie", "néglige", "tiens", "tenez", "abstraction", "outre", "écarte",
         "annule"),
    ),
    (
        "role_hijack_fr",
        "tries to give the model a new identity (French)",
        rf"\b(?:(?:à{_S}partir{_S}de|dès){_S}maintenant,?{_S}(?:tu{_S}es|vous{_S}êtes|tu{_S}seras|"
        rf"vous{_S}serez|tu{_S}agiras{_S}comme|agis{_S}comme|tu{_S}incarnes)|(?:tu{_S}es|vous{_S}êtes)"
        rf"{_S}(?:désormais|maintenant)){_S}{gap(3)}(?:ia|assistant|modèle|chatbot|personnage|dan|"
        rf"libre|sans{_S}(?:restrictions?|limites|filtres|censure)|maléfique|malveillant)\b"
        rf"|\b(?:tu{_S}n'es{_S}plus|vous{_S}n'êtes{_S}plus){_S}(?:un|une|l'|le|la|lié|tenu)"
        rf"|\b(?:fais|faites){_S}semblant{_S}d'être{_S}{gap(3)}(?:sans{_S}(?:restrictions?|limites|"
        rf"filtres|censure)|maléfique|malveillant|dan)\b"
        rf"|\bmode{_S}(?:dan|jailbreak|sans{_S}restrictions?)\b",
        False,
        ("maintenant", "désormais", "plus", "semblant", "jailbreak", "restriction", "dan"),
    ),
    (
        "send_secrets_fr",
        "asks to send or reveal secrets (French)",
        rf"\b(?:envoie|envoyez|transmets|transmettez|transfère|transférez|télécharge)"
        rf"{_S}{gap(4)}{_FR_SECRET}{_S}{gap(3)}(?:à|vers|sur){_S}{_URL_OR_MAIL}"
        rf"|\b(?:révèle|révélez|affiche|affichez|montre|montrez|imprime|imprimez|divulgue|"
        rf"divulguez|donne-moi|donnez-moi|dis-moi|dites-moi){_S}(?:toutes{_S}|tous{_S})?"
        rf"(?:tes|vos|ton|votre){_S}{_FR_SECRET}",
        False,
        ("envoie", "envoyez", "transmet", "transfère", "transférez", "télécharge", "révèle",
         "révélez", "affiche", "montre", "imprime", "divulgue", "donne", "dis-moi", "dites"),
    ),
    (
        "hidden_instructions_fr",
        "carries instructions hidden from the user (French)",
        rf"\bne{_S}(?:le{_S}|lui{_S})?(?:dis|dites|révèle|révélez|mentionne|mentionnez){_S}"
        rf"(?:rien|pas){_S}(?:de{_S}(?:ceci|cela){_S})?à{_S}l'utilisat(?:eur|rice)\b"
        rf"|\bsans{_S}(?:le{_S}dire{_S}à|prévenir|informer|avertir){_S}l'utilisat(?:eur|rice)\b"
        rf"|\bl'utilisat(?:eur|rice){_S}ne{_S}doit{_S}pas{_S}(?:le{_S})?(?:savoir|voir|remarquer)"
        rf"|\binstructions{_S}(?:cachées|secrètes)\b",
        False,
        ("utilisat", "cachées", "secrètes"),
    ),
    # --- German ------------------------------------------------------------------------------
    (
        "prompt_injection_de",
        "asks the model to ignore its previous instructions (German)",
        rf"\b{_DE_IGNORE}{_S}{gap(3)}{_DE_PRIOR}{_S}{gap(2)}{_DE_INSTR}\b"
        rf"|\b{_DE_UNLESS}{_S}{gap(3)}{_DE_PRIOR}{_S}{gap(2)}{_DE_INSTR}{_S}{gap(2)}"
        rf"(?:nicht|außer{_S}acht|außer{_S}kraft|beiseite|auf)\b"
        rf"|\bvergiss{_S}(?:einfach{_S})?alles,?{_S}(?:was{_S}(?:man{_S})?(?:dir|du)|"
        rf"(?:was{_S})?(?:oben|bisher|vorher)|davor)"
        rf"|\b(?:ignoriere|ignorier|vergiss|missachte){_S}(?:alles{_S})?(?:oben|obige|davor|"
        rf"bisherige|vorherige)s?{_S}(?:gesagte|stehende|geschriebene)?",
        False,
        ("anweisung", "instruktion", "befehle", "regeln", "vorgaben", "richtlinien",
         "systemprompt", "anordnung", "einschränk", "ignorier", "vergiss", "missacht"),
    ),
    (
        "role_hijack_de",
        "tries to give the model a new identity (German)",
        rf"\b(?:ab{_S}(?:jetzt|sofort|heute|nun){_S}(?:an{_S})?(?:bist{_S}du|wirst{_S}du|"
        rf"spielst{_S}du|agierst{_S}du|handelst{_S}du)|du{_S}bist{_S}(?:jetzt|nun|ab{_S}jetzt|"
        rf"ab{_S}sofort)){_S}{gap(3)}(?:ki|assistent|assistentin|modell|chatbot|charakter|"
        rf"persona|dan|uneingeschränkt\w*|ungefiltert\w*|unzensiert\w*|böse\w*|frei\w*)\b"
        rf"|\bdu{_S}bist{_S}(?:nicht{_S}mehr|kein{_S}(?:assistent|ki){_S}mehr)\b"
        rf"|\btu{_S}so,?{_S}als{_S}(?:wärst|wärest|seist){_S}du{_S}{gap(4)}"
        rf"(?:uneingeschränkt\w*|ohne{_S}(?:einschränkungen|regeln|filter|grenzen|zensur)|"
        rf"böse\w*|dan)\b"
        rf"|\b(?:jailbreak|dan)-?modus\b",
        False,
        ("bist", "wirst", "spielst", "agierst", "handelst", "wärst", "wärest", "seist", "modus"),
    ),
    (
        "send_secrets_de",
        "asks to send or reveal secrets (German)",
        rf"\b(?:sende|schicke|schick|übermittle|übertrage){_S}{gap(4)}"
        rf"{_DE_SECRET}{_S}{gap(3)}(?:an|nach|zu|auf){_S}{_URL_OR_MAIL}"
        rf"|\b(?:verrate|zeige|zeig|gib|nenne|nenn|sag|schreib){_S}(?:mir{_S})?(?:alle{_S})?"
        rf"(?:deine|deinen|dein|ihre|ihren){_S}{_DE_SECRET}",
        False,
        ("sende", "schick", "übermittl", "übertrag", "dein", "ihre"),
    ),
    (
        "hidden_instructions_de",
        "carries instructions hidden from the user (German)",
        rf"\b(?:sag|sage|erzähl|erzähle|verrate|teile|zeig|zeige){_S}(?:dem|der){_S}"
        rf"(?:benutzer|nutzer|anwender)(?:in)?{_S}(?:nichts|nicht){_S}(?:davon|darüber|über{_S}"
        rf"(?:diese|dies))?"
        rf"|\bohne{_S}(?:dass{_S})?(?:der|die|den|dem){_S}(?:benutzer|nutzer|anwender)(?:in)?{_S}"
        rf"(?:es{_S})?(?:merkt|bemerkt|weiß|erfährt|zu{_S}informieren|zu{_S}benachrichtigen)"
        rf"|\b(?:versteckte|geheime|verborgene){_S}(?:anweisungen|anweisung|instruktionen|befehle)\b",
        False,
        ("nutzer", "anwender", "versteckt", "geheim", "verborgen"),
    ),
    # --- Russian -----------------------------------------------------------------------------
    (
        "prompt_injection_ru",
        "asks the model to ignore its previous instructions (Russian)",
        rf"\b{_RU_IGNORE}{_S}{gap(3)}{_RU_PRIOR}{_S}{gap(2)}{_RU_INSTR}"
        rf"|\b(?:забудь|забудьте|игнорируй|игнорируйте){_S}(?:всё|все){_S}(?:что{_S}(?:тебе|вам)"
        rf"{_S}(?:говорили|сказали|было{_S}сказано)|(?:что{_S})?(?:выше|ранее|до{_S}этого))",
        False,
        ("инструкци", "указани", "команд", "правил", "установк", "ограничени", "промпт",
         "забуд", "игнорир"),
    ),
    (
        "role_hijack_ru",
        "tries to give the model a new identity (Russian)",
        rf"\b(?:с{_S}(?:этого{_S}момента|этой{_S}минуты|сегодняшнего{_S}дня|сейчас)|теперь)"
        rf"{_S}ты{_S}{gap(3)}(?:ии|ai|ассистент|модель|чат-бот|персонаж|dan|"
        rf"без{_S}(?:ограничений|цензуры|фильтров|правил)|свободн\w+|зл\w+|играешь{_S}роль|"
        rf"будешь{_S}играть)"
        rf"|\bты{_S}больше{_S}не{_S}(?:ассистент|ии|ai|модель|помощник|обязан|связан|ограничен)"
        rf"|\b(?:притворись|представь,?{_S}что{_S}ты|веди{_S}себя{_S}как|действуй{_S}как){_S}"
        rf"{gap(3)}без{_S}(?:ограничений|цензуры|фильтров|правил)"
        rf"|\bрежим{_S}(?:dan|джейлбрейка|без{_S}ограничений)\b",
        False,
        ("ты", "режим", "притворись", "представь", "веди", "действуй"),
    ),
    (
        "send_secrets_ru",
        "asks to send or reveal secrets (Russian)",
        rf"\b(?:отправь|отправьте|пришли|пришлите|перешли|перешлите|загрузи|передай|передайте)"
        rf"{_S}{gap(4)}{_RU_SECRET}{_S}{gap(3)}(?:на|по{_S}адресу|в){_S}{_URL_OR_MAIL}"
        rf"|\b(?:раскрой|покажи|выведи|сообщи|назови|скажи|дай){_S}(?:мне{_S})?(?:все{_S})?"
        rf"(?:свои|твои|свой|твой|свою|твою){_S}{_RU_SECRET}",
        False,
        ("ключ", "парол", "токен", "секрет", "учётн", "учетн", "переменные", "системн"),
    ),
    (
        "hidden_instructions_ru",
        "carries instructions hidden from the user (Russian)",
        rf"\bне{_S}(?:говори|сообщай|рассказывай|показывай|говорите|сообщайте){_S}"
        rf"(?:об{_S}этом{_S}|ничего{_S})?пользовател\w+"
        rf"|\bтак,?{_S}чтобы{_S}пользователь{_S}не{_S}(?:узнал|заметил|увидел)"
        rf"|\b(?:скрыт\w+|секретн\w+|тайн\w+){_S}(?:инструкци\w+|указани\w+|команд\w+)",
        False,
        ("пользовател", "скрыт", "секретн", "тайн"),
    ),
)
