"""The ZooKeeper edge: sessions, reads of the broker and topic registries and of groups."""
