"""What is wrong with a file that must be text, said in words."""

from __future__ import annotations

from weir.core.text_files import not_text_reason


def test_text_in_its_encoding_has_nothing_wrong():
    assert not_text_reason("naïve = 1\n".encode()) == ""
    assert not_text_reason("naïve = 1\n".encode("latin-1"), "latin-1") == ""
    assert not_text_reason(b"\xef\xbb\xbfa = 1\n", "utf-8-sig") == ""


def test_a_nul_byte_is_binary_data_in_any_encoding():
    assert not_text_reason(b"ab\x00c") == "holds binary data (a NUL byte at offset 2)"
    assert not_text_reason(b"ab\x00c", "latin-1") == "holds binary data (a NUL byte at offset 2)"


def test_bytes_the_encoding_refuses_are_named_with_their_offset():
    assert not_text_reason(b"caf\xe9") == "is not UTF-8 text (byte 0xe9 at offset 3)"
    assert not_text_reason(b"\xff", "utf_8") == "is not UTF-8 text (byte 0xff at offset 0)"
    assert not_text_reason(b"\xff", "ascii") == "is not ascii text (byte 0xff at offset 0)"
