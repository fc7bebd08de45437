"""Java `.properties` parsing, so existing `consumer.properties` files load unchanged.

Legacy deployments keep their consumer settings in files written for `java.util.Properties`,
so this follows its rules rather than any simpler "key=value" convention: `#`/`!` comments,
`=`, `:` or whitespace separators, backslash continuations and Java escapes. Each value keeps
the line it started on so a bad setting can be reported as "file line N".
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from zkconsumer.errors import ConfigError

# Java splits lines only on these; str.splitlines would also split on \f, \v and Unicode breaks.
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_WHITESPACE = " \t\f"
_SEPARATORS = "=:"
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
_HEX = frozenset("0123456789abcdefABCDEF")


@dataclass(frozen=True)
class PropertyValue:
    """A value and the line its entry starts on, so a bad value can be pointed at."""

    value: str
    line: int


class _MalformedEscape(Exception):
    pass


def parse_properties(text: str, source: str = "properties") -> dict[str, PropertyValue]:
    """Keys in first-seen order; a repeated key keeps its last value, as Java does.

    `source` only names the text in errors (usually the file path).
    """
    lines = _LINE_BREAK.split(text)
    result: dict[str, PropertyValue] = {}
    index = 0
    while index < len(lines):
        line_number = index + 1
        logical = lines[index].lstrip(_WHITESPACE)
        index += 1
        if not logical or logical[0] in "#!":
            continue
        while _continues(logical):
            logical = logical[:-1]
            if index == len(lines):
                break
            logical += lines[index].lstrip(_WHITESPACE)
            index += 1
        raw_key, raw_value = _split_key_value(logical)
        try:
            key = _unescape(raw_key)
            value = _unescape(raw_value)
        except _MalformedEscape as exc:
            where = f"{source} line {line_number}"
            raise ConfigError(_cut(raw_key), _cut(raw_value), str(exc), where) from None
        result[key] = PropertyValue(value, line_number)
    return result


def read_properties_file(path: str | os.PathLike[str]) -> dict[str, PropertyValue]:
    """Read failures become a ConfigError on `consumer.config`, the reference tools' flag name."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise ConfigError("consumer.config", os.fspath(path),
                          f"cannot read properties file: {exc.strerror or exc}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        # Java's Properties.load(InputStream), which the reference uses, reads ISO-8859-1.
        text = data.decode("latin-1")
    return parse_properties(text, os.fspath(path))


def _continues(line: str) -> bool:
    """An odd run of trailing backslashes joins the next line; an even run is escaped `\\`s."""
    trailing = len(line) - len(line.rstrip("\\"))
    return trailing % 2 == 1


def _split_key_value(line: str) -> tuple[str, str]:
    """The key ends at the first unescaped separator or whitespace; one `=` or `:` may follow."""
    end = 0
    while end < len(line) and line[end] not in _SEPARATORS + _WHITESPACE:
        end += 2 if line[end] == "\\" else 1
    key = line[:end]
    start = end
    seen_separator = False
    while start < len(line) and line[start] in _SEPARATORS + _WHITESPACE:
        if line[start] in _SEPARATORS:
            if seen_separator:
                break
            seen_separator = True
        start += 1
    return key, line[start:]


def _cut(text: str) -> str:
    """A file's text as an error shows it: a few words, not a whole line of any length."""
    return text if len(text) <= 60 else text[:57] + "..."


def _unescape(raw: str) -> str:
    """Java's escapes read; `\\uXXXX` escapes are UTF-16 code units, so a pair of them is one
    character (as Java reads it) and a surrogate without its pair is no character at all: it
    would reach a znode path or a client setting that no encoder can write."""
    if "\\" not in raw:
        return raw
    out: list[str] = []
    index = 0
    while index < len(raw):
        char = raw[index]
        index += 1
        if char != "\\":
            out.append(char)
            continue
        code = raw[index]
        index += 1
        if code == "u":
            digits = raw[index:index + 4]
            if len(digits) != 4 or not _HEX.issuperset(digits):
                raise _MalformedEscape(f"malformed \\uXXXX escape \\u{digits}")
            out.append(chr(int(digits, 16)))
            index += 4
        else:
            out.append(_ESCAPES.get(code, code))
    text = "".join(out)
    try:
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le")
    except UnicodeDecodeError:
        raise _MalformedEscape("a \\uXXXX escape of a lone UTF-16 surrogate (\\ud800-\\udfff), "
                               "which is no character") from None
