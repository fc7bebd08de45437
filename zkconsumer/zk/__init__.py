"""The ZooKeeper edge: sessions and reads of the broker and topic registries."""
