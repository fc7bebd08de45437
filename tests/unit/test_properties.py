from __future__ import annotations

import contextlib
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from zkconsumer.errors import ConfigError
from zkconsumer.properties import PropertyValue, parse_properties, read_properties_file


def values(text: str) -> dict[str, str]:
    return {key: entry.value for key, entry in parse_properties(text).items()}


@pytest.mark.parametrize("line", ["a=b", "a:b", "a b", "a = b", "a : b", "a\tb", "a\f=\fb",
                                  "   a=b", "a   b"])
def test_separators_and_surrounding_whitespace(line):
    assert values(line) == {"a": "b"}


def test_trailing_whitespace_of_a_value_is_kept():
    assert values("a = b  ") == {"a": "b  "}


def test_only_the_first_separator_counts():
    assert values("a = = b\nc=d:e\nf : =g") == {"a": "= b", "c": "d:e", "f": "=g"}


@pytest.mark.parametrize("line", ["a", "a=", "a:", "a   ", "a = "])
def test_key_without_value_is_empty(line):
    assert values(line) == {"a": ""}


def test_comments_and_blank_lines_are_skipped():
    text = "# comment\n! also\n   # indented\n\n   \nkey=value # not a comment\n"
    assert values(text) == {"key": "value # not a comment"}


def test_line_continuation_drops_leading_whitespace_of_next_line():
    text = "topics=one,\\\n        two,\\\n   three\nnext=1"
    assert values(text) == {"topics": "one,two,three", "next": "1"}


def test_continuation_line_may_start_with_a_comment_character():
    assert values("a=x\\\n#y") == {"a": "x#y"}


def test_comment_line_ending_in_backslash_does_not_continue():
    assert values("# comment \\\na=b") == {"a": "b"}


def test_even_number_of_backslashes_is_not_a_continuation():
    assert values("a=x\\\\\nb=y") == {"a": "x\\", "b": "y"}


def test_continuation_at_end_of_text_is_dropped():
    assert values("a=x\\") == {"a": "x"}


def test_escapes():
    text = r"a=tab\tnl\nret\rff\fslash\\u\u0041\u00e9 q\q"
    assert values(text) == {"a": "tab\tnl\nret\rff\fslash\\uAé qq"}


def test_escaped_separators_and_spaces_in_keys():
    assert values(r"my\ key\=x\:y = v") == {"my key=x:y": "v"}
    assert values(r"\#not\!comment=1") == {"#not!comment": "1"}


def test_escaped_leading_space_in_value_is_kept():
    assert values(r"a=\  b") == {"a": "  b"}


def test_line_numbers_count_physical_lines():
    text = "# header\r\na=1\r\n\r\nb=2,\\\r\n  3\rc=4\nd=5"
    parsed = parse_properties(text)
    assert parsed == {"a": PropertyValue("1", 2), "b": PropertyValue("2,3", 4),
                      "c": PropertyValue("4", 6), "d": PropertyValue("5", 7)}


def test_vertical_tab_and_unicode_separators_are_not_line_breaks():
    assert values("a=x\x0by\u2028z") == {"a": "x\x0by\u2028z"}


def test_repeated_key_keeps_last_value_and_line():
    assert parse_properties("a=1\nb=2\na=3") == {"a": PropertyValue("3", 3),
                                                "b": PropertyValue("2", 2)}


@pytest.mark.parametrize("text", [r"a=\u12", r"a=\u12g4", "a=\\u"])
def test_malformed_unicode_escape_names_source_and_line(text):
    with pytest.raises(ConfigError) as info:
        parse_properties("# x\n" + text, "consumer.properties")
    assert info.value.key == "a"
    assert info.value.source == "consumer.properties line 2"
    assert "consumer.properties line 2" in str(info.value)
    assert "\\uXXXX" in str(info.value)


def test_read_file_utf8_and_latin1(tmp_path):
    utf8 = tmp_path / "utf8.properties"
    utf8.write_bytes("name=caf\u00e9\n".encode())
    latin1 = tmp_path / "latin1.properties"
    latin1.write_bytes("name=caf\u00e9\n".encode("latin-1"))
    assert read_properties_file(utf8)["name"].value == "caf\u00e9"
    assert read_properties_file(str(latin1))["name"].value == "caf\u00e9"


def test_malformed_escape_in_file_names_the_file(tmp_path):
    path = tmp_path / "consumer.properties"
    path.write_text("group.id=g\nbad=\\uZZZZ\n")
    with pytest.raises(ConfigError, match=r"consumer\.properties line 2"):
        read_properties_file(path)


@pytest.mark.parametrize("make", [lambda p: p / "missing.properties", lambda p: p])
def test_unreadable_file_is_a_config_error(tmp_path, make):
    path = make(tmp_path)
    with pytest.raises(ConfigError) as info:
        read_properties_file(path)
    assert info.value.key == "consumer.config"
    assert info.value.value == str(path)
    assert "cannot read properties file" in str(info.value)
    assert "\n" not in str(info.value)


def java_escape(text: str, is_key: bool) -> str:
    """What java.util.Properties.store writes, so the parser must read it back unchanged."""
    out = []
    for index, char in enumerate(text):
        if char == " " and (is_key or index == 0):
            out.append("\\ ")
        elif char in "\\=:#!":
            out.append("\\" + char)
        elif char in "\t\n\r\f":
            out.append({"\t": "\\t", "\n": "\\n", "\r": "\\r", "\f": "\\f"}[char])
        else:
            out.append(char)
    return "".join(out)


texts = st.text(st.characters(blacklist_categories=("Cs",)), max_size=20)


@given(st.dictionaries(texts.filter(bool), texts, max_size=8))
def test_round_trip_of_java_escaped_entries(entries):
    text = "\n".join(f"{java_escape(key, True)}={java_escape(value, False)}"
                     for key, value in entries.items())
    assert values(text) == entries


@given(st.dictionaries(texts.filter(bool), texts, max_size=8), st.integers(1, 5))
def test_round_trip_with_values_wrapped_over_lines(entries, width):
    lines = []
    for key, value in entries.items():
        # Escaping every space keeps a continuation from eating one; never split an escape.
        units = re.findall(r"\\.|.", java_escape(value, is_key=True), re.DOTALL)
        chunks = ["".join(units[i:i + width]) for i in range(0, len(units), width)]
        lines.append(f"{java_escape(key, True)}=" + "\\\n    ".join(chunks))
    assert values("\n".join(lines)) == entries


@given(st.text(max_size=200))
def test_any_text_parses_or_raises_config_error(text):
    with contextlib.suppress(ConfigError):
        parse_properties(text)


def test_an_escaped_surrogate_pair_is_the_one_character_java_reads():
    """Before, the two escapes stayed two surrogates, which no UTF-8 encoder can write."""
    assert parse_properties("client.id=app-\\uD83D\\uDE00")["client.id"].value == "app-\U0001F600"


@pytest.mark.parametrize("line", ["group.id=g\\ud800", "group.id=\\uDE00\\uD83D",
                                  "\\uDBFF=1", "client.id=a\\udc00b"])
def test_an_escape_of_a_lone_surrogate_is_one_config_error_naming_the_line(line):
    """Before, it was read into the value, and the group id reached a znode path no encoder
    could write."""
    with pytest.raises(ConfigError, match=r"line 1\): a \\uXXXX escape of a lone UTF-16 "
                                          r"surrogate"):
        parse_properties(line, "consumer.properties")


def test_a_malformed_escape_in_a_long_value_shows_a_few_words_of_it():
    with pytest.raises(ConfigError) as raised:
        parse_properties("k=\\uZZZZ" + "x" * 5000)
    assert len(str(raised.value)) < 200 and "malformed \\uXXXX escape" in str(raised.value)
