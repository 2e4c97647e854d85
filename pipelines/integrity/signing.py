"""The digests' signing key: Ed25519, as ``openssl genpkey -algorithm ed25519`` writes it (PKCS#8 PEM).

The private key reaches the product only through the environment variable ``integrity.signing_key_env``
names (its PEM text; newlines may have become spaces, as a Makefile or a secrets manager pass it). The
public key is what an auditor holds: ``auditlake verify --public-key FILE``. A digest names the key that
signed it by its fingerprint, so a digest signed with another key is told apart from a forged one.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
from pathlib import Path

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

PRIVATE_FILE = "auditlake-signing.pem"
PUBLIC_FILE = "auditlake-signing.pub.pem"
_PEM = re.compile(r"-----BEGIN ([A-Z ]+)-----(.*?)-----END \1-----", re.S)


class KeyProblem(ValueError):
    """The text given is not an Ed25519 key of the kind asked for: the message says what it is."""


def _pem(text: str) -> bytes:
    """PEM text with its line breaks put back (a value whose newlines became spaces still loads)."""
    match = _PEM.search(text)
    if not match:
        raise KeyProblem("not a PEM key (no -----BEGIN ...----- line)")
    body = "".join(match.group(2).split())
    lines = [body[i : i + 64] for i in range(0, len(body), 64)]
    return ("\n".join([f"-----BEGIN {match.group(1)}-----", *lines, f"-----END {match.group(1)}-----"]) + "\n").encode()


def _load(text: str, load, wanted: type, what: str):
    """``text``'s PEM loaded by ``load``, which must give a ``wanted`` key (``KeyProblem`` saying what it is
    instead)."""
    pem = _pem(text)
    try:
        key = load(pem)
    except (ValueError, TypeError) as exc:
        raise KeyProblem(f"not a readable {what} ({exc})") from None
    if not isinstance(key, wanted):
        raise KeyProblem(f"a {type(key).__name__.removeprefix('_')} key, not Ed25519")
    return key


def private_key(text: str) -> Ed25519PrivateKey:
    return _load(
        text, lambda pem: serialization.load_pem_private_key(pem, password=None), Ed25519PrivateKey, "private key"
    )


def public_key(text: str) -> Ed25519PublicKey:
    """A public key's PEM text, or a private key's (its public half)."""
    if "PRIVATE KEY" in text:
        return private_key(text).public_key()
    return _load(text, serialization.load_pem_public_key, Ed25519PublicKey, "public key")


def fingerprint(key: Ed25519PublicKey) -> str:
    """``ed25519:`` and the SHA-256 of the raw public key, in hex."""
    raw = key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return "ed25519:" + hashlib.sha256(raw).hexdigest()


def public_pem(key: Ed25519PublicKey) -> str:
    return key.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode()


def sign(key: Ed25519PrivateKey, message: bytes) -> str:
    return base64.b64encode(key.sign(message)).decode()


def signature_holds(key: Ed25519PublicKey, message: bytes, signature: str) -> bool:
    try:
        key.verify(base64.b64decode(signature, validate=True), message)
    except (InvalidSignature, ValueError):
        return False
    return True


def keygen(folder: Path) -> tuple[Path, Path]:
    """A new key pair in ``folder``: the private key owner-only, never over an existing one."""
    folder.mkdir(parents=True, exist_ok=True)
    private, public = folder / PRIVATE_FILE, folder / PUBLIC_FILE
    for path in (private, public):
        if path.exists():
            raise FileExistsError(f"{path} exists: a key is never overwritten (move it away first)")
    key = Ed25519PrivateKey.generate()
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    fd = os.open(private, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(pem)
    public.write_text(public_pem(key.public_key()))
    return private, public
