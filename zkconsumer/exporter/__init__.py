"""The lag exporter: lag, owners and Burrow-style status of every ZooKeeper group and every
group on Kafka's group coordinator.

The judging itself (status rules, window history, scan reports) is `zkconsumer.lag`, shared
with the admin commands; here are its Prometheus and Burrow views (pure), how the coordinator's
groups join ZooKeeper's (`kafka_groups`), and the edges: `zk_groups`, `kafka_reads` and
`service`.
"""
