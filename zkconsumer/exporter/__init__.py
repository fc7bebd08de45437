"""The lag exporter: lag, owners and Burrow-style status of every ZooKeeper group.

Pure parts (`status`, `history`, `report`, the two views) import nothing that does I/O, so the
admin commands use them too; the edges are `zk_groups`, `kafka_reads` and `service`.
"""
