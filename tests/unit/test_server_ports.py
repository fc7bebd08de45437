"""Ports for the local servers, and what their logs say when a start fails."""

from __future__ import annotations

import socket

from zkconsumer.localcluster import processes
from zkconsumer.localcluster.processes import free_port, log_tail, port_was_taken


def test_ports_are_chosen_below_the_ephemeral_range_that_outgoing_connections_use(tmp_path,
                                                                                 monkeypatch):
    ranges = tmp_path / "ip_local_port_range"
    ranges.write_text("40000\t60999\n")
    monkeypatch.setattr(processes, "_EPHEMERAL_RANGE_FILE", ranges)
    ports = {free_port() for _ in range(20)}
    assert all(10000 <= port < 40000 for port in ports)


def test_a_port_someone_listens_on_is_never_chosen(tmp_path, monkeypatch):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        ranges = tmp_path / "ip_local_port_range"
        ranges.write_text(f"{port + 1}\t60999\n")
        monkeypatch.setattr(processes, "_LOWEST_CHOSEN_PORT", port - 999)
        monkeypatch.setattr(processes, "_EPHEMERAL_RANGE_FILE", ranges)
        assert port not in {free_port() for _ in range(200)}


def test_without_room_below_the_ephemeral_range_the_system_chooses(tmp_path, monkeypatch):
    ranges = tmp_path / "ip_local_port_range"
    ranges.write_text("10500\t60999\n")
    monkeypatch.setattr(processes, "_EPHEMERAL_RANGE_FILE", ranges)
    assert free_port() >= 10500


def test_the_tail_of_a_java_failure_names_the_exception_not_its_stack_frames(tmp_path):
    log = tmp_path / "zookeeper.out"
    log.write_text("[2026-11-25] INFO binding to port 0.0.0.0/0.0.0.0:2181\n"
                   "[2026-11-25] ERROR Unexpected exception, exiting abnormally\n"
                   "java.net.BindException: Address already in use\n"
                   "\tat sun.nio.ch.Net.bind0(Native Method)\n"
                   "\tat org.apache.zookeeper.server.ZooKeeperServerMain.main(Main.java:52)\n"
                   "\t... 3 more\n")
    tail = log_tail(log, lines=2)
    assert tail == ("[2026-11-25] ERROR Unexpected exception, exiting abnormally | "
                    "java.net.BindException: Address already in use")


def test_a_taken_port_is_read_only_from_the_latest_start(tmp_path):
    log = tmp_path / "kafka-0.out"
    log.write_text("java.net.BindException: Address already in use\n")
    first_start_ends = log.stat().st_size
    with open(log, "a") as appended:
        appended.write("[2026-11-25] INFO [Kafka Server 0], started\n")
    assert port_was_taken(log)
    assert not port_was_taken(log, since=first_start_ends)
    assert not port_was_taken(tmp_path / "missing.out")
