"""Decompression of record batches in bounded memory: what a broker sends is untrusted, and a
few kilobytes of gzip or zstd can expand to gigabytes (a decompression bomb).

The bound: decoding one partition's fetch decompresses no more than `EXPANSION_LIMIT` (32)
times `max(fetch.message.max.bytes, bytes fetched)` bytes in all; the decoded columns copy what
they keep of it, and lz4 and zstd go through a scratch buffer of the bound's size, so memory stays
within a small multiple of the bound, whatever the data claims. A producer refuses a record
larger than its `max.request.size`, and a batch holds records up to `batch.size` or one larger
record, so a legitimate batch expands to about the fetch size a consumer needs to read it at
all; 32 times leaves room for producers that allow larger requests than consumers fetch. A
batch that would go past what is left of the bound is left for the next fetch (which starts at
it, with the whole bound); one that alone goes past the whole bound is refused as corrupt.

Every codec is read up to the bound and no further: gzip by zlib with a cap on its output,
snappy by the length each block declares (which the decompressor then holds it to), lz4 and
zstd by cramjam into a buffer of the bound's size (lazily mapped memory, kept per thread, so
only the pages written cost anything).
"""

from __future__ import annotations

import mmap
import struct
import threading
import zlib

try:
    import cramjam
except ImportError:  # aiokafka's codecs say what to install when a batch needs it
    cramjam = None  # type: ignore[assignment]

EXPANSION_LIMIT = 32
DEFAULT_FETCH_BYTES = 1 << 20  # fetch.message.max.bytes where the caller does not say
GZIP, SNAPPY, LZ4, ZSTD = 1, 2, 3, 4
_GZIP_WINDOW = 16 + zlib.MAX_WBITS  # a gzip header and trailer around deflate
_XERIAL_HEADER = b"\x82SNAPPY\x00"
_XERIAL_PREAMBLE = 16  # the header, then a version and a compatible version (int32 each)
_BLOCK_LENGTH = struct.Struct(">i")
_RELEASE_ABOVE = 1 << 20  # scratch pages past this are given back after use


class ExpandsTooFar(Exception):
    """The payload expands past the limit it was given."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"it expands past {limit} bytes")


def expansion_bound(fetch_bytes: int, fetched: int) -> int:
    """The decompressed bytes one partition's fetch may hold (see the module docstring)."""
    return EXPANSION_LIMIT * max(fetch_bytes, fetched)


def expand(codec: int, payload: bytes | memoryview, limit: int) -> bytes:
    """The payload decompressed, if it expands to `limit` bytes or fewer; else `ExpandsTooFar`.
    Corrupt data raises the codec library's own error; `codec` is one of `CODECS`."""
    return _EXPANDERS[codec](payload, limit)


def _gunzip(payload: bytes | memoryview, limit: int) -> bytes:
    """Every gzip member in turn (as `gzip.GzipFile` reads them), zero padding after them
    skipped; CRC and size trailers checked by zlib."""
    parts = []
    room = limit
    rest = bytes(payload)
    while rest:
        member = zlib.decompressobj(_GZIP_WINDOW)
        part = member.decompress(rest, room + 1)
        if len(part) > room:
            raise ExpandsTooFar(limit)
        if not member.eof:
            raise zlib.error("the gzip data ends inside a member")
        parts.append(part)
        room -= len(part)
        rest = member.unused_data.lstrip(b"\x00")
    return b"".join(parts)


def _unsnappy(payload: bytes | memoryview, limit: int) -> bytes:
    """Raw snappy, or the xerial framing Java's producer writes: blocks of raw snappy, each
    after its length. A raw block starts with the length it expands to."""
    payload = memoryview(payload)
    if bytes(payload[:len(_XERIAL_HEADER)]) != _XERIAL_HEADER or len(payload) <= _XERIAL_PREAMBLE:
        return _raw_snappy(payload, limit)
    parts = []
    room = limit
    position = _XERIAL_PREAMBLE
    while position < len(payload):
        if len(payload) - position < _BLOCK_LENGTH.size:
            raise ValueError("a snappy block length is cut short")
        (length,) = _BLOCK_LENGTH.unpack_from(payload, position)
        position += _BLOCK_LENGTH.size
        if not 0 <= length <= len(payload) - position:
            raise ValueError(f"a snappy block of {length} bytes, with "
                             f"{len(payload) - position} left")
        part = _raw_snappy(payload[position:position + length], room)
        parts.append(part)
        room -= len(part)
        position += length
    return b"".join(parts)


def _raw_snappy(block: memoryview, limit: int) -> bytes:
    if cramjam.snappy.decompress_raw_len(block) > limit:
        raise ExpandsTooFar(limit)
    return bytes(cramjam.snappy.decompress_raw(block))


class _Scratch(threading.local):
    """A thread's output buffer for lz4 and zstd: mapped memory of the largest limit asked
    for, written from its start."""

    buffer: mmap.mmap | None = None

    def at_least(self, size: int) -> mmap.mmap:
        if self.buffer is None or len(self.buffer) < size:
            self.buffer = mmap.mmap(-1, size)
        return self.buffer


_scratch = _Scratch()


def _into_scratch(decompress_into, payload: bytes | memoryview, limit: int) -> bytes:
    """A cramjam `decompress_into`, bounded: the output buffer is one byte over the limit, so
    a payload that fills it expands too far (cramjam stops at its end, "failed to write whole
    buffer")."""
    scratch = _scratch.at_least(limit + 1)
    written = limit + 1
    try:
        with memoryview(scratch) as view:
            try:
                written = decompress_into(payload, view[:limit + 1])
            except cramjam.DecompressionError as exc:
                if "write whole buffer" in str(exc):
                    raise ExpandsTooFar(limit) from None
                raise
            if written > limit:
                raise ExpandsTooFar(limit)
            return bytes(view[:written])
    finally:
        if written > _RELEASE_ABOVE:
            scratch.madvise(mmap.MADV_DONTNEED)


def _lz4(payload: bytes | memoryview, limit: int) -> bytes:
    return _into_scratch(cramjam.lz4.decompress_into, payload, limit)


def _zstd(payload: bytes | memoryview, limit: int) -> bytes:
    return _into_scratch(cramjam.zstd.decompress_into, payload, limit)


_EXPANDERS = {GZIP: _gunzip, SNAPPY: _unsnappy, LZ4: _lz4, ZSTD: _zstd}
CODECS = frozenset(_EXPANDERS)
