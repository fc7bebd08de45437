"""Durations on the command line: the units people write, and nothing that is not a positive,
finite span of time, however it is given."""

from __future__ import annotations

import click
import pytest

from zkconsumer.cli.duration_option import Duration


@pytest.mark.parametrize(("written", "seconds"), [
    ("500ms", 0.5), ("30s", 30.0), ("30", 30.0), (" 1.5 m ", 90.0), ("2h", 7200.0), (3, 3.0),
    (0.25, 0.25),
])
def test_durations_are_read_in_seconds(written, seconds):
    assert Duration().convert(written, None, None) == seconds


@pytest.mark.parametrize("written", ["0", "0s", "-5s", "soon", "5d", "", 0, -1, -0.5,
                                     float("inf"), float("nan")])
def test_anything_but_a_positive_finite_duration_is_refused(written):
    with pytest.raises(click.BadParameter, match="is not a duration"):
        Duration().convert(written, None, None)
