"""A group's lag, owners and status, judged from numbers read elsewhere (pure).

`report.GroupState` is what ZooKeeper holds for a group (the ZooKeeper edge, `zk.group_walk`,
builds it); `status`, `history` and `report` turn scans of it into Burrow-style judgements.
The lag exporter and the admin commands both use them, so they sit below either.
"""
