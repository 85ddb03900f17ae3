"""The threat scan's phrases in Chinese, Japanese, Korean and Arabic, plus those of
`threat_phrases_europe` (Spanish, Portuguese, French, German, Russian); English and technical
patterns: `threat_patterns`.

Four kinds per language: instruction override, role or identity hijack, secret exfiltration,
hidden-instruction markers. They are written in ordinary spelling (accents, capitals of nouns
in lower case); the scanner folds their literal parts exactly like the scanned text
(`threat_text.fold`), so "précédentes" also matches "precedentes" and a Russian word spelled
with Latin look-alikes. CJK patterns use bounded character gaps (`[^\\n。]{0,12}?`), the others
bounded word gaps.
"""

from __future__ import annotations

from agent_core.threat_patterns import RawPattern, gap, sep
from agent_core.threat_phrases_europe import EUROPEAN

__all__ = ["PHRASES"]

_S = sep()
_CJK_GAP = r"[^。！？!?]{0,12}?"
_KO_GAP = r"[^.!?]{0,12}?"
_SP = r"[*~`\s]{0,8}"  # spaces, or markdown emphasis
_URL_OR_MAIL = r"(?:https?://|ftp://|\S+@\S+\.)"

# --- Chinese (simplified and traditional) ----------------------------------------------------
_ZH_IGNORE = (
    r"(?:忽略|忽視|忽视|无视|無視|不要理会|不要理會|别管|別管|忘记|忘記|忘掉|抛开|拋開|跳过|跳過|"
    r"放弃|放棄|不要遵守|不要遵循|不再遵守)"
)
_ZH_PRIOR = r"(?:之前|以前|先前|此前|上面|上述|前面|原来|原來|原有|原始|你的|系统|系統)"
_ZH_ALL = r"(?:所有|全部|一切)"
_ZH_INSTR_NARROW = r"(?:指令|指示|提示词|提示詞|规则|規則|设定|設定|约束|約束)"
_ZH_INSTR = r"(?:指令|指示|命令|提示词|提示詞|规则|規則|设定|設定|要求|约束|約束)"
_ZH_ROLE = (
    r"(?:ai|人工智能|助手|模型|角色|没有|沒有|不受|无限制|無限制|越狱|越獄|dan|chatgpt|claude|"
    r"受限|受约束|受約束)"
)
_ZH_SECRET = (
    rf"(?:api{_SP}(?:密钥|密鑰|key)|密钥|密鑰|令牌|token|密码|密碼|凭证|憑證|凭据|憑據|环境变量|"
    r"環境變數|系统提示|系統提示)"
)

# --- Japanese --------------------------------------------------------------------------------
_JA_PRIOR = r"(?:以前|前回|これまで|今まで|上記|先ほど|先程|すべて|全て|元の|最初の|システム)"
_JA_INSTR = r"(?:指示|命令|指令|ルール|プロンプト|制約|規則)"
_JA_SECRET = (
    rf"(?:api{_SP}キー|apiキー|パスワード|秘密鍵|認証情報|トークン|環境変数|システムプロンプト|"
    r"シークレット)"
)
_JA_LIMIT = r"(?:制限|制約|ルール|フィルター|検閲|規則)"

# --- Korean ----------------------------------------------------------------------------------
_KO_PRIOR = r"(?:이전|앞의|앞선|위의|기존|원래|처음|시스템)"
_KO_INSTR_NARROW = r"(?:지시|지침|규칙|프롬프트)"
_KO_IGNORE = rf"(?:무시{_SP}(?:하|해)|잊어|잊고|잊으|따르지{_SP}마|따르지{_SP}말)"
_KO_INSTR = r"(?:지시|명령|지침|규칙|프롬프트|설정|제약)"
_KO_SECRET = rf"(?:api{_SP}키|비밀번호|암호|토큰|자격{_SP}증명|환경{_SP}변수|시스템{_SP}프롬프트|비밀{_SP}키)"
_KO_LIMIT = r"(?:제한|규칙|필터|검열|제약)"

# --- Arabic ----------------------------------------------------------------------------------
_AR_IGNORE = (
    rf"(?:تجاهل|تجاهلي|تجاهلوا|انس|انسى|انسي|إنس|اترك|اتركي|تخط|تخطى|تجاوز|تغاضى{_S}عن|"
    rf"لا{_S}تتبع|لا{_S}تلتزم{_S}ب|لا{_S}تلتزم|توقف{_S}عن{_S}اتباع)"
)
_AR_INSTR = r"(?:التعليمات|تعليمات|الأوامر|أوامر|الإرشادات|إرشادات|التوجيهات|توجيهات|القواعد|قواعد)"
_AR_INSTR_YOUR = r"(?:تعليماتك|أوامرك|إرشاداتك|توجيهاتك|قواعدك)"
_AR_PRIOR = r"(?:السابقة|الأصلية|أعلاه|الماضية|القديمة|الأولى|كل|جميع|كافة)"
_AR_SECRET = (
    rf"(?:مفاتيح|مفتاح|كلمات{_S}المرور|كلمة{_S}المرور|كلمة{_S}السر|رموز{_S}الوصول|الرموز|"
    rf"بيانات{_S}الاعتماد|متغيرات{_S}البيئة|موجه{_S}النظام|تعليمات{_S}النظام|الأسرار)"
)

_ASIA_ARABIC: tuple[RawPattern, ...] = (
    # --- Chinese -----------------------------------------------------------------------------
    (
        "prompt_injection_zh",
        "asks the model to ignore its previous instructions (Chinese)",
        rf"{_ZH_IGNORE}{_CJK_GAP}{_ZH_PRIOR}[^。！？]{{0,10}}?{_ZH_INSTR}"
        rf"|{_ZH_IGNORE}{_CJK_GAP}{_ZH_ALL}[^。！？]{{0,10}}?{_ZH_INSTR_NARROW}"
        r"|(?:忽略|无视|無視|忘记|忘記|覆盖|覆蓋)[^。]{0,6}?(?:系统|系統)提示",
        False,
        ("忽", "无视", "無視", "不要理", "别管", "別管", "忘", "抛开", "拋開", "跳过", "跳過",
         "放弃", "放棄", "遵", "覆盖", "覆蓋"),
    ),
    (
        "role_hijack",
        "tries to give the model a new identity (Chinese)",
        rf"(?:从现在(?:开始|起)|從現在(?:開始|起)|现在起|現在起|从今以后|從今以後)[，,]?{_SP}你(?:就)?"
        rf"(?:是|将是|將是|扮演|要扮演|成为|成為){_CJK_GAP}{_ZH_ROLE}"
        r"|你现在是(?:一个)?(?:不受限制|没有限制|越狱|无限制)|你現在是(?:一個)?(?:不受限制|沒有限制|越獄|無限制)"
        rf"|你(?:不再|已经不再|已經不再)是[^。]{{0,8}}?{_ZH_ROLE}"
        r"|扮演[^。]{0,6}?(?:没有|沒有|不受|无|無)[^。]{0,4}?(?:限制|约束|約束|规则|規則|审查|審查)"
        r"|(?:越狱|越獄|无限制|無限制)模式"
        r"|你的新(?:身份|角色|名字|人设|人設)是",
        False,
        ("你", "模式", "扮演"),
    ),
    (
        "send_secrets_zh",
        "asks to send or reveal secrets (Chinese)",
        rf"{_ZH_SECRET}[^。]{{0,20}}?(?:发送|發送|发|發|上传|上傳|传|傳|转发|轉發)(?:到|至|给|給)"
        rf"[^。]{{0,10}}?{_URL_OR_MAIL}"
        rf"|(?:告诉我|告訴我|输出|輸出|打印|显示|顯示|给我|給我|泄露|洩露|透露|发给我|發給我)"
        rf"[^。]{{0,4}}?你的[^。]{{0,6}}?{_ZH_SECRET}"
        rf"|把[^。]{{0,8}}?{_ZH_SECRET}[^。]{{0,10}}?(?:发给我|發給我|告诉我|告訴我)",
        False,
        ("密", "令牌", "token", "凭", "憑", "环境变量", "環境變數", "系统提示", "系統提示"),
    ),
    (
        "hidden_instructions_zh",
        "carries instructions hidden from the user (Chinese)",
        r"(?:不要|别|別|切勿|不得)(?:告诉|告訴|通知|让|讓)(?:用户|用戶)|瞒着用户|瞞著用戶"
        r"|对用户(?:隐瞒|保密)|對用戶(?:隱瞞|保密)"
        r"|(?:隐藏|隱藏|秘密|暗中|隐秘|隱秘)的?(?:指令|指示)",
        False,
        ("用户", "用戶", "指令", "指示"),
    ),
    # --- Japanese ----------------------------------------------------------------------------
    (
        "prompt_injection_ja",
        "asks the model to ignore its previous instructions (Japanese)",
        rf"{_JA_PRIOR}の?[^。]{{0,8}}?{_JA_INSTR}[^。]{{0,6}}?(?:無視|忘れ|破棄|従わ|従うな)"
        r"|(?:無視|忘れ)[^。]{0,4}?(?:て|ろ|なさい)[^。]{0,4}?(?:これまで|以前|上記)の(?:指示|命令)",
        False,
        ("無視", "忘れ", "破棄", "従"),
    ),
    (
        "role_hijack_ja",
        "tries to give the model a new identity (Japanese)",
        rf"(?:あなた|君|きみ|お前|おまえ)は(?:今から|これから|もう|今後|今日から)?[^。]{{0,12}}?"
        rf"{_JA_LIMIT}(?:の|が)?(?:ない|なし|無い)[^。]{{0,4}}?(?:ai|アシスタント|モデル|存在|"
        rf"キャラクター|人格)"
        rf"|{_JA_LIMIT}(?:の|が)?(?:ない|なし|無い)[^。]{{0,10}}?(?:として振る舞|になりきっ|を演じ|"
        rf"のふりをし|として答え|として行動)"
        r"|(?:あなた|君|お前)は(?:もう|もはや)[^。]{0,10}?(?:ai|アシスタント)(?:では|じゃ)(?:ない|ありません)"
        r"|(?:脱獄|ジェイルブレイク|dan)モード"
        r"|(?:あなた|君)の新しい(?:役割|名前|人格|正体)は",
        False,
        ("ない", "なし", "無い", "モード", "新しい"),
    ),
    (
        "send_secrets_ja",
        "asks to send or reveal secrets (Japanese)",
        rf"{_JA_SECRET}[^。]{{0,20}}?{_URL_OR_MAIL}[^。]{{0,60}}?(?:送信|送って|送れ|送る|"
        r"アップロード|転送)"
        rf"|{_JA_SECRET}[^。]{{0,10}}?(?:に|へ)[^。]{{0,4}}?(?:送信|送って|送れ|転送)"
        rf"[^。]{{0,8}}?{_URL_OR_MAIL}"
        rf"|(?:あなた|君|お前)の{_JA_SECRET}[^。]{{0,8}}?(?:教えて|見せて|表示して|出力して|送って|"
        rf"漏らし|貼り付けて)",
        False,
        ("キー", "パスワード", "秘密鍵", "認証情報", "トークン", "環境変数", "プロンプト",
         "シークレット"),
    ),
    (
        "hidden_instructions_ja",
        "carries instructions hidden from the user (Japanese)",
        r"(?:隠し|秘密の|隠された)(?:指示|命令|指令)"
        r"|ユーザー(?:に|には)(?:気づかれ|バレ|知られ)(?:ない|ず)"
        r"|ユーザー(?:に|には)(?:この|これ)[^。]{0,8}?(?:言わない|伝えない|知らせない|教えない|"
        r"言うな|伝えるな|内緒)",
        False,
        ("指示", "命令", "指令", "ユーザー"),
    ),
    # --- Korean ------------------------------------------------------------------------------
    (
        "prompt_injection_ko",
        "asks the model to ignore its previous instructions (Korean)",
        rf"{_KO_PRIOR}{_KO_GAP}{_KO_INSTR}[^.]{{0,8}}?{_KO_IGNORE}"
        rf"|모든{_KO_GAP}{_KO_INSTR_NARROW}[^.]{{0,8}}?{_KO_IGNORE}",
        False,
        ("무시", "잊", "따르지"),
    ),
    (
        "role_hijack_ko",
        "tries to give the model a new identity (Korean)",
        rf"{_KO_LIMIT}(?:이|가)?{_SP}없는{_SP}(?:ai|인공지능|어시스턴트|모델|챗봇)(?:처럼|으로서|로서|"
        rf"인{_SP}척|로{_SP}행동|으로{_SP}행동)"
        rf"|(?:너는|넌|당신은){_SP}더{_SP}이상[^.]{{0,15}}?(?:ai|어시스턴트|assistant|비서|모델)"
        rf"(?:이|가)?{_SP}아니"
        rf"|(?:탈옥|jailbreak|dan){_SP}모드"
        rf"|(?:너의|당신의|네){_SP}새로운{_SP}(?:역할|이름|정체성|인격)은",
        False,
        ("없", "아니", "모드", "새로운"),
    ),
    (
        "send_secrets_ko",
        "asks to send or reveal secrets (Korean)",
        rf"{_KO_SECRET}[^.]{{0,20}}?{_URL_OR_MAIL}[\s\S]{{0,60}}?(?:보내|전송|업로드|전달)"
        rf"|(?:너의|당신의|네){_SP}{_KO_SECRET}[^.]{{0,8}}?(?:알려|보여|출력|공개|말해|보내)",
        False,
        ("키", "비밀번호", "암호", "토큰", "자격", "환경", "프롬프트"),
    ),
    (
        "hidden_instructions_ko",
        "carries instructions hidden from the user (Korean)",
        rf"사용자(?:가|는)?{_SP}(?:모르게|눈치채지{_SP}못하게|알아채지{_SP}못하게)"
        rf"|(?:숨겨진|비밀|몰래{_SP}숨긴){_SP}(?:지시|명령|지침)"
        rf"|사용자(?:에게|한테){_SP}(?:이|이것|이{_SP}내용|이{_SP}지시)[^.]{{0,6}}?(?:말하지|알리지|알려주지)",
        False,
        ("사용자", "숨겨진", "비밀", "숨긴"),
    ),
    # --- Arabic ------------------------------------------------------------------------------
    (
        "prompt_injection_ar",
        "asks the model to ignore its previous instructions (Arabic)",
        rf"\b{_AR_IGNORE}{_S}{gap(3)}(?:{_AR_PRIOR}{_S}{gap(2)}{_AR_INSTR}|{_AR_INSTR}{_S}{gap(2)}"
        rf"{_AR_PRIOR}|{_AR_INSTR_YOUR})"
        rf"|\b(?:انس|انسى|إنس|تجاهل){_S}(?:كل{_S})?(?:ما{_S}(?:قيل{_S}لك|سبق|ورد{_S}أعلاه)|"
        rf"شيء{_S}(?:سابق|قيل{_S}لك))",
        False,
        ("تعليمات", "أوامر", "إرشادات", "توجيهات", "قواعد", "تعليماتك", "أوامرك", "ما", "شيء"),
    ),
    (
        "role_hijack_ar",
        "tries to give the model a new identity (Arabic)",
        rf"\b(?:من{_S}الآن(?:{_S}فصاعدا)?|ابتداء{_S}من{_S}الآن|اعتبارا{_S}من{_S}الآن),?{_S}"
        rf"(?:أنت|انت|ستكون|ستصبح){_S}{gap(3)}(?:مساعد|ذكاء|نموذج|شخصية|بدون{_S}قيود|بلا{_S}قيود|"
        rf"غير{_S}مقيد|حر)"
        rf"|\b(?:أنت|انت){_S}الآن{_S}{gap(2)}(?:بدون|بلا|غير){_S}(?:قيود|حدود|رقابة|مقيد|فلاتر)"
        rf"|\bلم{_S}تعد{_S}(?:مساعدا|مساعد|ذكاء|نموذجا|ملزما|مقيدا|مجبرا)"
        rf"|\bوضع{_S}(?:dan|jailbreak|كسر{_S}الحماية|المطور{_S}المفعل)",
        False,
        ("الآن", "تعد", "وضع"),
    ),
    (
        "send_secrets_ar",
        "asks to send or reveal secrets (Arabic)",
        rf"\b(?:أرسل|ارسل|أرسلي|ابعث|سرب|سرّب|انقل|حمّل|حمل){_S}{gap(4)}{_AR_SECRET}{_S}{gap(3)}"
        rf"(?:إلى|الى|على){_S}{_URL_OR_MAIL}"
        rf"|\b(?:اكشف|أظهر|اظهر|اعرض|اطبع|أعطني|اعطني|أخبرني|اخبرني){_S}(?:عن{_S})?"
        rf"(?:مفاتيحك|مفتاحك|كلمات{_S}مرورك|كلمة{_S}مرورك|أسرارك|رموزك|بيانات{_S}اعتمادك|"
        rf"موجه{_S}النظام|تعليمات{_S}النظام)",
        False,
        ("مفات", "مفتاح", "كلم", "رموز", "بيانات", "متغيرات", "موجه", "تعليمات", "أسرار",
         "الأسرار"),
    ),
    (
        "hidden_instructions_ar",
        "carries instructions hidden from the user (Arabic)",
        rf"\bلا{_S}(?:تخبر|تخبري|تقل|تبلغ|تعلم|تُعلم){_S}المستخدم{_S}(?:بهذا|بذلك|عن{_S}هذا|"
        rf"عن{_S}هذه|بهذه)"
        rf"|\b(?:دون|بدون){_S}(?:علم{_S}المستخدم|أن{_S}يعلم{_S}المستخدم|أن{_S}يعرف{_S}المستخدم|"
        rf"إخبار{_S}المستخدم)"
        rf"|\bتعليمات{_S}(?:مخفية|سرية|خفية)\b",
        False,
        ("المستخدم", "تعليمات"),
    ),
)

PHRASES: tuple[RawPattern, ...] = _ASIA_ARABIC + EUROPEAN
