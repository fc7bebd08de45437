"""Java's `String.hashCode`, which orders partitions in the reference's round-robin assignment."""

from __future__ import annotations


def java_string_hash(text: str) -> int:
    """s[0]*31^(n-1) + ... + s[n-1] over UTF-16 code units, as a signed 32-bit int."""
    units = text.encode("utf-16-be")
    value = 0
    for i in range(0, len(units), 2):
        value = (value * 31 + ((units[i] << 8) | units[i + 1])) & 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value
