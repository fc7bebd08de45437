"""Codecs for the znodes the ZooKeeper-coordinated consumer reads and writes; pure, no I/O.

`paths` builds the znode paths, `brokers` and `topics` decode what Kafka writes, `consumers`
encodes and decodes a group's own znodes. Malformed data always raises `ZnodeDataError` naming
the znode, so one bad registration cannot surface as a bare KeyError deep in a rebalance.
"""
