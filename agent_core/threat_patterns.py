"""The threat scan's English and technical patterns (other languages: `threat_phrases`).

Patterns are written against folded text (`threat_text.fold`): lower case, NFKC, confusables
mapped to ASCII, combining marks dropped. Each entry is (pattern id, reason, regex, strict
only, triggers); at least one trigger occurs in every match, so a pattern whose triggers are
all absent is never run. Gaps between words are bounded, so matching stays linear.

The reason completes the sentence "... was not loaded because it <reason>".
"""

from __future__ import annotations

__all__ = ["ENGLISH_AND_TECHNICAL", "RawPattern", "gap", "sep"]

#: (pattern id, reason, regex, strict only, triggers)
RawPattern = tuple[str, str, str, bool, tuple[str, ...]]


def sep() -> str:
    """Between two words of one sentence: spaces, line breaks, a little punctuation or markup,
    but no sentence end."""
    return r"[^\w.!?;。！？]{1,8}"


def gap(n: int) -> str:
    """Up to `n` whole words of the same sentence (each followed by a separator), as few as
    possible."""
    return rf"(?:\w+{sep()}){{0,{n}}}?"


_S = sep()
_NOT_NEGATED = r"(?<!never )(?<!not )(?<!n't )(?<!don't )"
_PREV = (
    r"(?:previous|prior|above|earlier|preceding|foregoing|former|original|initial|existing|"
    r"system|developer|safety|old)"
)
_INSTR = (
    r"(?:instructions?|prompts?|directives?|directions|commands?|guidelines|rules|orders|"
    r"guidance|programming|constraints)"
)
_ALL = r"(?:all|any|every|your|these|those)"
_INSTR_NARROW = r"(?:instructions?|prompts?|directives?|programming|guidelines)"
_IGNORE = (
    rf"(?:ignore|disregard|forget|override|skip|drop|discard|abandon|neglect|overlook|"
    rf"set{_S}aside|throw{_S}away|stop{_S}following|do{_S}not{_S}follow|don'?t{_S}follow|"
    rf"no{_S}longer{_S}follow)"
)
_AI = r"(?:ai|assistant|chatbot|language\W{1,8}model|llm|persona|character)"
_UNBOUND = (
    r"(?:unrestricted|unfiltered|uncensored|unbound|unlimited|unchained|jailbroken|evil|"
    r"malicious|amoral|dan)"
)
_SECRET = (
    r"(?:api{S}keys?|keys|access{S}tokens?|tokens?|secrets?|passwords?|passwd|credentials|"
    r"env(?:ironment)?{S}variables?|env{S}vars?|\.env|ssh{S}keys?|private{S}keys?|"
    r"system{S}prompt|conversation|chat{S}history|memory)"
).replace("{S}", _S)
_SECRET_VAR = r"\$\{?[a-z_]*(?:key|token|secret|passw(?:or)?d|credential|api)[a-z_0-9]*\}?"
_SECRET_FILE = (
    r"(?:~|\$home|\$\{home\})/\.ssh\b|\bid_(?:rsa|ed25519|ecdsa)\b|(?<![\w-])\.env(?![\w.-])"
    r"|/etc/(?:passwd|shadow)\b|\.aws/credentials|\.netrc\b|\.pgpass\b|\.npmrc\b|\.pypirc\b"
)
_NET_TOOL = r"(?:curl|wget|nc|ncat|netcat|socat|httpie|invoke-webrequest|iwr|scp|rsync)"
_SHELL = r"(?:sudo\s+)?(?:ba|z|da|k)?sh\b"
_URL_OR_MAIL = r"(?:https?://|ftp://|\S+@\S+\.)"

ENGLISH_AND_TECHNICAL: tuple[RawPattern, ...] = (
    # --- instruction overrides ---------------------------------------------------------------
    (
        "sys_prompt_override",
        "tries to override or discard the system prompt",
        rf"\b(?:disregard|ignore|forget|override|replace|bypass|discard){_S}{gap(1)}"
        rf"(?:the|your|any|all|this|previous|prior|original|initial|current){_S}{gap(1)}"
        rf"system{_S}(?:prompt|message|instructions)\b"
        rf"|\bnew{_S}system{_S}prompt\s*:"
        rf"|\bsystem{_S}(?:prompt|instructions){_S}(?:is|are|has{_S}been|have{_S}been){_S}"
        rf"(?:now{_S})?(?:replaced|overridden|void|revoked|cancell?ed|lifted)\b",
        False,
        ("system",),
    ),
    (
        "prompt_injection",
        "asks the model to ignore its previous instructions",
        rf"\b{_IGNORE}{_S}(?:{gap(3)}{_PREV}{_S}{gap(3)}{_INSTR}"
        rf"|{gap(1)}{_ALL}{_S}{gap(2)}{_INSTR_NARROW})\b"
        rf"(?!{_S}(?:related|relating|specific|regarding|concerning|about|for{_S}(?:installing|"
        rf"setting|building))\b)"
        rf"|\b(?:ignore|disregard|forget){_S}(?:all{_S}(?:of{_S})?(?:the{_S})?|everything{_S})"
        rf"(?:above|you{_S}(?:were|have{_S}been){_S}(?:told|given)|you{_S}know)\b"
        rf"|\b(?:these|the{_S}following){_S}are{_S}your{_S}(?:new|real|actual|true|only){_S}"
        rf"(?:instructions|orders|rules)\b|\byour{_S}(?:new|real|actual|true){_S}instructions"
        rf"{_S}(?:are|follow)\b",
        False,
        ("ignore", "disregard", "forget", "override", "skip", "drop", "discard", "abandon",
         "neglect", "overlook", "aside", "away", "follow", "instructions"),
    ),
    (
        "disregard_rules",
        "tells the model to drop its rules or safety restrictions",
        rf"\b(?:disregard|ignore|abandon|bypass|circumvent|disable|turn{_S}off){_S}"
        rf"(?:all{_S}|any{_S})?(?:of{_S})?your{_S}{gap(2)}(?:rules|guidelines|restrictions|"
        rf"guardrails|safety|filters?|policies|principles|limitations|content{_S}polic(?:y|ies)|"
        rf"ethics|morals)\b",
        False,
        ("your",),
    ),
    # --- role / identity hijack --------------------------------------------------------------
    (
        "role_hijack",
        "tries to give the model a new identity ('you are now ...')",
        rf"\byou{_S}are{_S}now{_S}(?:(?:an?|the|my){_S}{gap(2)}(?:{_AI}|{_UNBOUND})\b|"
        rf"no{_S}longer\b|called\b|named\b|free\b|{_UNBOUND}\b|in{_S}(?:developer|god|jailbreak|"
        rf"dan|unrestricted|evil){_S}mode)"
        rf"|\bfrom{_S}now{_S}on,?{_S}you{_S}(?:are|will{_S}be|will{_S}act{_S}as|shall{_S}be|"
        rf"will{_S}respond{_S}as|act{_S}as){_S}{gap(3)}(?:{_AI}|{_UNBOUND}|called|named|no{_S}longer)\b"
        rf"|\byou{_S}are{_S}no{_S}longer{_S}(?:an?{_S}|the{_S}|bound|restricted|limited|"
        rf"required|{_AI}\b|claude|chatgpt|gpt|hermes)"
        rf"|\byou{_S}(?:have{_S}been|are{_S}now|were){_S}(?:freed|unlocked|jailbroken|"
        rf"reprogrammed|liberated|unshackled)\b"
        rf"|\b(?:enable|enter|activate|switch{_S}to|engage){_S}(?:dan|jailbreak|jailbroken|"
        rf"unrestricted|unfiltered|evil){_S}mode\b"
        rf"|\byour{_S}(?:new|true|real){_S}(?:role|identity|persona|name|purpose){_S}(?:is|will)\b",
        False,
        ("now", "longer", "freed", "unlocked", "jailbr", "reprogram", "liberated", "unshackled",
         "mode", "your"),
    ),
    (
        "role_pretend",
        "asks the model to pretend to be an unrestricted persona",
        rf"\b(?:pretend|act|behave|respond|roleplay|role-play){_S}(?:to{_S}be{_S}|as{_S}(?:if{_S}"
        rf"you{_S}(?:are|were){_S})?|like{_S})?(?:an?{_S})?{_UNBOUND}\b"
        rf"|\b(?:pretend|imagine|roleplay|role-play){_S}(?:that{_S})?you{_S}(?:are|have|had){_S}"
        rf"(?:no|without){_S}(?:rules|restrictions|limits|limitations|guidelines|filters|"
        rf"censorship|ethics)\b",
        False,
        ("unrestricted", "unfiltered", "uncensored", "unbound", "unlimited", "unchained", "jailbr",
         "evil", "malicious", "amoral", "dan", "rules", "restriction", "limit", "guideline",
         "filter", "censor", "ethic"),
    ),
    # --- secret exfiltration -----------------------------------------------------------------
    (
        "leak_system_prompt",
        "asks the model to reveal its system prompt",
        rf"\b(?:reveal|print|output|repeat|leak|dump|show|display|recite){_S}(?:me{_S})?"
        rf"(?:your|the){_S}(?:full{_S}|entire{_S}|hidden{_S}|original{_S}|exact{_S})?"
        rf"(?:system{_S}prompt|initial{_S}instructions|hidden{_S}instructions)\b"
        rf"|\brepeat{_S}(?:all{_S}|everything{_S}|the{_S}(?:words|text){_S})(?:above|before){_S}"
        rf"(?:this|starting|verbatim)",
        False,
        ("prompt", "instructions", "repeat"),
    ),
    (
        "send_secrets",
        "asks to send secrets or the conversation to an outside address",
        rf"\b(?:send|post|upload|forward|exfiltrate|transmit|leak|email|mail|copy){_S}"
        rf"{gap(4)}{_SECRET}{_S}{gap(3)}(?:to|into){_S}{_URL_OR_MAIL}"
        rf"|\b(?:append|add|include|embed|encode|put|insert){_S}{gap(4)}{_SECRET}{_S}{gap(2)}"
        rf"(?:in|into|to|as){_S}(?:the{_S}|a{_S}|an{_S}|your{_S})?{gap(1)}"
        rf"(?:url|link|image|query{_S}string|request|markdown{_S}image)\b"
        rf"|\b{_NOT_NEGATED}(?:reveal|print|show|output|dump|leak|tell{_S}me|give{_S}me|send{_S}me)"
        rf"{_S}(?:all{_S})?(?:of{_S})?your{_S}(?:api{_S}keys?|secrets?|passwords?|credentials|"
        rf"tokens?|access{_S}tokens?|env(?:ironment)?{_S}variables?|\.env)\b",
        False,
        ("http", "ftp", "@", "url", "link", "image", "query", "request", "your"),
    ),
    (
        "exfil_network_secret",
        "sends secrets (API keys, tokens, SSH keys, .env) over the network",
        rf"\b{_NET_TOOL}\b[^\n]{{0,400}}?(?:{_SECRET_VAR}|{_SECRET_FILE}|\$\((?:env|printenv|set)\))",
        False,
        ("$", ".ssh", "id_", ".env", "/etc/", ".aws", ".netrc", ".pgpass", ".npmrc", ".pypirc"),
    ),
    (
        "exfil_env_pipe",
        "pipes the environment or secret files into a network tool",
        rf"\b(?:env|printenv|set|cat\s+[^\n|]{{0,200}}?(?:{_SECRET_FILE}))\s*\|\s*(?:base64\s*\|\s*)?"
        rf"{_NET_TOOL}\b",
        False,
        ("|",),
    ),
    (
        "read_secrets",
        "reads credential files",
        r"\bcat\s+[^\n]{0,200}?(?:(?<![\w-])\.env(?![\w.-])|credentials\b|\.netrc\b|\.pgpass\b|"
        r"\.npmrc\b|\.pypirc\b|\bid_(?:rsa|ed25519|ecdsa)\b)",
        False,
        ("cat",),
    ),
    # --- hidden-instruction markers ----------------------------------------------------------
    (
        "deception_hide",
        "tells the model to hide its actions from the user",
        rf"\b(?:do{_S}not|don'?t|never){_S}(?:tell|inform|notify|alert){_S}the{_S}user\b"
        rf"(?!{_S}to\b)"
        rf"|\bwithout{_S}(?:telling|informing|notifying|alerting|warning){_S}the{_S}user\b"
        rf"|\b(?:do{_S}not|don'?t|never){_S}(?:reveal|mention|disclose|show){_S}(?:this|these)"
        rf"{_S}(?:instructions?|messages?|notes?|text|rules){_S}to{_S}(?:the{_S})?user\b"
        rf"|\bthe{_S}user{_S}(?:must|should|will){_S}(?:not|never){_S}(?:see|know|notice|"
        rf"find{_S}out|learn){_S}(?:about{_S})?(?:this|these|that)\b",
        False,
        ("user",),
    ),
    (
        "hidden_instructions",
        "carries instructions marked as hidden from the reader",
        rf"\b(?:hidden|secret|invisible|covert){_S}(?:instructions?|prompt|commands?|orders)"
        rf"{_S}(?:for|to){_S}(?:the{_S}|any{_S})?(?:ai|assistant|model|agent|llm|bot|chatbot|"
        rf"language{_S}model)s?\b"
        r"|<\|im_start\|>\s*system|<\|system\|>|<<sys>>|<\|start_header_id\|>\s*system"
        rf"|\[(?:system|admin){_S}(?:message|override|instructions?|note)\]"
        rf"|(?:^|\n)[ \t#>*]*(?:system|admin){_S}override\s*:",
        False,
        ("hidden", "secret", "invisible", "covert", "<|", "<<sys>>", "[system", "[admin",
         "override"),
    ),
    (
        "html_comment_injection",
        "hides instructions in an HTML comment",
        rf"<!--[^>]{{0,400}}?(?:(?:ignore|disregard|override){_S}(?:all|the|any|previous|prior|above|"
        rf"your|these|those|earlier|everything)|system{_S}prompt|secret{_S}instruction|"
        rf"hidden{_S}instruction|ai{_S}(?:agent|assistant)|language{_S}model)[^>]{{0,400}}?-->",
        False,
        ("<!--",),
    ),
    (
        "hidden_div",
        "hides text from the reader with CSS",
        r"<\s*(?:div|span|p)\b[^>]{0,200}?style\s*=\s*[\"'][^\"']{0,200}?"
        r"(?:display\s*:\s*none|visibility\s*:\s*hidden|font-size\s*:\s*0(?![.\d]))",
        False,
        ("style",),
    ),
    (
        "translate_execute",
        "asks the model to decode or translate text and then execute it",
        r"\b(?:translate|decode)\s+(?:\w+\s+){0,5}?(?:and|then)\s+(?:execute|run|follow|obey)\b",
        False,
        ("translate", "decode"),
    ),
    # --- backdoors ---------------------------------------------------------------------------
    (
        "reverse_shell",
        "opens a reverse shell",
        r"/dev/tcp/[\w.-]+/\d+|\b(?:nc|ncat|netcat)\b[^\n]{0,200}?\s-[a-z]*[ec]\s*/bin/"
        r"|\bmkfifo\b[^\n]{0,200}?\b(?:nc|ncat|netcat)\b"
        r"|\bsocat\b[^\n]{0,200}?\b(?:tcp|udp|openssl|ssl)[46]?(?:-connect)?:[^\n]{0,200}?"
        r"\bexec:[\"']?(?:/usr)?(?:/bin/)?(?:ba|z|da|k)?sh\b"
        r"|\bsocat\b[^\n]{0,200}?\bexec:[\"']?(?:/usr)?(?:/bin/)?(?:ba|z|da|k)?sh\b[^\n]{0,200}?"
        r"\b(?:tcp|udp|openssl|ssl)[46]?(?:-connect)?:"
        r"|pty\.spawn\(\s*[\"']/bin/|socket\.socket\([^\n]{0,300}?(?:os\.dup2|subprocess)",
        False,
        ("/dev/tcp", "/bin/", "mkfifo", "socat", "pty.spawn", "socket.socket"),
    ),
    (
        "crontab_backdoor",
        "installs a cron job that downloads or runs remote code",
        r"\bcrontab\b[^\n]{0,300}?\b(?:curl|wget|nc|ncat|/dev/tcp|base64)\b"
        r"|(?:@reboot|(?:[\d*/,-]+[ \t]+){4}[\d*/,-]+)[ \t][^\n]{0,100}?\b(?:curl|wget)\b"
        r"[^\n]{0,200}?\|\s*" + _SHELL + r"|>>?\s*/etc/cron|>>?\s*/var/spool/cron",
        False,
        ("cron", "curl", "wget"),
    ),
    (
        "base64_shell",
        "pipes base64-decoded data into a shell",
        rf"\bbase64\s+(?:-d|--decode|-D)\b[^\n]{{0,100}}?\|\s*{_SHELL}"
        r"|\bfrombase64string\b[^\n]{0,200}?\b(?:iex|invoke-expression)\b"
        r"|\bexec\(\s*(?:base64\.)?b64decode\(",
        False,
        ("base64", "b64decode"),
    ),
    (
        "ssh_backdoor",
        "writes to SSH authorized_keys (persistent access)",
        r"(?:>>?|\btee\b[^\n|;]{0,40}?)\s*[\"']?[^\s\"'|;]{0,200}?authorized_keys"
        r"|\b(?:cp|mv|install|scp|ln)\s[^\n]{0,200}?authorized_keys",
        False,
        ("authorized_keys",),
    ),
    # --- strict (memory) only ----------------------------------------------------------------
    (
        "ssh_access",
        "references the SSH key directory",
        r"(?:~|\$home|\$\{home\})/\.ssh\b",
        True,
        (".ssh",),
    ),
    (
        "agent_env",
        "references the agent's secrets file",
        r"(?:~|\$home|\$\{home\}|\$hermes_home)/(?:\.hermes/)?\.env\b|\.hermes/\.env\b",
        True,
        (".env",),
    ),
    (
        "hardcoded_secret",
        "contains what looks like a hard-coded secret",
        r"\b(?:api[_-]?key|access[_-]?token|auth[_-]?token|secret|password|passwd)\s*[:=]\s*"
        r"[\"']?(?!process\.env\.|os\.environ|env\.)[a-z0-9_\-./+=]{20,}|\bsk-[a-z0-9_-]{20,}|\bgh[pousr]_[a-z0-9]{30,}"
        r"|\bxox[baprs]-[a-z0-9-]{10,}|-----begin [a-z ]*private key-----",
        True,
        ("key", "token", "secret", "passw", "sk-", "gh", "xox"),
    ),
)
