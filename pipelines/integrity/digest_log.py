"""The digest log: one signed JSON file per refresh, erasure, retention run or hold change, in a folder
written once and never rewritten (``integrity.digest_dir``, local or ``s3a://``; on S3, a bucket with
Object Lock in compliance mode makes that a promise the operator cannot break either).

A digest is named ``<seq>-<kind>.json`` (``seq`` from 1, no gap). Its bytes are its canonical JSON (keys
sorted, no spaces) and a newline; its signature is over the same canonical JSON without the
``signature`` field; the next digest holds the SHA-256 of these bytes, so the digests form a chain.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Callable
from pathlib import Path

from pyspark.sql import SparkSession

from pipelines.lake import storage

FORMAT = "auditlake-digest/1"
NAME = re.compile(r"^(\d{8})-([a-z]+)\.json$")
KINDS = ("refresh", "erasure", "retention", "hold")


def canonical(value: dict) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def unsigned(digest: dict) -> bytes:
    """What the signature is over."""
    return canonical({k: v for k, v in digest.items() if k != "signature"})


def file_bytes(digest: dict) -> bytes:
    return canonical(digest) + b"\n"


def file_name(seq: int, kind: str) -> str:
    return f"{seq:08d}-{kind}.json"


class StoredDigest:
    """A digest in the log; its bytes read when first asked for (a refresh reads only the last one's)."""

    def __init__(self, name: str, seq: int, kind: str, read: Callable[[], bytes]):
        self.name, self.seq, self.kind = name, seq, kind
        self._read = read
        self._raw: bytes | None = None

    @property
    def raw(self) -> bytes:
        if self._raw is None:
            self._raw = self._read()
        return self._raw

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.raw).hexdigest()

    def parsed(self) -> dict | None:
        """The digest, or None when its bytes are not a JSON object."""
        try:
            value = json.loads(self.raw, object_pairs_hook=_no_duplicate_keys)
        except ValueError:  # not JSON, or a key given twice (which value a reader takes is the parser's choice)
            return None
        return value if isinstance(value, dict) else None


def _no_duplicate_keys(pairs: list[tuple[str, object]]) -> dict:
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        raise ValueError("a key given twice")
    return dict(pairs)


class DigestLog:
    """The folder of digests. Local folders are read and written with the OS (no Spark needed: a refresh
    with nothing new writes its digest before Spark would start); ``s3a://`` through Hadoop."""

    def __init__(self, location: str, spark: SparkSession | None = None):
        self.location = location
        self.local = storage.local_path(location)
        self.spark = spark

    def _names(self) -> list[str]:
        if self.local is not None:
            return sorted(os.listdir(self.local)) if os.path.isdir(self.local) else []
        return sorted(name for name, is_dir in storage.list_status(self.spark, self.location) if not is_dir)

    def _read(self, name: str) -> bytes:
        if self.local is not None:
            return Path(self.local, name).read_bytes()
        return storage.read_bytes(self.spark, storage.join(self.location, name))

    def digests(self) -> tuple[list[StoredDigest], list[str]]:
        """The digests in order of their number, and the names in the folder that are not digests."""
        found, strays = [], []
        for name in self._names():
            if name.startswith("."):  # a write a kill interrupted before its link: never a digest
                continue
            match = NAME.match(name)
            if match is None:
                strays.append(name)
                continue
            found.append(StoredDigest(name, int(match.group(1)), match.group(2), lambda n=name: self._read(n)))
        return sorted(found, key=lambda d: (d.seq, d.name)), strays

    def write_new(self, name: str, data: bytes) -> str:
        """Write a digest that must not exist yet (FileExistsError if it does): never over another."""
        if self.local is not None:
            os.makedirs(self.local, exist_ok=True)
            path = os.path.join(self.local, name)
            tmp = os.path.join(self.local, f".{name}.tmp")
            with open(tmp, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            try:
                os.link(tmp, path)  # fails if the name exists: no digest is ever replaced
            finally:
                os.unlink(tmp)
            return path
        location = storage.join(self.location, name)
        storage.create_new(self.spark, location, data)
        return location
