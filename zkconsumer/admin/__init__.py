"""Administration of legacy groups: offset files, migration and reset plans, group views.

Everything here is pure: the CLI reads ZooKeeper and Kafka through the shared offset stores,
hands the numbers to these functions, and writes what they decide.
"""
