"""Groups set up the way the Scala consumer leaves them in ZooKeeper."""

from __future__ import annotations

from kazoo.client import KazooClient

from zkconsumer.znodes.consumers import ConsumerRegistration, encode_offset
from zkconsumer.znodes.paths import GroupPaths


def write_offsets(zk: KazooClient, group: str, topic: str, offsets: dict[int, int]) -> None:
    """As the Scala consumer commits to ZooKeeper: one text znode per partition."""
    paths = GroupPaths(group)
    for partition, offset in offsets.items():
        path = paths.offset(topic, partition)
        if zk.exists(path):
            zk.set(path, encode_offset(offset))
        else:
            zk.create(path, encode_offset(offset), makepath=True)


def register_member(zk: KazooClient, group: str, topic: str, owned: list[int]) -> str:
    """A member that registered and claimed `owned`, and then does nothing (a hung consumer):
    ephemeral znodes, gone with this session."""
    paths = GroupPaths(group)
    consumer_id = f"{group}_host-1700000000000-abcdef01"
    zk.create(paths.member(consumer_id),
              ConsumerRegistration.static({topic: 1}, 1700000000000).encode(),
              ephemeral=True, makepath=True)
    for partition in owned:
        zk.create(paths.owner(topic, partition), f"{consumer_id}-0".encode(), ephemeral=True,
                  makepath=True)
    return consumer_id


def kafka_version_args(cluster) -> list[str]:
    if not cluster.kafka_api_version:
        return []
    return ["--property", "kafka.api.version=" + ".".join(map(str, cluster.kafka_api_version))]
