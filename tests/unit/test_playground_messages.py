"""Which test messages `zkconsumer cluster produce` sends (pure): generated ones, or one per
line of standard input, with a key for all, or each line's own before a separator."""

from __future__ import annotations

import pytest

from zkconsumer.localcluster.playground import ProduceError, playground_messages


def test_a_count_generates_numbered_messages_and_ignores_the_input():
    assert list(playground_messages(3, ["ignored\n"], None, None)) == [
        (None, b"message 0"), (None, b"message 1"), (None, b"message 2")]
    assert list(playground_messages(2, [], "k", None)) == [(b"k", b"message 0"),
                                                            (b"k", b"message 1")]


def test_lines_become_messages_empty_ones_left_out_and_keys_split_off():
    lines = ["user-1:first\n", "\n", "user-2:sec:ond\r\n"]
    assert list(playground_messages(None, lines, None, ":")) == [
        (b"user-1", b"first"), (b"user-2", b"sec:ond")]
    assert list(playground_messages(None, ["a\n", "b"], None, None)) == [(None, b"a"),
                                                                          (None, b"b")]


def test_a_line_without_the_separator_is_named():
    with pytest.raises(ProduceError, match="line 2 has no key separator ':': 'no key here'"):
        list(playground_messages(None, ["k:v\n", "no key here\n"], None, ":"))


def test_an_empty_key_separator_is_a_usage_error_not_a_traceback(tmp_path):
    from click.testing import CliRunner

    from zkconsumer.cli import cli

    result = CliRunner().invoke(cli, ["cluster", "produce", "--topic", "t", "--key-separator",
                                      "", "--work-dir", str(tmp_path)], input="k:v\n")
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert "Invalid value for --key-separator: must not be empty" in result.stderr
