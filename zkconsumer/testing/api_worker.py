"""A group member built on the Python API, with a rebalance callback, in a process of its own.

`zkconsumer consume` takes no callbacks, so a member whose `on_partitions_assigned` raises (a
user's bug, and a path that must fail the member loudly and release what it owns) cannot be
run through it. This worker can: it is `zkconsumer --log-format json consume --format jsonl`
with such a callback, running the command's loop (`zkconsumer.worker`) and formatter, so its
output, logs, exit status and stop on SIGTERM are the command's and `ConsumeProcess` reads it
the same way.

    python -m zkconsumer.testing.api_worker [--zookeeper Z] --group G --topic T \
        [--from-beginning] [--property KEY=VALUE ...] [--fail-on-assign N]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping

from zkconsumer.cli.consume_command import build_config
from zkconsumer.cli.message_output import jsonl
from zkconsumer.cli.signals import stop_on_signals
from zkconsumer.errors import ZkConsumerError
from zkconsumer.logs import configure_logging, get_logger, redact
from zkconsumer.member.fence_follow import FenceFollower
from zkconsumer.model import TopicPartition
from zkconsumer.worker import ConsumeRun, open_member

log = get_logger(__name__)


class FailingAssignCallback:
    """`on_partitions_assigned` that raises on its `fail_on`-th call (never if 0)."""

    def __init__(self, fail_on: int) -> None:
        self.calls = 0
        self._fail_on = fail_on

    def __call__(self, partitions: Mapping[TopicPartition, str]) -> None:
        self.calls += 1
        if self.calls == self._fail_on:
            # Logged so that whoever drives this worker knows the fault has happened.
            log.warning("on_partitions_assigned raising on purpose", call=self.calls,
                        partitions=len(partitions))
            raise RuntimeError(f"on_partitions_assigned failed on purpose (call {self.calls})")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--zookeeper", help="none for a member on Kafka's group coordinator")
    parser.add_argument("--group", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--from-beginning", action="store_true")
    parser.add_argument("--property", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--fail-on-assign", type=int, default=0, metavar="N",
                        help="raise from on_partitions_assigned on its N-th call (0: never)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    configure_logging("json")
    try:
        consumed = _consume(args)
    except ZkConsumerError as exc:  # one line and status 1, as the command reports it
        print(f"error: {redact(str(exc))}", file=sys.stderr, flush=True)
        return 1
    log.info("consumer stopped", messages=consumed)
    return 0


def _consume(args: argparse.Namespace) -> int:
    with stop_on_signals() as stop_requested:
        config = build_config(args.zookeeper, args.group, None, tuple(args.property),
                              args.from_beginning)
        on_assigned = FailingAssignCallback(args.fail_on_assign)
        follower = FenceFollower(
            config, lambda settings, metrics: open_member(
                settings, (args.topic,), 1, metrics, on_partitions_assigned=on_assigned),
            stop_requested)
        started = follower.start()
        if started is None:  # stopped while waiting for the group's cutover
            return 0
        run = ConsumeRun(*started, jsonl, None, None, stop_requested, follower)
        try:
            run.run()
        finally:
            run.connector.shutdown()  # the run shuts down by itself; this covers a failure
    return run.consumed


if __name__ == "__main__":
    sys.exit(main())
