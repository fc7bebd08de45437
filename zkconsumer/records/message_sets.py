"""Message formats v0 and v1 (legacy message sets): the one case aiokafka's reader refuses.

`decoding.decode_records` reads every format with aiokafka's compiled reader, except
LZ4-compressed messages in format v0: brokers 0.8 and 0.9 framed LZ4 with a wrong header checksum
(KAFKA-3160), and aiokafka declines that framing outright. Here the checksum is put right (as
kafka-python's codec does) and the frame decompressed within a bound, like every other codec
(`zkconsumer.records.decompression`); what it unpacks is an ordinary message set of uncompressed v0
messages with absolute offsets, which the common reader then decodes like any other.
Pure: bytes in, bytes out.
"""

from __future__ import annotations

import struct
import zlib

from zkconsumer.errors import ZkConsumerError
from zkconsumer.records.decompression import LZ4, ExpandsTooFar, expand

try:
    import xxhash
except ImportError:  # only the 0.8/0.9 brokers' LZ4 framing needs it
    xxhash = None  # type: ignore[assignment]

# offset, message size, crc, magic, attributes, key length
_V0_HEAD = struct.Struct(">qiIbbi")
_INT = struct.Struct(">i")
_CRC_COVERS_FROM = 16  # the magic byte on
_LZ4_DESCRIPTOR_AT = 4  # after the frame's magic number
_LZ4_CONTENT_SIZE_FLAG = 0x08


class CorruptMessageError(ZkConsumerError):
    """Records failed their CRC check, could not be decompressed or are in no known format."""


def unwrap_old_lz4(wrapper: bytes, topic: str, partition: int, check_crc: bool, limit: int
                   ) -> tuple[int, bytes]:
    """The offset of a format-v0 message compressed with the 0.8/0.9 brokers' LZ4, and the
    message set inside it; `ExpandsTooFar` if that is over `limit` bytes."""
    offset, _, crc, _, _, key_length = _V0_HEAD.unpack_from(wrapper)
    if check_crc and zlib.crc32(memoryview(wrapper)[_CRC_COVERS_FROM:]) != crc:
        raise CorruptMessageError(
            f"the message at offset {offset} of {topic}-{partition} fails its CRC check")
    cursor = _V0_HEAD.size + max(key_length, 0)
    value_length = -1
    if key_length >= -1 and cursor + _INT.size <= len(wrapper):
        (value_length,) = _INT.unpack_from(wrapper, cursor)
        cursor += _INT.size
    if value_length < 0 or cursor + value_length > len(wrapper):
        raise CorruptMessageError(f"the compressed message at offset {offset} of "
                                  f"{topic}-{partition} has no valid payload")
    if xxhash is None:
        raise CorruptMessageError(f"the message at offset {offset} of {topic}-{partition} is "
                                  "compressed with the lz4 framing of brokers 0.8/0.9, which "
                                  "needs xxhash (pip install xxhash)")
    try:
        return offset, expand(LZ4, _with_right_header_checksum(
            wrapper[cursor:cursor + value_length]), limit)
    except ExpandsTooFar:
        raise
    except Exception as exc:  # the lz4 library raises its own error types
        raise CorruptMessageError(f"cannot decompress the message at offset {offset} of "
                                  f"{topic}-{partition}: {exc}") from exc



def _with_right_header_checksum(frame: bytes) -> bytes:
    """The LZ4 frame with the checksum of its descriptor put right: the second byte of the
    descriptor's xxHash32, where brokers 0.8/0.9 hashed the magic number too."""
    if len(frame) <= _LZ4_DESCRIPTOR_AT:
        raise ValueError("an lz4 frame shorter than its header")
    checksum_at = _LZ4_DESCRIPTOR_AT + 2 + (8 if frame[_LZ4_DESCRIPTOR_AT] & _LZ4_CONTENT_SIZE_FLAG
                                           else 0)
    if len(frame) <= checksum_at:
        raise ValueError("an lz4 frame shorter than its header")
    checksum = xxhash.xxh32_intdigest(frame[_LZ4_DESCRIPTOR_AT:checksum_at]) >> 8 & 0xFF
    return frame[:checksum_at] + bytes([checksum]) + frame[checksum_at + 1:]
