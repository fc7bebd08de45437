"""The reference ConsumerOffsetChecker, run as the judge of what a group has committed."""

from __future__ import annotations

from zkconsumer.testing.reference import run_tool


def offset_checker_rows(cluster, group: str, topic: str, work_dir) -> dict[int, tuple[int, ...]]:
    """partition -> (committed offset, log size, lag), as the reference tool prints them.

    `--topic` is given because without it the tool lists topics from the owner znodes, which
    only exist while members own partitions.
    """
    result = run_tool("kafka.tools.ConsumerOffsetChecker",
                      ["--zookeeper", cluster.zookeeper_connect, "--group", group,
                       "--topic", topic], work_dir=work_dir)
    assert result.returncode == 0, result.stderr
    rows = {}
    for line in result.stdout.splitlines():
        fields = line.split()
        if len(fields) >= 6 and fields[0] == group and fields[1] == topic:
            rows[int(fields[2])] = (int(fields[3]), int(fields[4]), int(fields[5]))
    return rows
