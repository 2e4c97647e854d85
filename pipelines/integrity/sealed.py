"""States a run writes down to finish later (a pending erasure), sealed with the lake's signing key.

Whoever can write the lake's folders could otherwise plant such a state and have the next routine run
finish it and sign the result as lawful. A state is sealed by the run that writes it (an Ed25519
signature over its canonical JSON, with the key's fingerprint) and unsealed only when that signature
holds under the configured key: anything else is not this lake's, and is never finished.
"""

from __future__ import annotations

import json

from pipelines.config.load import Config, secret
from pipelines.integrity.signing import fingerprint, private_key, sign, signature_holds

SEAL_FIELDS = ("state", "signature", "key")


def canonical(state: dict) -> bytes:
    """The bytes a seal signs: sorted keys, no spaces, ASCII."""
    return json.dumps(state, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


def seal(cfg: Config, state: dict) -> dict:
    """``state`` with its signature. With ``integrity.enabled`` off there is no key: the state is kept
    unsealed (the lake promises no trail then)."""
    if not cfg.settings.integrity.enabled:
        return {"state": state}
    key = private_key(secret(cfg, "integrity.signing_key_env"))
    return {"state": state, "signature": sign(key, canonical(state)), "key": fingerprint(key.public_key())}


class NotSealed(ValueError):
    """A state that is not this lake's: the message says why."""


def unseal(cfg: Config, sealed: object) -> dict:
    """The state, when its seal holds under the configured key; ``NotSealed`` otherwise."""
    if not isinstance(sealed, dict) or not isinstance(sealed.get("state"), dict) or set(sealed) - set(SEAL_FIELDS):
        raise NotSealed("not a sealed state (no state and signature)")
    if not cfg.settings.integrity.enabled:
        return sealed["state"]
    key = private_key(secret(cfg, "integrity.signing_key_env")).public_key()
    signature = sealed.get("signature")
    if not isinstance(signature, str):
        raise NotSealed("no signature")
    if sealed.get("key") != fingerprint(key):
        raise NotSealed(f"sealed by another key ({sealed.get('key')})")
    if not signature_holds(key, canonical(sealed["state"]), signature):
        raise NotSealed("its signature does not hold: it was changed after it was sealed")
    return sealed["state"]
