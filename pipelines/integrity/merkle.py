"""A Merkle root over a set of leaves (hex SHA-256 digests): the leaves sorted, so the root depends on
which rows there are, not on the order a scan returns them. Leaves and inner nodes are hashed apart
(RFC 6962's 0x00 and 0x01 prefixes), so a leaf can never pass for a node; an odd node moves up as is."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

EMPTY = hashlib.sha256(b"").hexdigest()


def root(leaves: Iterable[str]) -> str:
    level = [hashlib.sha256(b"\x00" + bytes.fromhex(leaf)).digest() for leaf in sorted(leaves)]
    if not level:
        return EMPTY
    while len(level) > 1:
        paired = [hashlib.sha256(b"\x01" + level[i] + level[i + 1]).digest() for i in range(0, len(level) - 1, 2)]
        if len(level) % 2:
            paired.append(level[-1])
        level = paired
    return level[0].hex()
