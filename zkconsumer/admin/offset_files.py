"""Offset files: the reference `ExportZkOffsets` text format and a JSON form of the same data.

Text: one `/consumers/<group>/offsets/<topic>/<partition>:<offset>` per line, which the
reference `ImportZkOffsets` reads back. Lines are sorted (group, topic, partition) so that an
export is reproducible; the reference writes ZooKeeper's unordered child order.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path

from zkconsumer.errors import ConfigError, ZkConsumerError
from zkconsumer.kafka.protocol.codec import EARLIEST
from zkconsumer.model import TopicPartition
from zkconsumer.znodes.consumers import LONG_MAX, NO_OFFSET
from zkconsumer.znodes.json_fields import describe
from zkconsumer.znodes.paths import check_name

GroupOffsets = dict[str, dict[TopicPartition, int]]

JSON_VERSION = 1
# The native Spark Kafka source's offsets JSON, `{"topic": {"0": 42}}`, where EARLIEST (-2) and
# LATEST (-1) stand for "the earliest" and "the latest" offset, as in Kafka's ListOffsets.
_TEXT_LINE = re.compile(r"/consumers/(?P<group>[^/]+)/offsets/(?P<topic>[^/:]+)/"
                        r"(?P<partition>[0-9]+):(?P<offset>-?[0-9]+)")
# Far beyond any export (a line per partition, 100 groups x 100 partitions is under 1 MiB), and
# small enough to read whole: a file larger than this is not an offsets file.
MAX_FILE_BYTES = 64 << 20
_PARTITION_MAX = 2**31 - 1
_PARTITION_KEY = re.compile(r"[0-9]{1,10}")


class OffsetFileError(ZkConsumerError):
    """An offset file line or document that is not in either format; names the line."""


def format_text(offsets: Mapping[str, Mapping[TopicPartition, int]]) -> str:
    return "".join(f"/consumers/{group}/offsets/{tp.topic}/{tp.partition}:{offset}\n"
                   for group, tp, offset in _sorted_entries(offsets))


def format_json(offsets: Mapping[str, Mapping[TopicPartition, int]]) -> str:
    entries = [{"group": group, "topic": tp.topic, "partition": tp.partition, "offset": offset}
               for group, tp, offset in _sorted_entries(offsets)]
    return json.dumps({"version": JSON_VERSION, "offsets": entries}, indent=1) + "\n"


def read_offsets_file(path: Path) -> GroupOffsets:
    """The offsets in a file given to `offsets import`; OffsetFileError for one that cannot be
    read, is too large, is not UTF-8 or is not in either format."""
    try:
        with path.open("rb") as file:
            data = file.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise OffsetFileError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    if len(data) > MAX_FILE_BYTES:
        raise OffsetFileError(f"{path}: larger than {MAX_FILE_BYTES >> 20} MiB, not an offsets "
                              "file")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise OffsetFileError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    return parse_offsets(text, str(path))


def parse_offsets(text: str, source: str = "input") -> GroupOffsets:
    """Either format, told apart by the first character. Blank lines are skipped; the same
    partition twice is an error rather than a silent last-one-wins."""
    if text.lstrip().startswith("{"):
        return _parse_json(text, source)
    offsets: GroupOffsets = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        match = _TEXT_LINE.fullmatch(line.strip())
        if match is None:
            raise OffsetFileError(f"{source} line {number}: expected "
                                  f"/consumers/<group>/offsets/<topic>/<partition>:<offset>, "
                                  f"got {line.strip()[:120]!r}")
        where = f"{source} line {number}"
        if len(match["partition"]) > 10 or len(match["offset"]) > 20:
            raise OffsetFileError(f"{where}: a partition or offset with more digits than any has")
        _add(offsets, match["group"], TopicPartition(match["topic"], int(match["partition"])),
             int(match["offset"]), where)
    return offsets


def offsets_to_json(offsets: Mapping[TopicPartition, int]) -> str:
    """`{"topic": {"0": 42}}`, the native Kafka source's startingOffsets format."""
    document: dict[str, dict[str, int]] = {}
    for tp in sorted(offsets):
        document.setdefault(tp.topic, {})[str(tp.partition)] = offsets[tp]
    return json.dumps(document, separators=(",", ":"))


def offsets_from_json(text: str, option: str, source: str) -> dict[TopicPartition, int]:
    """The JSON `offsets_to_json` writes; errors name `option` and where it came from, and show
    no more of the text than fits a line. Partitions are decimal digits (`int` would also take
    other scripts' digits, signs, spaces and underscores), topics legal topic names, offsets
    within a long."""
    try:
        document = json.loads(text)
        if not isinstance(document, dict):
            raise ValueError("expected an object of topics")
        offsets = {}
        for topic, partitions in document.items():
            check_name("topic", topic)
            if not isinstance(partitions, dict):
                raise ValueError(f"topic {describe(topic)} must map partition numbers to offsets")
            for partition, offset in partitions.items():
                if not _PARTITION_KEY.fullmatch(partition) or int(partition) > _PARTITION_MAX:
                    raise ValueError(f"{describe(topic)}: {describe(partition)} is not a partition number")
                if type(offset) is not int or not EARLIEST <= offset <= LONG_MAX:
                    raise ValueError(f"{describe(topic)}/{partition}: offset must be an integer from -2 "
                                     f"to {LONG_MAX}")
                offsets[TopicPartition(topic, int(partition))] = offset
        return offsets
    except (ValueError, RecursionError) as exc:
        reason = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        shown = text if len(text) <= 60 else text[:57] + "..."
        raise ConfigError(option, shown, f"not offsets JSON like "
                          f"{{\"topic\":{{\"0\":42}}}}: {reason}", source) from None


def _parse_json(text: str, source: str) -> GroupOffsets:
    try:
        document = json.loads(text)
        if not isinstance(document, dict):
            raise OffsetFileError(f"{source}: not a zkconsumer offsets document (a JSON object)")
        if document.get("version") != JSON_VERSION:
            raise OffsetFileError(f"{source}: unsupported offsets document version "
                                  f"{document.get('version')!r} (expected {JSON_VERSION})")
        entries = document["offsets"]
        offsets: GroupOffsets = {}
        for index, entry in enumerate(entries):
            values = (entry["group"], entry["topic"], entry["partition"], entry["offset"])
            if not (isinstance(values[0], str) and isinstance(values[1], str)
                    and all(type(v) is int for v in values[2:])):
                raise OffsetFileError(f"{source}: offsets[{index}] has a field of the wrong type")
            _add(offsets, values[0], TopicPartition(values[1], values[2]), values[3],
                 f"{source} offsets[{index}]")
        return offsets
    except (ValueError, KeyError, TypeError, RecursionError) as exc:
        raise OffsetFileError(f"{source}: not a zkconsumer offsets document "
                              f"({type(exc).__name__}: {str(exc)[:120]})") from None


def _add(offsets: GroupOffsets, group: str, tp: TopicPartition, offset: int, where: str) -> None:
    """Every value becomes a znode path or a Kafka commit: checked here, before anything is
    read or written for the file."""
    try:
        check_name("group", group)
        check_name("topic", tp.topic)
    except ValueError as exc:
        raise OffsetFileError(f"{where}: {exc}") from None
    if not 0 <= tp.partition <= _PARTITION_MAX:
        raise OffsetFileError(f"{where}: partition {tp.partition} is not a partition number "
                              f"(0 to {_PARTITION_MAX})")
    if not NO_OFFSET <= offset <= LONG_MAX:
        raise OffsetFileError(f"{where}: offset {offset} is not an offset ({NO_OFFSET}, the "
                              f"reference's \"none\", to {LONG_MAX})")
    partitions = offsets.setdefault(group, {})
    if tp in partitions:
        raise OffsetFileError(f"{where}: {group} {tp.topic}-{tp.partition} appears twice")
    partitions[tp] = offset


def _sorted_entries(offsets: Mapping[str, Mapping[TopicPartition, int]]):
    for group in sorted(offsets):
        for tp in sorted(offsets[group]):
            yield group, tp, offsets[group][tp]
