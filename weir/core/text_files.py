"""Files a user names that must be text (a job file, weir-conf.yaml): what is wrong with one
that is not, in words that name the problem, where a decoder would raise a traceback."""

from __future__ import annotations

__all__ = ["not_text_reason"]


def not_text_reason(data: bytes, encoding: str = "utf-8") -> str:
    """Why ``data`` is not text in ``encoding`` (a codec Python knows), as a clause to
    follow a file's name ("holds binary data (a NUL byte at offset 12)", "is not UTF-8 text
    (byte 0xe9 at offset 3)"); "" when it is text. A NUL byte counts as binary whatever the
    encoding: no text file a user gives Weir holds one, and Python refuses it in source."""
    nul = data.find(b"\x00")
    if nul >= 0:
        return f"holds binary data (a NUL byte at offset {nul})"
    try:
        data.decode(encoding)
    except UnicodeDecodeError as exc:
        name = "UTF-8" if encoding.lower().replace("_", "-") in ("utf-8", "utf-8-sig") else encoding
        return f"is not {name} text (byte 0x{data[exc.start]:02x} at offset {exc.start})"
    return ""
