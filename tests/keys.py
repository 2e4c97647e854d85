"""Keys the tests sign with: made in memory, never written to the checkout."""

from __future__ import annotations

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey


def signing_key_pem(key: Ed25519PrivateKey | None = None) -> str:
    """An Ed25519 private key's PEM text, as ``openssl genpkey -algorithm ed25519`` writes it."""
    key = key or Ed25519PrivateKey.generate()
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
