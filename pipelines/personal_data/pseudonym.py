"""Keyed pseudonyms: what analysts read in place of an e-mail, a name or a network trace.

``pii:`` + the first 16 hex digits of HMAC-SHA-256(key, value). Keyed, so nobody without the key can
find a person's rows by hashing a guessed address (an unkeyed SHA-256 of ``jane.doe@corp.com`` can
be computed by anyone); stable for one key, so the same value reads the same in every table and
joins, distinct counts and group-bys still work. NULL stays NULL.

Spark SQL has no HMAC function: it is built from ``sha2`` on binary values as RFC 2104 defines it,
H((K xor opad) || H((K xor ipad) || m)), with the two padded keys computed here. ``pseudonym`` is the
same in Python; a test holds them equal (and equal to Python's ``hmac``).
"""

from __future__ import annotations

import hashlib
import hmac

PREFIX = "pii:"
HEX_DIGITS = 16  # 64 bits: no two values of one tenant share a pseudonym in practice
BLOCK = 64  # SHA-256's block size in bytes
MIN_KEY_LENGTH = 32  # characters of the secret (e.g. `openssl rand -hex 32` gives 64)


def _padded(key: bytes) -> tuple[bytes, bytes]:
    if len(key) > BLOCK:
        key = hashlib.sha256(key).digest()
    key = key.ljust(BLOCK, b"\0")
    return bytes(b ^ 0x36 for b in key), bytes(b ^ 0x5C for b in key)


def pseudonym(value: str | None, key: bytes) -> str | None:
    """The pseudonym of ``value`` (its text as Spark casts it) under ``key``."""
    if value is None:
        return None
    return PREFIX + hmac.new(key, value.encode("utf-8"), hashlib.sha256).hexdigest()[:HEX_DIGITS]


def pseudonym_sql(expr: str, key: bytes) -> str:
    """Spark SQL for the pseudonym of ``expr`` (any type, cast to text first) under ``key``."""
    inner_pad, outer_pad = _padded(key)
    text = f"encode(CAST({expr} AS STRING), 'UTF-8')"
    inner = f"unhex(sha2(concat(X'{inner_pad.hex()}', {text}), 256))"
    return f"concat('{PREFIX}', substr(sha2(concat(X'{outer_pad.hex()}', {inner}), 256), 1, {HEX_DIGITS}))"
