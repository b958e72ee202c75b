"""Bytes to text and back as Java does it, for the formats PyFlink runs in Java.

Java's ``new String(bytes, charset)``, ``InputStreamReader`` and ``String.getBytes(charset)``
never fail: a malformed byte sequence decodes to U+FFFD and a character the charset cannot
encode (or an unpaired surrogate) encodes to ``?`` (U+FFFD in UTF-16 and UTF-32). So one
record that is not valid UTF-8 does not fail a job of ``SimpleStringSchema`` or a text file
format in PyFlink; it reads with replacement characters. ``JavaCharset`` does the same in
Python.

Python's ``"replace"`` error handler already replaces as Java does, one U+FFFD per maximal
invalid subsequence, with one exception: Java's UTF-8 decoder takes ``ED`` followed by
``A0``..``BF`` (the start of an encoded surrogate, never valid UTF-8) and its continuation
byte as one malformed sequence, where Python replaces each byte. The ``"weir.java"``
handler registered here follows Java there too. Encoding, it joins a surrogate pair that a
Python string holds as two code points into the character Java would see.

Charsets as Java names them: ``"UTF-16"`` and ``"UTF-32"`` decode by their byte-order mark
and big-endian without one, and encode big-endian (``"UTF-16"`` with a mark before any
text), as Java's.
"""

from __future__ import annotations

import codecs
from collections.abc import Sequence
from itertools import repeat

__all__ = ["JAVA_ERRORS", "JavaCharset"]

_ERRORS = "weir.java"
JAVA_ERRORS = _ERRORS
"""The name of the error handler that replaces as Java does (``bytes.decode(codec,
JAVA_ERRORS)``, ``open(..., errors=JAVA_ERRORS)``)."""
_REPLACEMENT = "\ufffd"


def _replace_as_java(exc: UnicodeError) -> tuple[str | bytes, int]:
    if isinstance(exc, UnicodeDecodeError):
        return _decode_replacement(exc)
    if isinstance(exc, UnicodeEncodeError):
        text, position, end = exc.object, exc.start, exc.end
        # Java's Unicode encoders replace with U+FFFD, the others with "?".
        unicode = exc.encoding.replace("_", "-").startswith(("utf-16", "utf-32"))
        question = (_REPLACEMENT if unicode else "?").encode(exc.encoding)
        out = []
        while position < end:
            char = text[position]
            following = text[position + 1] if position + 1 < len(text) else ""
            if "\ud800" <= char <= "\udbff" and "\udc00" <= following <= "\udfff":
                joined = chr(0x10000 + ((ord(char) - 0xD800) << 10) + (ord(following) - 0xDC00))
                try:
                    out.append(joined.encode(exc.encoding))
                except UnicodeEncodeError:
                    out.append(question)  # unmappable: one replacement for the pair, as Java
                position += 2
                continue
            out.append(question)
            position += 1
        return b"".join(out), max(end, position)
    raise exc


def _decode_replacement(exc: UnicodeDecodeError) -> tuple[str, int]:
    data, start, end = exc.object, exc.start, exc.end
    encoding = exc.encoding.replace("_", "-")
    left = len(data) - start
    if encoding in ("utf-8", "utf8"):
        if data[start] == 0xED and left > 1 and 0xA0 <= data[start + 1] <= 0xBF:
            # An encoded surrogate: Java's decoder reads its lead, second byte and (when
            # there is one) continuation byte as one malformed sequence.
            end = start + 2
            if end < len(data) and 0x80 <= data[end] <= 0xBF:
                end += 1
    elif encoding in ("utf-16-be", "utf-16-le") and left >= 3:
        unit = data[start : start + 2]
        high = unit[0] if encoding == "utf-16-be" else unit[1]
        if 0xD8 <= high <= 0xDB:
            # A high surrogate without its low one: Java takes it and the next unit as one
            # malformed sequence (what is left when fewer than two units are).
            end = start + min(4, left)
    elif encoding in ("utf-32-be", "utf-32-le") and left >= 4:
        word = data[start : start + 4]
        code = int.from_bytes(word, "big" if encoding.endswith("be") else "little")
        if 0xD800 <= code <= 0xDFFF:
            return chr(code), start + 4  # Java's UTF-32 decoder lets a surrogate through
    return _REPLACEMENT, end


codecs.register_error(_ERRORS, _replace_as_java)

_BOMS = (
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF32_LE, "utf-32-le"),
)
_BOMS_16 = ((codecs.BOM_UTF16_BE, "utf-16-be"), (codecs.BOM_UTF16_LE, "utf-16-le"))
_UTF32_BOM = {"utf-32-be": codecs.BOM_UTF32_BE, "utf-32-le": codecs.BOM_UTF32_LE}


class JavaCharset:
    """A charset (any name Python's codecs know: ``"UTF-8"``, ``"ISO-8859-1"``, ...) that
    decodes and encodes as Java's of that name. Raises LookupError for an unknown name.
    Holds nothing but the name: it travels pickled with the schemas that use it."""

    __slots__ = ("_codec", "name")

    def __init__(self, name: str = "UTF-8") -> None:
        self.name = name
        self._codec = codecs.lookup(name).name

    def decode(self, data: bytes) -> str:
        codec = self._codec
        if codec in ("utf-16", "utf-32"):
            boms = _BOMS_16 if codec == "utf-16" else _BOMS
            for bom, endian in boms:
                if data.startswith(bom):
                    return data[len(bom) :].decode(endian, _ERRORS)
            return data.decode(f"{codec}-be", _ERRORS)
        if codec in _UTF32_BOM and data.startswith(_UTF32_BOM[codec]):
            data = data[4:]  # Java's UTF-32BE and UTF-32LE skip a leading mark of their order
        return data.decode(codec, _ERRORS)

    def decode_all(self, data: Sequence[bytes]) -> list[str]:
        """``decode`` of each of ``data``, in one call (a codec without byte-order marks
        decodes them all without a Python call per item). Raises TypeError for an item
        that is not bytes."""
        codec = self._codec
        if codec in ("utf-16", "utf-32") or codec in _UTF32_BOM:
            decode = self.decode
            return [decode(d) for d in data]
        return list(map(bytes.decode, data, repeat(codec), repeat(_ERRORS)))

    def encode_all(self, texts: Sequence[str]) -> list[bytes]:
        """``encode`` of each of ``texts``, in one call. Raises TypeError for an item that
        is not a str."""
        codec = self._codec
        if codec in ("utf-16", "utf-32"):
            if not all(isinstance(t, str) for t in texts):
                msg = "encode_all encodes strings only"
                raise TypeError(msg)
            encode = self.encode
            return [encode(t) for t in texts]
        return list(map(str.encode, texts, repeat(codec), repeat(_ERRORS)))

    def encode(self, text: str) -> bytes:
        codec = self._codec
        if codec == "utf-16":
            return codecs.BOM_UTF16_BE + text.encode("utf-16-be", _ERRORS) if text else b""
        if codec == "utf-32":
            return text.encode("utf-32-be", _ERRORS)
        return text.encode(codec, _ERRORS)

    @property
    def ascii_compatible(self) -> bool:
        """``"\\n"`` and ``"\\r"`` are the bytes 0x0A and 0x0D, alone: lines can be cut
        on the bytes before decoding."""
        return self.encode("\n\r") == b"\n\r"

    def __reduce__(self) -> tuple[object, ...]:
        return (JavaCharset, (self.name,))

    def __repr__(self) -> str:
        return f"JavaCharset({self.name!r})"
