"""Helpers for tests, the fault runner and the benchmarks; nothing else in zkconsumer imports them.

Worker processes as deployments run them (`consume_process`, and `api_worker`, a Python-API
member with a rebalance callback), a loopback TCP proxy whose traffic can be cut
(`tcp_proxy`), and the original Scala tools of the Kafka 0.9.0.1 bundle as judges of
compatibility (`reference`).
"""
