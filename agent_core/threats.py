"""Scanner for text that will reach the system prompt: memory writes, context files, SOUL.md.

Looks for prompt injection ("ignore previous instructions" in several languages, role
hijacks, system-prompt overrides), hidden instructions in invisible Unicode, exfiltration of
secrets (curl/wget/nc with `$*_KEY`, `~/.ssh`, `.env`), and persistence backdoors
(`authorized_keys`, reverse shells, crontab entries, base64 piped to a shell).

Two scopes: `"context"` (project context files: instructions that hijack or exfiltrate) and
`"strict"` (memory: everything in context plus anything touching SSH keys, the agent's own
secrets or hard-coded credentials). The text is normalised once (NFKC, case-fold, invisible
characters stripped) and matched against precompiled regexes with bounded gaps, so a scan is
linear in the text and never raises.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Literal

__all__ = ["MAX_SCAN_CHARS", "Finding", "ThreatScope", "scan", "scan_all"]

ThreatScope = Literal["context", "strict"]

MAX_SCAN_CHARS = 65_536


@dataclass(frozen=True, slots=True)
class Finding:
    """Why a text was refused: a human-readable reason and a stable pattern id."""

    reason: str
    pattern_id: str


@dataclass(frozen=True, slots=True)
class _Pattern:
    pattern_id: str
    reason: str
    regex: re.Pattern[str]
    strict_only: bool
    triggers: tuple[str, ...]

    def search(self, norm: str) -> bool:
        return any(t in norm for t in self.triggers) and self.regex.search(norm) is not None


# Up to N words between two keywords (bounded, so matching stays linear).
def _gap(n: int) -> str:
    return rf"(?:[\w'’-]+[\s,]+){{0,{n}}}?"


_PREV = r"(?:previous|prior|above|earlier|preceding|foregoing)"
_INSTR = r"(?:instructions?|prompts?|directives?|directions|commands?|guidelines|rules|orders)"
_ALL = r"(?:all|any|every|your)"
_INSTR_NARROW = r"(?:instructions?|prompts?|directives?)"
_SECRET_VAR = r"\$\{?[a-z_]*(?:key|token|secret|passw(?:or)?d|credential|api)[a-z_0-9]*\}?"
_SECRET_FILE = (
    r"(?:~|\$home|\$\{home\})/\.ssh\b|\bid_(?:rsa|ed25519|ecdsa)\b|(?<![\w-])\.env(?![\w.-])"
    r"|/etc/(?:passwd|shadow)\b|\.aws/credentials|\.netrc\b|\.pgpass\b|\.npmrc\b|\.pypirc\b"
)
_NET_TOOL = r"(?:curl|wget|nc|ncat|netcat|socat|httpie|invoke-webrequest|iwr|scp|rsync)"
_SHELL = r"(?:sudo\s+)?(?:ba|z|da|k)?sh\b"

# (pattern id, reason, regex, strict only, literal triggers: at least one occurs in any match)
_RAW: list[tuple[str, str, str, bool, tuple[str, ...]]] = [
    # --- instruction overrides, by language -------------------------------------------------
    (
        "sys_prompt_override",
        "tries to override or discard the system prompt",
        r"\b(?:disregard|ignore|forget|override|replace|bypass)\s+"
        rf"{_gap(2)}system\s+(?:prompt|message|instructions)\b"
        r"|(?:忽略|无视|無視|忘记|忘記|覆盖|覆蓋)[^\n。]{0,6}?系统提示|\bnew\s+system\s+prompt\s*:",
        False,
        ("system", "系统提示"),
    ),
    (
        "prompt_injection",
        "asks the model to ignore its previous instructions",
        rf"\b(?:ignore|disregard|forget|override|skip|drop)\s+(?:{_gap(3)}{_PREV}\s+{_gap(3)}{_INSTR}"
        rf"|{_gap(1)}{_ALL}\s+{_gap(2)}{_INSTR_NARROW})\b",
        False,
        ("ignore", "disregard", "forget", "override", "skip", "drop"),
    ),
    (
        "prompt_injection_zh",
        "asks the model to ignore its previous instructions (Chinese)",
        r"(?:忽略|忽視|忽视|无视|無視|不要理会|不要理會|别管|別管|忘记|忘記|忘掉|抛开|拋開|跳过|跳過)"
        r"[^\n。！？]{0,12}?(?:之前|以前|先前|此前|上面|上述|前面|原来|原來|原有|所有|全部|一切)"
        r"[^\n。！？]{0,10}?(?:指令|指示|命令|提示词|提示詞|规则|規則|设定|設定|要求|约束|約束)",
        False,
        ("忽", "无视", "無視", "不要理", "别管", "別管", "忘", "抛开", "拋開", "跳过", "跳過"),
    ),
    (
        "prompt_injection_es_pt_it",
        "asks the model to ignore its previous instructions (Spanish/Portuguese/Italian)",
        r"\b(?:ignora|ignore|ignorar|ignorate|olvida|olvide|olvidar|esquece|esqueça|descarta|dimentica)"
        rf"\s+{_gap(3)}(?:instrucciones|instruções|instrucoes|istruzioni|indicaciones|reglas|regras|regole)"
        rf"\s+{_gap(2)}(?:anteriores|previas|prévias|previas|precedenti|anteriori)\b",
        False,
        ("instru", "istruz", "indicaciones", "regla", "regra", "regole"),
    ),
    (
        "prompt_injection_fr",
        "asks the model to ignore its previous instructions (French)",
        r"\b(?:ignore[rz]?|oublie[rz]?|n[eé]glige[rz]?)\s+"
        rf"{_gap(3)}(?:instructions|consignes|directives|r[eè]gles)\s+{_gap(2)}"
        r"(?:pr[eé]c[eé]dentes|ant[eé]rieures|ci-dessus)\b",
        False,
        ("instructions", "consignes", "directives", "gles"),
    ),
    (
        "prompt_injection_de",
        "asks the model to ignore its previous instructions (German)",
        r"\b(?:ignoriere|ignorieren|ignorier|vergiss|vergessen|missachte|missachten)\s+"
        rf"{_gap(3)}(?:vorherigen?|vorigen?|bisherigen?|früheren?|obigen?|alle)\s+{_gap(2)}"
        r"(?:anweisungen|instruktionen|befehle|regeln|vorgaben)\b",
        False,
        ("anweisungen", "instruktionen", "befehle", "regeln", "vorgaben"),
    ),
    (
        "prompt_injection_ru",
        "asks the model to ignore its previous instructions (Russian)",
        r"(?:игнорируй|игнорируйте|игнорировать|забудь|забудьте|проигнорируй|не\s+обращай\s+внимания\s+на)"
        rf"\s+{_gap(3)}(?:предыдущие|прошлые|прежние|все|вышеуказанные|вышеприведенные)\s+{_gap(2)}"
        r"(?:инструкции|указания|команды|правила)",
        False,
        ("инструкции", "указания", "команды", "правила"),
    ),
    (
        "prompt_injection_ja",
        "asks the model to ignore its previous instructions (Japanese)",
        r"(?:以前|前|これまで|今まで|上記|先ほど|先程|すべて|全て)の?"
        r"[^\n。]{0,8}?(?:指示|命令|指令|ルール|プロンプト)[^\n。]{0,6}?(?:無視|忘れ)",
        False,
        ("無視", "忘れ"),
    ),
    (
        "prompt_injection_ko",
        "asks the model to ignore its previous instructions (Korean)",
        r"(?:이전|앞의|위의|모든)[^\n.]{0,10}?(?:지시|명령|지침|규칙|프롬프트)[^\n.]{0,8}?(?:무시|잊어)",
        False,
        ("무시", "잊어"),
    ),
    (
        "disregard_rules",
        "tells the model to drop its rules or safety restrictions",
        r"\b(?:disregard|ignore|abandon|bypass|circumvent|disable)\s+(?:all\s+|any\s+)?"
        r"(?:of\s+)?your\s+(?:\w+\s+){0,2}?(?:rules|guidelines|restrictions|guardrails|"
        r"safety|filters?|policies|principles|limitations)\b",
        False,
        ("your",),
    ),
    (
        "role_hijack",
        "tries to give the model a new identity ('you are now ...')",
        r"\byou\s+are\s+now\s+(?:an?\s+|the\s+|my\s+|no\s+longer\b|called\b|named\b|free\b|"
        r"unrestricted\b|jailbroken\b|dan\b|in\s+(?:developer|god|jailbreak|dan|unrestricted)\s+mode)"
        r"|\bfrom\s+now\s+on,?\s+you\s+(?:are|will\s+be|will\s+act\s+as)\b"
        r"|(?:从现在(?:开始|起)|從現在(?:開始|起)|现在起|現在起)[，,]?\s*你(?:就)?(?:是|将是|將是|扮演)"
        r"|你现在是(?:一个)?(?:不受限制|没有限制|越狱|无限制)",
        False,
        ("now", "现在", "現在"),
    ),
    (
        "role_pretend",
        "asks the model to pretend to be an unrestricted persona",
        r"\b(?:pretend|act)\s+(?:to\s+be\s+|as\s+(?:if\s+you\s+(?:are|were)\s+)?)(?:an?\s+)?"
        r"(?:unrestricted|unfiltered|uncensored|jailbroken|evil|dan)\b",
        False,
        ("pretend", "act"),
    ),
    (
        "leak_system_prompt",
        "asks the model to reveal its system prompt",
        r"\b(?:reveal|print|output|repeat|leak|dump|show)\s+(?:me\s+)?(?:your|the)\s+"
        r"(?:full\s+|entire\s+|hidden\s+)?(?:system\s+prompt|initial\s+instructions)\b"
        r"|(?:输出|輸出|泄露|洩露|打印|告诉我|告訴我)[^\n。]{0,6}?系统提示",
        False,
        ("system", "initial", "系统提示"),
    ),
    (
        "deception_hide",
        "tells the model to hide its actions from the user",
        r"\b(?:do\s+not|don'?t|never)\s+(?:tell|inform|notify|alert)\s+the\s+user\b(?!\s+to\b)"
        r"|\bwithout\s+(?:telling|informing|notifying|alerting)\s+the\s+user\b"
        r"|(?:不要|别|別|切勿|不得)(?:告诉|告訴|通知|让|讓)用户|瞒着用户|瞞著用戶",
        False,
        ("user", "用户", "用戶"),
    ),
    (
        "html_comment_injection",
        "hides instructions in an HTML comment",
        r"<!--[^>]{0,400}?(?:ignore|disregard|override|system\s+prompt|secret\s+instruction|"
        r"hidden\s+instruction|ai\s+(?:agent|assistant)|language\s+model)[^>]{0,400}?-->",
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
    # --- exfiltration ----------------------------------------------------------------------
    (
        "exfil_network_secret",
        "sends secrets (API keys, tokens, SSH keys, .env) over the network",
        rf"\b{_NET_TOOL}\b[^\n]{{0,400}}?(?:{_SECRET_VAR}|{_SECRET_FILE}|\$\((?:env|printenv|set)\))",
        False,
        ("curl", "wget", "nc", "netcat", "socat", "http", "invoke-webrequest", "iwr", "scp", "rsync"),
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
    (
        "send_secrets",
        "asks to send secrets or the conversation to an outside address",
        r"\b(?:send|post|upload|forward|exfiltrate|transmit|leak|email)\s+(?:\w+\s+){0,4}?"
        r"(?:api\s+keys?|keys|tokens?|secrets?|passwords?|credentials|env(?:ironment)?\s+variables?|"
        r"conversation|chat\s+history|system\s+prompt|memory)\s+(?:\w+\s+){0,3}?to\s+"
        r"(?:https?://|\S+@\S+\.)",
        False,
        ("http", "@"),
    ),
    # --- backdoors -------------------------------------------------------------------------
    (
        "reverse_shell",
        "opens a reverse shell",
        r"/dev/tcp/[\w.-]+/\d+|\b(?:nc|ncat|netcat)\b[^\n]{0,200}?\s-[a-z]*[ec]\s*/bin/"
        r"|\bmkfifo\b[^\n]{0,200}?\b(?:nc|ncat|netcat)\b|\bsocat\b[^\n]{0,200}?\bexec:"
        r"|pty\.spawn\(\s*[\"']/bin/|socket\.socket\([^\n]{0,300}?(?:os\.dup2|subprocess)",
        False,
        ("/dev/tcp", "nc", "netcat", "mkfifo", "socat", "pty.spawn", "socket.socket"),
    ),
    (
        "crontab_backdoor",
        "installs a cron job that downloads or runs remote code",
        r"\bcrontab\b[^\n]{0,300}?\b(?:curl|wget|nc|ncat|/dev/tcp|base64)\b"
        r"|(?:@reboot|(?:[\d*/,-]+[ \t]+){4}[\d*/,-]+)[ \t][^\n]{0,100}?\b(?:curl|wget)\b[^\n]{0,200}?\|\s*" + _SHELL
        + r"|>>?\s*/etc/cron|>>?\s*/var/spool/cron",
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
        "touches SSH authorized_keys (persistent access)",
        r"authorized_keys",
        False,
        ("authorized_keys",),
    ),
    # --- strict (memory) only --------------------------------------------------------------
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
        r"[\"']?[a-z0-9_\-./+=]{20,}|\bsk-[a-z0-9_-]{20,}|\bgh[pousr]_[a-z0-9]{30,}"
        r"|\bxox[baprs]-[a-z0-9-]{10,}|-----begin [a-z ]*private key-----",
        True,
        ("key", "token", "secret", "passw", "sk-", "gh", "xox"),
    ),
]

_PATTERNS: tuple[_Pattern, ...] = tuple(
    _Pattern(pid, reason, re.compile(rx, re.MULTILINE), strict, triggers)
    for pid, reason, rx, strict, triggers in _RAW
)

# Characters that render as nothing (or reorder text) and can hide instructions.
_ALWAYS_SUSPICIOUS = frozenset(
    [0x200B, 0x2060, 0x2061, 0x2062, 0x2063, 0x2064, 0x180E]
    + list(range(0x202A, 0x202F))
    + list(range(0x2066, 0x206A))
)
_JOINERS = frozenset([0x200C, 0x200D])  # legitimate in emoji and several scripts
_STRIP_ONLY = frozenset([0x00AD, 0x200E, 0x200F, 0x034F])
_BLACK_FLAG = 0x1F3F4
_CANCEL_TAG = 0xE007F


def _is_tag(cp: int) -> bool:
    return 0xE0000 <= cp <= 0xE007F


def _invisible(text: str) -> tuple[Finding | None, str]:
    """Find hidden characters and return (finding, text with invisible characters removed)."""
    if text.isascii():
        return None, text
    finding: Finding | None = None
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        cp = ord(ch)
        if cp == _BLACK_FLAG and i + 1 < n and _is_tag(ord(text[i + 1])):
            j = i + 1
            while j < n and _is_tag(ord(text[j])) and j - i <= 8:
                j += 1
            if ord(text[j - 1]) == _CANCEL_TAG:  # subdivision flag emoji, e.g. England
                out.append(text[i:j])
                i = j
                continue
        if cp in _ALWAYS_SUSPICIOUS or _is_tag(cp) or (cp == 0xFEFF and i > 0):
            finding = finding or Finding(
                f"contains invisible Unicode character U+{cp:04X} that can hide instructions",
                f"invisible_unicode_U+{cp:04X}",
            )
        elif cp in _JOINERS:
            before = text[i - 1] if i > 0 else " "
            after = text[i + 1] if i + 1 < n else " "
            if (before.isascii() and before.isalnum()) or (after.isascii() and after.isalnum()):
                finding = finding or Finding(
                    f"contains invisible Unicode character U+{cp:04X} inside Latin text",
                    f"invisible_unicode_U+{cp:04X}",
                )
        elif cp not in _STRIP_ONLY and cp != 0xFEFF:
            out.append(ch)
        i += 1
    return finding, "".join(out)


def _normalise(text: str) -> tuple[Finding | None, str]:
    text = text[:MAX_SCAN_CHARS]
    finding, visible = _invisible(text)
    if not visible.isascii():
        visible = unicodedata.normalize("NFKC", visible)
    return finding, visible.casefold()


def scan_all(text: str, *, scope: ThreatScope = "strict") -> list[Finding]:
    """Every finding in `text` (invisible characters first, then patterns in table order).

    Only the first `MAX_SCAN_CHARS` characters are examined. Must not raise.
    """
    finding, norm = _normalise(text)
    found = [finding] if finding else []
    for pat in _PATTERNS:
        if pat.strict_only and scope != "strict":
            continue
        if pat.search(norm):
            found.append(Finding(pat.reason, pat.pattern_id))
    return found


def scan(text: str, *, scope: ThreatScope = "strict") -> Finding | None:
    """The first finding in `text`, or None when it looks clean. Must not raise."""
    finding, norm = _normalise(text)
    if finding:
        return finding
    for pat in _PATTERNS:
        if pat.strict_only and scope != "strict":
            continue
        if pat.search(norm):
            return Finding(pat.reason, pat.pattern_id)
    return None
