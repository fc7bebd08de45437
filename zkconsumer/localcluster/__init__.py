"""A real ZooKeeper and Kafka 0.9.0.1 on loopback, for development, demos and tests; and a
ZooKeeper ensemble from Debian's zookeeper package (3.8), for the faults of production ensembles.

Kafka 0.9.0.1 is the last line that ships the original ZooKeeper consumer and its tools, so the
same bundle gives us a broker to consume from and the reference implementation to compare with.
"""

from zkconsumer.localcluster.bundle import BundleError, default_cache_dir, ensure_bundle
from zkconsumer.localcluster.cluster import (
    BrokerProcess,
    ClusterError,
    LocalCluster,
    TlsKeystore,
    ZookeeperServerTls,
    make_self_signed_keystore,
)
from zkconsumer.localcluster.ensemble import EnsembleError, ZookeeperEnsemble
from zkconsumer.localcluster.java import JavaNotFoundError, find_java
from zkconsumer.localcluster.topics import (
    add_partition,
    create_topic,
    wait_for_broker_metadata,
    wait_for_leaders,
)

__all__ = [
    "BrokerProcess",
    "BundleError",
    "ClusterError",
    "EnsembleError",
    "JavaNotFoundError",
    "LocalCluster",
    "TlsKeystore",
    "ZookeeperEnsemble",
    "ZookeeperServerTls",
    "add_partition",
    "create_topic",
    "default_cache_dir",
    "ensure_bundle",
    "find_java",
    "make_self_signed_keystore",
    "wait_for_broker_metadata",
    "wait_for_leaders",
]
