"""Administration of legacy groups, and a look at those on Kafka's group coordinator: the
operations behind `zkconsumer group` and `zkconsumer offsets`, and the pure parts they decide
with.

Offset files, plans and group views are pure. `context` is the I/O edge (one ZooKeeper session,
Kafka clients, offset stores); `groups`, `offset_reads` and `offset_writes` are the operations,
which never print: they hand results back and tell a `Reporter` what they have to say along the
way, so that the command line only parses and renders.
"""
