"""What of an artifact or of run metadata may reach a trace: an allowlist, never content.

An artifact is meant to hold ``stop``, ``reason`` and a few small scalars, but a tool can
put anything in it. Before any artifact reaches a trace (run metadata, inputs or outputs)
it passes :func:`sanitize_artifact`, which keeps only small scalars under plain keys and
drops every field whose key looks like a credential or personal data, or whose value looks
like a secret (an API key, a bearer token, an email address, a card number...).
:func:`scrub_metadata` applies the same key and value checks to run metadata.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from langsmith.anonymizer import DEFAULT_SECRET_RULES

MAX_FIELDS = 16
"""Most fields a sanitized artifact keeps (``stop`` and ``reason`` first)."""

MAX_STRING_CHARS = 64
"""Longest string value a sanitized artifact keeps."""

MCP_FIELD = "structured_content"
"""Where langchain-mcp-adapters puts an MCP result's structured content in the artifact."""

_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,39}$")
"""A plain identifier: anything else could itself carry data."""

SENSITIVE_WORDS: frozenset[str] = frozenset(
    {
        "key",
        "apikey",
        "token",
        "secret",
        "password",
        "passwd",
        "pwd",
        "passphrase",
        "auth",
        "authorization",
        "credential",
        "credentials",
        "cookie",
        "bearer",
        "jwt",
        "signature",
        "private",
        "email",
        "mail",
        "phone",
        "mobile",
        "ssn",
        "card",
        "iban",
        "cvv",
        "cvc",
        "pin",
        "dob",
        "birthdate",
        "address",
    }
)
"""Words that make a key sensitive, matched per word (``api_key`` yes, ``input_tokens`` no)."""

# Every alternative is linear in the text it is searched over: a fixed-length tail
# (``{6}``, not ``{6,}``: one match is enough) and no run that another start could rescan.
# An email or a URL's credentials are found from their ``@`` or ``://``, never from a
# leading run (``[A-Za-z0-9._%+-]+@`` restarts at every letter of "aaaa..." and is
# quadratic). A JWT is found by :func:`_has_jwt`, which needs one pass per run.
_SECRET_VALUE = re.compile(
    r"""
      \b(?:sk|pk|rk)[-_][A-Za-z0-9_-]{6}         # sk-..., sk_live_..., pk_...
    | \bgsk_[A-Za-z0-9]{6}                       # Groq
    | \blsv2_[A-Za-z0-9_]{6}                     # LangSmith
    | \b(?:ghp|gho|ghu|ghs|ghr|github_pat)_[A-Za-z0-9_]{6}
    | \bxox[abprs]-[A-Za-z0-9-]{6}               # Slack
    | \bAKIA[0-9A-Z]{12}                         # AWS access key id
    | \bAIza[0-9A-Za-z_-]{10}                    # Google API key
    | \bBearer\s+\S
    | -----BEGIN[ A-Z]*PRIVATE\ KEY-----
    | [A-Za-z0-9+.-]://[^/\s:@]+:[^/\s@]+@         # credentials in a URL
    | [A-Za-z0-9._%+-]@[A-Za-z0-9.-]+\.[A-Za-z]{2}  # email address
    | \b\d{3}-\d{2}-\d{4}\b                       # US SSN
    | ^\s*(?:\d[ -]?){12,18}\d\s*$                # a card number, and nothing else
    """,
    re.VERBOSE,
)

LANGSMITH_RULES_LEFT_OUT = (
    r"eyJ[",  # a JWT: rescans an unclosed run from every ``eyJ``; see _has_jwt
    r"-----BEGIN (",  # a whole PEM block: lazy scan to an END that may never come
    r"\b([A-Za-z0-9_.-]*(",  # NAME=value: a leading run restarted at every letter
    r"\b([a-z][a-z0-9+.-]*://",  # URL credentials: the same; found from ``://`` above
)
"""Prefixes of ``langsmith.anonymizer.DEFAULT_SECRET_RULES`` patterns not used here: each is
quadratic on some input a caller can send. :data:`_SECRET_VALUE` covers what they find."""

LANGSMITH_SECRETS = re.compile(
    "|".join(
        f"(?i:{rule['pattern'].pattern})"
        if rule["pattern"].flags & re.IGNORECASE
        else f"(?:{rule['pattern'].pattern})"
        for rule in DEFAULT_SECRET_RULES
        if not rule["pattern"].pattern.startswith(LANGSMITH_RULES_LEFT_OUT)
    )
)
"""langsmith's own secret rules (keys of OpenAI, Anthropic, AWS, GitHub, Slack, Stripe,
npm, PyPI, SendGrid...), minus :data:`LANGSMITH_RULES_LEFT_OUT`: each is a literal prefix
and one run, so a search is linear. ``tests/unit_tests/test_linear_time.py`` holds them to it."""

_JWT_HEADER = re.compile(r"(?<![A-Za-z0-9_-])[A-Za-z0-9_-]+(?=\.[A-Za-z0-9_-]{5})")
"""A whole base64url run followed by ``.`` and five more: where a JWT's header can be."""
_JWT_MIN_HEADER = 8
"""``eyJ`` and at least five more characters before the first ``.``."""


def _has_jwt(value: str) -> bool:
    """Return True when ``eyJ...`` (5+ more) ``.`` (5+ more) occurs, as a JWT starts.

    The header starts at a run's start or after a ``-`` inside it (a word boundary). The
    runs are maximal and disjoint and each is read once, so this is linear in ``value``
    however many ``eyJ`` one run holds.
    """
    for match in _JWT_HEADER.finditer(value):
        run = match[0]
        if run.startswith("eyJ"):
            at = 0
        else:
            dash = run.find("-eyJ")
            if dash < 0:
                continue
            at = dash + 1
        if len(run) - at >= _JWT_MIN_HEADER:
            return True
    return False


_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")


def key_words(key: str) -> list[str]:
    """Split a key into lower-case words (``apiKey``, ``API_KEY`` and ``api-key`` alike)."""
    return [word.lower() for word in _WORDS.findall(key)]


def is_sensitive_key(key: str) -> bool:
    """Return True when a key looks like it names a credential or personal data.

    Args:
        key: A dict key or metadata name.

    Returns:
        Whether any of its words (or the whole key, lower-cased and without separators) is
        in :data:`SENSITIVE_WORDS`.
    """
    words = key_words(key)
    joined = "".join(words)
    return joined in SENSITIVE_WORDS or any(word in SENSITIVE_WORDS for word in words)


def looks_secret(value: str) -> bool:
    """Return True when a string looks like a credential or personal data.

    Args:
        value: Any string.

    Returns:
        Whether it contains an API-key prefix (this module's or one of langsmith's
        ``DEFAULT_SECRET_RULES``), a bearer token, a JWT, a private key, a URL with a
        password, an email address, an SSN or a card-like digit run.
    """
    return (
        _SECRET_VALUE.search(value) is not None
        or LANGSMITH_SECRETS.search(value) is not None
        or _has_jwt(value)
    )


def _small_scalar(value: object) -> bool:
    if value is None or isinstance(value, bool | int):
        return True
    if isinstance(value, float):
        return value == value and abs(value) != float("inf")  # JSON has no NaN/inf
    return isinstance(value, str) and len(value) <= MAX_STRING_CHARS and not looks_secret(value)


def sanitize_artifact(artifact: object) -> dict[str, Any] | None:
    """Return the part of an artifact that may reach a trace.

    Keeps ``stop`` and ``reason`` first, then other fields in order, each only if its key is
    a plain identifier that does not look sensitive (and is not ``not_done``, a line of
    content) and its value is a small scalar (None,
    bool, int, finite float, or a string of at most :data:`MAX_STRING_CHARS` characters
    that does not look like a secret), up to :data:`MAX_FIELDS` fields. It does not
    validate the contract: ``{"stop": "false"}`` stays visible, which shows why a step
    was judged ``invalid_artifact``.

    Args:
        artifact: Whatever a ToolMessage carried (an MCP tool's is read one level down).

    Returns:
        A new dict (the input is never changed), or None when the artifact is not a dict.
    """
    if isinstance(artifact, Mapping) and list(artifact) == [MCP_FIELD]:
        artifact = artifact[MCP_FIELD]  # an MCP tool's: the server's structured result
    if not isinstance(artifact, Mapping):
        return None
    ordered = [k for k in ("stop", "reason") if k in artifact]
    ordered += [k for k in artifact if k not in ("stop", "reason")]
    kept: dict[str, Any] = {}
    for key in ordered:
        if len(kept) >= MAX_FIELDS:
            break
        value = artifact[key]
        if not isinstance(key, str) or not _KEY.match(key) or is_sensitive_key(key):
            continue
        if key == "not_done":  # the artifact's not-done line (fatal(not_done=...))
            continue  # a line written for a person, with caller text: content, not metadata
        if _small_scalar(value):
            kept[key] = value
    return kept


def scrub_metadata(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """Drop metadata entries whose key looks sensitive or whose string value looks secret.

    Used as the trace client's ``hide_metadata`` whether or not content is redacted, so
    metadata is the same in both modes. Other values are kept as they are: the stop
    metadata this project adds is already sanitized.

    Args:
        metadata: A run's metadata, as the langsmith client hands it over.

    Returns:
        A new dict; the input is never changed.
    """
    return {
        key: value
        for key, value in metadata.items()
        if not (isinstance(key, str) and is_sensitive_key(key))
        and not (isinstance(value, str) and looks_secret(value))
    }
