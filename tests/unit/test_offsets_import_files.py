"""`zkconsumer offsets import` given a file that is not an offsets file: one `error:` line
naming the file (and the line, where there is one), exit status 1, and no connection made, so
nothing can have been written. The file is checked whole before ZooKeeper is reached."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from zkconsumer.admin.offset_files import MAX_FILE_BYTES
from zkconsumer.cli import cli, offsets_commands


@pytest.fixture(autouse=True)
def no_connection(monkeypatch):
    def refused(*args, **kwargs):
        raise AssertionError("connected before the file was checked")

    monkeypatch.setattr(offsets_commands, "admin_context", refused)


def entry(**fields) -> dict:
    return {"group": "g", "topic": "t", "partition": 0, "offset": 5, **fields}


CASES = [
    ("bad-json", "{not json", "not a zkconsumer offsets document"),
    ("bad-line", "/consumers/g/offsets/t/0:5\nt,0,5\n", "line 2"),
    ("negative-offset", "/consumers/g/offsets/t/0:-9\n", "line 1: offset -9"),
    ("absurd-partition", "/consumers/g/offsets/t/2147483648:1\n", "partition 2147483648"),
    ("partition-digits", "/consumers/g/offsets/t/" + "1" * 4500 + ":1\n", "more digits"),
    ("json-negative-offset", json.dumps({"version": 1, "offsets": [entry(offset=-3)]}),
     "offset -3"),
    ("json-absurd-partition", json.dumps({"version": 1, "offsets": [entry(partition=2**40)]}),
     "partition 1099511627776"),
    ("json-boolean-offset", json.dumps({"version": 1, "offsets": [entry(offset=True)]}),
     "wrong type"),
    ("json-nested", '{"version": 1, "offsets": ' + "[" * 200_000, "offsets document"),
    ("json-path-in-group", json.dumps({"version": 1, "offsets": [entry(group="a/b")]}),
     "group name 'a/b'"),
]


def run_import(path) -> tuple[int, list[str], BaseException | None]:
    result = CliRunner().invoke(cli, ["offsets", "import", "--input", str(path),
                                      "--zookeeper", "127.0.0.1:1"])
    return result.exit_code, [line for line in result.stderr.splitlines() if line.strip()], \
        result.exception


def assert_one_error_line(path, code, lines, exception, fragment) -> None:
    assert code == 1, lines
    assert isinstance(exception, SystemExit), f"unhandled: {exception!r}"
    assert len(lines) == 1 and lines[0].startswith("error: "), lines
    assert str(path) in lines[0] and fragment in lines[0], lines


@pytest.mark.parametrize(("text", "fragment"), [(c[1], c[2]) for c in CASES],
                         ids=[c[0] for c in CASES])
def test_a_malformed_file_is_one_line_and_nothing_connects(tmp_path, text, fragment):
    path = tmp_path / "offsets.txt"
    path.write_text(text)
    assert_one_error_line(path, *run_import(path), fragment)


def test_a_file_that_is_not_utf8_is_one_line(tmp_path):
    path = tmp_path / "offsets.bin"
    path.write_bytes(b"/consumers/g/offsets/t/0:5\n\xff\xfe\n")
    assert_one_error_line(path, *run_import(path), "not UTF-8")


def test_a_huge_file_is_refused_without_reading_it_whole(tmp_path):
    path = tmp_path / "huge.txt"
    with path.open("wb") as file:  # sparse: no disk used
        file.truncate(MAX_FILE_BYTES + 1)
    assert_one_error_line(path, *run_import(path), "larger than 64 MiB")
