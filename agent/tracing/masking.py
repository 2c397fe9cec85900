"""Masking secret-shaped substrings in text that is kept (``AGENT_REDACT_TRACES=secrets``).

:func:`mask_secrets` keeps a string as it is except what looks like a credential, which
becomes :data:`MASK`:

- API keys by their prefix: ``sk-``/``sk_``/``pk_``/``rk_`` (OpenAI, Anthropic, Stripe),
  ``gsk_`` (Groq), ``lsv2_`` (LangSmith), ``ghp_``/``github_pat_`` (GitHub), ``xox?-``
  (Slack), ``AKIA...`` (AWS), ``AIza...`` (Google), and the rest of langsmith's own
  ``DEFAULT_SECRET_RULES`` that are linear (:data:`agent.tracing.allowlist.LANGSMITH_SECRETS`);
- the token after ``Bearer`` or ``Basic`` (the word stays);
- JSON Web Tokens (``eyJ...`` ``.`` ``...`` ``.`` ``...``);
- the value after ``password``, ``passwd``, ``pwd``, ``secret``, ``token``, ``api_key``
  (``apikey``, ``api-key``) and ``=`` or ``:`` (the name stays);
- the password of a URL (``scheme://user:[redacted]@host``);
- card numbers: 13 to 19 digits, alone or in groups of four (or 4-6-5), that pass the
  Luhn check (a timestamp or an order number usually does not);
- private-key blocks (``-----BEGIN ... PRIVATE KEY-----`` to their ``END`` line).

Everything else stays: words, numbers, e-mail addresses (personal data, not a secret: use
full redaction when they must not leave). Every pattern is a literal start and one bounded
or disjoint run, never a nested quantifier, so a search is linear in the text; 1 MB of the
worst input for each takes milliseconds (``tests/unit_tests/test_linear_time.py``).
"""

from __future__ import annotations

import re

from agent.tracing.allowlist import LANGSMITH_SECRETS

MASK = "[redacted]"
"""What replaces a secret-shaped substring."""

_TOKEN = r"[A-Za-z0-9_-]"
_SECRETS = re.compile(
    rf"""
      (?P<key>\b(?:sk|pk|rk)[-_]{_TOKEN}{{6,}}
        | \bgsk_{_TOKEN}{{6,}}
        | \blsv2_{_TOKEN}{{6,}}
        | \b(?:ghp|gho|ghu|ghs|ghr|github_pat)_{_TOKEN}{{6,}}
        | \bxox[abprs]-[A-Za-z0-9-]{{6,}}
        | \bAKIA[0-9A-Z]{{16}}
        | \bAIza[0-9A-Za-z_-]{{35}})
    | (?P<scheme>\b(?:[Bb]earer|BEARER|[Bb]asic|BASIC)[ \t]{{1,8}})
      (?P<token>[A-Za-z0-9._~+/=-]{{6,}})
    | (?P<jwt>(?<![A-Za-z0-9_.-])eyJ{_TOKEN}{{5,}}\.{_TOKEN}{{5,}}\.{_TOKEN}*)
    | (?P<name>(?i:\b(?:password|passwd|pwd|secret|token|api[_-]?key))
        ["']?[ \t]{{0,3}}[:=][ \t]{{0,3}}["']?)
      (?P<value>[^\s"',;&]{{1,256}})
    | (?P<userinfo>(?<=://)[^/\s:@]{{1,256}}:)(?P<password>[^/\s@]{{1,256}})(?=@)
    | (?P<card>(?<![0-9])(?:[0-9]{{13,19}}
        | [0-9]{{4}}[ -][0-9]{{4}}[ -][0-9]{{4}}[ -][0-9]{{4}}[ -][0-9]{{3}}
        | [0-9]{{4}}[ -][0-9]{{4}}[ -][0-9]{{4}}[ -][0-9]{{1,4}}
        | [0-9]{{4}}[ -][0-9]{{6}}[ -][0-9]{{4,5}})(?![0-9]))
    """,
    re.VERBOSE,
)
"""One pass over the text. Each alternative starts at a literal (a key prefix, a scheme,
``eyJ`` after a non-token character, a name, ``://``, a digit after a non-digit) and reads
one run, bounded or followed by a character the run cannot hold."""

_PEM_BEGIN = re.compile(r"-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY[A-Z ]{0,8}-----")
_PEM_END = "-----END "


def luhn(digits: str) -> bool:
    """Return True when a digit string passes the Luhn check that card numbers carry."""
    total = 0
    for index, char in enumerate(reversed(digits)):
        value = ord(char) - 48
        if index % 2:
            value = value * 2 - 9 if value > 4 else value * 2
        total += value
    return total % 10 == 0


def _replace(match: re.Match[str]) -> str:
    if match["key"] is not None or match["jwt"] is not None:
        return MASK
    if match["scheme"] is not None:
        return match["scheme"] + MASK
    if match["name"] is not None:
        return match["name"] + MASK
    if match["userinfo"] is not None:
        return match["userinfo"] + MASK
    card = match["card"]
    digits = card.replace(" ", "").replace("-", "")
    return MASK if 13 <= len(digits) <= 19 and luhn(digits) else card


def _mask_private_keys(text: str) -> str:
    """Mask each private-key block up to its ``END`` line (to the end if it has none)."""
    if "PRIVATE KEY" not in text:
        return text
    pieces: list[str] = []
    at = 0
    for begin in _PEM_BEGIN.finditer(text):
        if begin.start() < at:
            continue  # inside a block already masked
        end = text.find(_PEM_END, begin.end())
        close = len(text) if end < 0 else text.find("-----", end + len(_PEM_END))
        stop = len(text) if close < 0 else close + len("-----")
        pieces += [text[at : begin.start()], MASK]
        at = stop
        if end < 0 or close < 0:
            break
    pieces.append(text[at:])
    return "".join(pieces)


def mask_secrets(text: str) -> str:
    """Return ``text`` with every secret-shaped substring replaced by :data:`MASK`.

    Args:
        text: Any string (a message, a tool argument, an error).

    Returns:
        The same string when nothing looked secret; else a new one, everything but the
        secrets kept. Linear in the length of ``text``.
    """
    if not text:
        return text
    masked = _SECRETS.sub(_replace, _mask_private_keys(text))
    return LANGSMITH_SECRETS.sub(MASK, masked)
