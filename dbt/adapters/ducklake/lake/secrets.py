"""Catalog passwords: found in a catalog string (or given apart from it), and kept out of
everything printed.

A catalog string can carry a password in two places: the user part of a URL
(``postgresql+psycopg://alice:S3cret@host/db``) or the ``password`` keyword of a libpq string
(``postgres:dbname=lake password='S3 cret'``). The string itself goes to ``dbt debug``, error
messages, logs and dbt's usage tracking, so every place that prints it prints
:func:`mask_catalog` instead. Passwords this process has seen are also remembered, so that a
driver's message quoting one (it should not, but it is not ours) is redacted before we repeat
it (:func:`redact`).

The masking is lenient on purpose: it must hide the password of a string that does not parse
(an unterminated quote, a space in an unquoted password), so it reads as far as it can and
masks generously rather than failing.
"""

from __future__ import annotations

import re
import threading
from urllib.parse import quote, quote_plus, unquote

MASK = "***"

# libpq's connection keywords (PostgreSQL 17), to find where an unquoted value ends when the
# string does not parse: a password with a space runs on to the next ``keyword=``.
LIBPQ_KEYWORDS = frozenset("""
    host hostaddr port dbname user password passfile require_auth channel_binding
    connect_timeout client_encoding options application_name fallback_application_name
    keepalives keepalives_idle keepalives_interval keepalives_count tcp_user_timeout
    replication gssencmode sslmode sslnegotiation requiressl sslcompression sslcert sslkey
    sslkeylogfile sslpassword sslcertmode sslrootcert sslcrl sslcrldir sslsni requirepeer
    ssl_min_protocol_version ssl_max_protocol_version min_protocol_version
    max_protocol_version krbsrvname gsslib gssdelegation service target_session_attrs
    load_balance_hosts scram_client_key scram_server_key
""".split())
SECRET_KEYWORDS = ("password", "sslpassword")

# A password in a URL's query (``?password=...``); its value runs to the next ``&``.
_QUERY_SECRET = r"([?&](?:ssl)?password=)[^&]*"

_known: set[str] = set()
_known_lock = threading.Lock()


# Shorter passwords are not searched for in messages: replacing every "ab" would garble
# every error. Where the catalog string is shown, they are masked like any other.
MIN_REDACTED = 4


def remember(secret: str | None) -> None:
    """Note a password this process uses, so that :func:`redact` hides it in any message."""
    if secret and len(secret) >= MIN_REDACTED:
        with _known_lock:
            _known.add(secret)


def redact(text: str) -> str:
    """``text`` with every password this process has seen replaced by ``***``, as written and
    as a URL would encode it."""
    with _known_lock:
        secrets = sorted(_known, key=len, reverse=True)
    for secret in secrets:
        for form in {secret, quote(secret, safe=""), quote_plus(secret, safe="")}:
            text = text.replace(form, MASK)
    return text


def mask_catalog(catalog: str) -> str:
    """The catalog string as it may be printed: every password replaced by ``***``.

    Never fails: a string that cannot be parsed is masked from the ``password`` keyword (or
    the URL's ``user:``) on, generously.
    """
    text = re.sub(_QUERY_SECRET, _mask_query_value, catalog, flags=re.IGNORECASE)
    if "://" in text:
        return _mask_url(text)
    if "=" in text:
        return mask_conninfo(text)
    if "@" in text:  # user:password@host with no scheme: mask all before the last @
        head, at = text[: text.rfind("@")], text.rfind("@")
        remember(head.partition(":")[2])
        return head.partition(":")[0] + ":" + MASK + text[at:]
    return text


def _mask_query_value(match: re.Match[str]) -> str:
    """A URL query's ``password=value`` masked (the value runs to the next ``&``)."""
    value = match.group(0)[len(match.group(1)):]
    remember(value)
    remember(unquote(value))
    return match.group(1) + MASK


def split_url(text: str) -> tuple[str, str | None, str | None, str]:
    """``(scheme, user, password, rest)`` of ``scheme://user:password@rest``, user and password
    as written (still percent-encoded).

    The user part ends at the *last* ``@``: a password may hold ``@``, ``:``, ``/`` and ``%``
    unencoded, which SQLAlchemy's own parser splits in the wrong place.
    """
    scheme, _, rest = text.partition("://")
    # an @ inside a query's password=... is not the user part's end
    blanked = re.sub(_QUERY_SECRET, lambda m: m.group(1) + "_" * (m.end() - m.end(1)), rest,
                     flags=re.IGNORECASE)
    at = blanked.rfind("@")
    if at < 0:
        return scheme, None, None, rest
    user, colon, password = rest[:at].partition(":")
    return scheme, user, password if colon else None, rest[at + 1:]


def decode_url_part(text: str) -> str:
    """A URL's user or password: percent-escapes decoded as SQLAlchemy decodes them (``%40`` is
    ``@``), unless some ``%`` starts no escape; then the text is taken as written."""
    if re.fullmatch(r"(?:[^%]|%[0-9A-Fa-f]{2})*", text):
        return unquote(text)
    return text


def _mask_url(text: str) -> str:
    scheme, user, password, rest = split_url(text)
    if password is not None:
        remember(password)
        remember(decode_url_part(password))
        user = f"{user}:{MASK}"
    userinfo = f"{user}@" if user is not None else ""
    return f"{scheme}://{userinfo}{rest}"


def mask_conninfo(text: str) -> str:
    """A libpq ``keyword=value`` string (or ``postgres:`` + one) with secret values masked.

    Values are read as libpq reads them (single quotes, backslash escapes); an unquoted
    secret value runs on to the next ``keyword=`` or the end, so a password with an unquoted
    space is masked whole, and an unterminated quote masks the rest of the string.
    """
    out, i = [], 0
    for value_start in _secret_values(text):
        end = _value_end(text, value_start)
        remember(text[value_start:end])
        out.append(text[i:value_start] + MASK)
        i = end
    out.append(text[i:])
    return "".join(out)


def _secret_values(text: str) -> list[int]:
    """Where the value of each ``password=`` / ``sslpassword=`` in ``text`` starts."""
    pattern = r"(?:^|(?<=[\s:]))(?:" + "|".join(SECRET_KEYWORDS) + r")\s*=\s*"
    return [match.end() for match in re.finditer(pattern, text, flags=re.IGNORECASE)]


def _value_end(text: str, start: int) -> int:
    """Where the value starting at ``start`` ends (exclusive)."""
    if text.startswith("'", start):
        i = start + 1
        while i < len(text):
            if text[i] == "\\":
                i += 2
                continue
            if text[i] == "'":
                return i + 1
            i += 1
        return len(text)  # unterminated: all of the rest may be the password
    following = re.search(r"\s+(" + "|".join(sorted(LIBPQ_KEYWORDS)) + r")\s*=", text[start:],
                          flags=re.IGNORECASE)
    return start + following.start() if following else len(text)


def scrub_quoted(message: str, masked: str) -> str:
    """A libpq parse error with every quoted fragment that the masked string does not show
    replaced: libpq quotes the words it could not read (``missing "=" after "cret"``), which
    may be pieces of a password."""
    def keep(match: re.Match[str]) -> str:
        fragment = match.group(1)
        return match.group(0) if fragment and fragment in masked.replace(MASK, "\0") \
            else f'"{MASK}"'

    return re.sub(r'"([^"]*)"', keep, redact(message))


__all__ = ["MASK", "decode_url_part", "mask_catalog", "mask_conninfo", "redact", "remember",
           "scrub_quoted", "split_url"]
