"""The data source's options, validated on the driver before any Spark job starts (pure).

Consumer keys (`zookeeper.connect`, `group.id`, `group.coordination`, `bootstrap.servers`,
`offsets.storage`, `auto.offset.reset`, `kafka.*`, ...) mean what they mean to the consumer and
are checked by the same code, which also says what each coordination needs (`zookeeper.connect`,
or `bootstrap.servers` alone for Kafka's group coordinator); the rest are the data source's own,
named like the native Spark Kafka source's where they do the same job.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from zkconsumer.admin.offset_files import offsets_from_json
from zkconsumer.config import ConsumerConfig
from zkconsumer.errors import ConfigError
from zkconsumer.model import TopicPartition

SOURCE = "Spark option"

OffsetSpec = str | dict[TopicPartition, int]   # "group" | "earliest" | "latest" | explicit

_OWN_OPTIONS = {"startingoffsets", "endingoffsets", "maxrecordsperpartition",
                "maxoffsetspertrigger", "decodeutf8", "failondataloss", "bootstrapservers",
                "path"}


@dataclass(frozen=True)
class SourceOptions:
    config: ConsumerConfig
    starting: OffsetSpec
    ending: OffsetSpec
    max_records_per_partition: int
    max_offsets_per_trigger: int | None
    decode_utf8: bool
    fail_on_data_loss: bool   # whether records deleted before an executor read them fail it
    bootstrap_servers: str | None

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> SourceOptions:
        lowered = {key.lower(): value for key, value in options.items()}
        legacy = {key: value for key, value in options.items()
                  if key.lower() not in _OWN_OPTIONS}
        if "group.id" not in {key.lower() for key in legacy}:
            raise ConfigError("group.id", None, "is required", SOURCE)
        config = ConsumerConfig.from_mapping(legacy, SOURCE)
        if sum(bool(x) for x in (config.topics, config.whitelist, config.blacklist)) != 1:
            raise ConfigError("topics", lowered.get("topics"),
                              "give exactly one of topics, whitelist or blacklist", SOURCE)
        return cls(
            config=config,
            starting=_offset_spec("startingOffsets", lowered.get("startingoffsets", "group"),
                                  ("group", "earliest", "latest")),
            ending=_offset_spec("endingOffsets", lowered.get("endingoffsets", "latest"),
                                ("latest",)),
            max_records_per_partition=_positive("maxRecordsPerPartition",
                                                lowered.get("maxrecordsperpartition", "500000")),
            max_offsets_per_trigger=(None if "maxoffsetspertrigger" not in lowered else _positive(
                "maxOffsetsPerTrigger", lowered["maxoffsetspertrigger"])),
            decode_utf8=_boolean("decodeUtf8", lowered.get("decodeutf8", "false")),
            fail_on_data_loss=_boolean("failOnDataLoss", lowered.get("failondataloss", "true")),
            bootstrap_servers=lowered.get("bootstrapservers") or config.bootstrap_servers,
        )


def _offset_spec(option: str, text: str, words: tuple[str, ...]) -> OffsetSpec:
    if text.strip().lower() in words:
        return text.strip().lower()
    if text.strip().startswith("{"):
        return offsets_from_json(text, option, SOURCE)
    raise ConfigError(option, text, f"must be {', '.join(words)} or offsets JSON", SOURCE)


def _positive(option: str, text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise ConfigError(option, text, "must be a positive integer", SOURCE)
    return value


def _boolean(option: str, text: str) -> bool:
    if text.strip().lower() not in ("true", "false"):
        raise ConfigError(option, text, "must be true or false", SOURCE)
    return text.strip().lower() == "true"
