"""Where a CSV file's records end, and what Flink's reader (Jackson's CSV parser) refuses
in its bytes, watched as pyarrow's CSV reader reads them (``CsvLineWatch``).

pyarrow and Jackson split a file into records and values alike, with three differences:
- a blank line in a file of several columns: Jackson fails ("Row length mismatch");
  pyarrow skips it, or reads it as a record of empty values, which cannot be told from
  its output;
- text after a quoted value's closing quote: Jackson skips whitespace there (bytes up to
  the space, line ends excepted) and fails on anything else before the column separator
  or the line's end ("Expected column separator character"); pyarrow adds it to the
  value (``"ab"c`` is ``abc``, ``"ab" ,`` is ``ab ``);
- a quoted value still open at the end of the file: Jackson fails ("Missing closing quote
  for value"); pyarrow reads the rest of the file into it.

The watch follows quoting as both parsers do: a quote opens a quoted value only at the
start of a value (elsewhere it is a character like any other); inside one, two quotes
are one quote and a single quote closes it. It works on runs of quotes, with numpy, one
pass per block read. It takes the whitespace after closing quotes out of the bytes it
hands on, and records the first row Jackson would refuse, with why (``refused_row``,
``refusal``); the reader fails there once the rows before it are handed over.
"""

from __future__ import annotations

from typing import Any

import numpy as np

_BOM = b"\xef\xbb\xbf"  # UTF-8's byte order mark, which both readers skip
_LF = 10
_CR = 13
_SPACE = 32


class CsvLineWatch:
    """The file as pyarrow reads it (``read``), watched. The quotes that end a block, and
    a closing quote followed by whitespace to the block's end, are held back until the
    next read: what follows them decides what they are."""

    def __init__(self, raw: Any, separator: str, quote: str | None, columns: int) -> None:
        self._raw = raw
        self._separator = ord(separator)
        self._quote = None if quote is None else ord(quote)
        # A blank line is a record of one empty value in a file of one column.
        self._columns = columns
        self._held = b""  # read, not yet handed on
        self._started = False  # past a byte order mark the file may begin with
        self._ended = False
        # Where the bytes handed on end:
        self._inside = False  # inside a quoted value
        self._value_start = True  # the next byte starts a value
        self._open_row = 0  # the row the open quoted value starts in, when inside one
        self._lines = 0  # lines ended, outside quoted values
        self._line_open = False  # bytes since the last line ended
        self._after_cr = False  # the last byte was a \r ending a line
        self.refused_row: int | None = None  # 1-based, counting every line before it
        self.refusal: str | None = None  # why

    @property
    def closed(self) -> bool:
        return bool(self._raw.closed)

    def readable(self) -> bool:
        return True

    def close(self) -> None:
        self._raw.close()

    def read(self, size: int = -1) -> bytes:
        while True:
            data = self._raw.read(size)
            block, self._held = (self._held + data if self._held else data), b""
            if self.refused_row is not None:
                return block  # type: ignore[no-any-return]
            if not data:
                if self._ended:
                    return block  # type: ignore[no-any-return]
                self._ended = True
                return self._watch(block, final=True)
            block = self._watch(block, final=False)
            if block:
                return block  # type: ignore[no-any-return]

    def _watch(self, block: bytes, final: bool) -> bytes:
        """Watches ``block`` (the bytes held back and those read after them): the bytes to
        hand on; the rest is held back."""
        origin = 0  # where the file's text begins in the block (after a byte order mark)
        if not self._started:
            if not final and len(block) < len(_BOM) and _BOM.startswith(block):
                self._held = block
                return b""
            self._started = True
            origin = len(_BOM) if block.startswith(_BOM) else 0
        view = np.frombuffer(block, dtype=np.uint8)
        ends = np.flatnonzero((view == _LF) | (view == _CR))
        found = None if self._quote is None else self._quote_runs(view, final, origin)
        runs, cut = (None, len(view)) if found is None else found  # bytes handed on: view[:cut]
        refused: tuple[int, str] | None = None  # the first byte Jackson refuses, and why
        removed: list[int] = []  # whitespace after closing quotes
        if runs is not None:
            ends = ends[~runs.inside_at(ends, self._inside)]
            refused = self._after_closing(view, runs.closes, cut, final, removed)
        ends = ends[ends < (cut if refused is None else refused[0])]
        lines = _Lines(view, ends, self._after_cr, origin)
        if self._columns > 1:
            blank = lines.first_blank(self._line_open)
            if blank is not None:
                return self._refused(
                    view, removed, self._lines + blank + 1, _blank_line(self._columns)
                )
        if refused is not None:
            return self._refused(
                view, removed, self._lines + lines.before(refused[0]) + 1, refused[1]
            )
        if runs is not None:
            opened = runs.last_opened()
            if opened is not None:
                self._open_row = self._lines + lines.before(opened) + 1
            if len(runs.after):
                self._inside = bool(runs.after[-1])
        if final and self._inside:
            return self._refused(view, removed, self._open_row, _UNCLOSED)
        if cut > origin:
            ended, self._line_open, self._after_cr = lines.state_after(cut, self._line_open)
            self._lines += ended
            self._value_start = int(view[cut - 1]) in (self._separator, _LF, _CR)
        self._held = block[cut:]
        if removed:
            return np.delete(view[:cut], removed).tobytes()  # type: ignore[no-any-return]
        return block if cut == len(view) else block[:cut]

    def _refused(self, view: np.ndarray, removed: list[int], row: int, why: str) -> bytes:
        """Records the refusal; the whole block is handed on (with the whitespace before
        the refused row taken out): nothing after it is watched."""
        self.refused_row = row
        self.refusal = why
        return np.delete(view, removed).tobytes()  # type: ignore[no-any-return]

    def _quote_runs(
        self, view: np.ndarray, final: bool, origin: int
    ) -> tuple[_QuoteRuns, int] | None:
        """The block's runs of quotes, but for those held back, and where the held bytes
        begin. None when it has none and starts outside quoted values."""
        assert self._quote is not None
        quotes = np.flatnonzero(view == self._quote)
        if not len(quotes) and not self._inside:
            return None
        first = np.ones(len(quotes), dtype=bool)
        first[1:] = quotes[1:] - quotes[:-1] != 1
        index = np.flatnonzero(first)
        starts = quotes[index]
        lengths = np.diff(np.append(index, len(quotes)))
        cut = len(view)
        if not final and len(starts) and starts[-1] + lengths[-1] == cut:
            # The run may go on in the next block, and its length decides what it is.
            cut = int(starts[-1])
            starts, lengths = starts[:-1], lengths[:-1]

        def runs_of(starts: np.ndarray, lengths: np.ndarray) -> _QuoteRuns:
            return _QuoteRuns(
                view,
                starts,
                lengths,
                separator=self._separator,
                origin=origin,
                value_start=self._value_start,
                inside=self._inside,
            )

        runs = runs_of(starts, lengths)
        if not final and len(starts):
            last_close = int(runs.closes[-1])
            if last_close >= 0 and all(
                _skipped(int(byte), self._separator) for byte in view[last_close:cut]
            ):
                # A closing quote, and whitespace to the block's end: what follows
                # decides whether the whitespace is skipped or the file refused.
                cut = int(starts[-1])
                runs = runs_of(starts[:-1], lengths[:-1])
        return runs, cut

    def _after_closing(
        self, view: np.ndarray, closes: np.ndarray, cut: int, final: bool, removed: list[int]
    ) -> tuple[int, str] | None:
        """What follows each closing quote must be the separator, a line end or the end of
        the file, after whitespace Jackson skips (its bytes go into ``removed``). The
        first byte that is none of these, and why."""
        ends = closes[(closes >= 0) & (closes < cut)]
        if not len(ends):
            return None
        following = view[ends]
        fine = (following == self._separator) | (following == _LF) | (following == _CR)
        for end in ends[~fine].tolist():
            position = end
            while position < cut and _skipped(int(view[position]), self._separator):
                position += 1
            if position < cut and int(view[position]) not in (self._separator, _LF, _CR):
                return position, _text_after_quote(int(view[position]), self._separator)
            removed.extend(range(end, position))
        return None


_UNCLOSED = (
    "a quoted value that is never closed (Flink's reader fails on it too: Missing closing "
    "quote for value)"
)


def _blank_line(columns: int) -> str:
    return (
        f"a blank line, where a record of {columns} columns was expected (Flink's "
        "reader fails on it too: Row length mismatch)"
    )


def _text_after_quote(byte: int, separator: int) -> str:
    return (
        f"{chr(byte)!r} after the closing quote of a quoted value, where the column "
        f"separator {chr(separator)!r} or the end of the line was expected (Flink's reader "
        "fails on it too; only whitespace may follow a closing quote)"
    )


def _skipped(byte: int, separator: int) -> bool:
    """Whitespace Jackson skips after a closing quote: bytes up to the space, but line
    ends and the separator."""
    return byte <= _SPACE and byte not in (_LF, _CR, separator)


class _QuoteRuns:
    """A block's runs of quotes, each with what it does. A run of odd length at a value's
    start opens a quoted value outside one and closes it inside: it toggles. Elsewhere a
    run of odd length closes a quoted value inside one and is text outside: after it, the
    watch is outside either way. A run of even length leaves the state as it was (quotes
    doubled inside; an empty quoted value, or text, outside)."""

    def __init__(
        self,
        view: np.ndarray,
        starts: np.ndarray,
        lengths: np.ndarray,
        *,
        separator: int,
        origin: int,
        value_start: bool,
        inside: bool,
    ) -> None:
        self.starts = starts
        odd = (lengths & 1).astype(bool)
        at_value_start = np.empty(len(starts), dtype=bool)
        if len(starts):
            previous = view[np.maximum(starts - 1, 0)]
            at_value_start[:] = (previous == separator) | (previous == _LF) | (previous == _CR)
            if starts[0] == origin:
                at_value_start[0] = value_start
        toggles = np.cumsum(odd & at_value_start)
        resets = np.where(odd & ~at_value_start, np.arange(len(starts)), -1)
        last_reset = np.maximum.accumulate(resets) if len(resets) else resets
        since: np.ndarray = toggles - np.where(
            last_reset >= 0, toggles[np.maximum(last_reset, 0)], 0
        )
        # Whether a quoted value is open after each run, and before it.
        self.after = ((last_reset < 0) & inside) ^ (since & 1).astype(bool)
        self.before = np.empty(len(starts), dtype=bool)
        if len(starts):
            self.before[0] = inside
            self.before[1:] = self.after[:-1]
        closing = (self.before & odd) | (~self.before & at_value_start & ~odd)
        # Where the bytes after each closing run start; -1 for the others.
        self.closes = np.where(closing, starts + lengths, -1)

    def inside_at(self, positions: np.ndarray, inside: bool) -> np.ndarray:
        """Whether each position (no quote) is inside a quoted value."""
        if not len(self.starts):
            return np.full(len(positions), inside, dtype=bool)
        run = np.searchsorted(self.starts, positions) - 1
        return np.where(run >= 0, self.after[np.maximum(run, 0)], inside)

    def last_opened(self) -> int | None:
        """Where the last run that opened a quoted value starts, if one is open after it."""
        if not len(self.after) or not self.after[-1]:
            return None
        opened = np.flatnonzero(~self.before & self.after)
        return int(self.starts[opened[-1]]) if len(opened) else None


class _Lines:
    """A block's line ends outside quoted values, a ``\\r\\n`` counted once (it may be
    split between two blocks)."""

    def __init__(self, view: np.ndarray, ends: np.ndarray, after_cr: bool, origin: int) -> None:
        self._ends = ends
        is_cr = view[ends] == _CR
        follows_cr = np.empty(len(ends), dtype=bool)
        if len(ends):
            follows_cr[0] = after_cr and ends[0] == 0
            follows_cr[1:] = (ends[1:] - ends[:-1] == 1) & is_cr[:-1]
        lf_of_crlf = follows_cr & ~is_cr
        with_lf = np.zeros(len(ends), dtype=bool)
        with_lf[:-1] = lf_of_crlf[1:]
        keep = ~lf_of_crlf
        self.at = ends[keep]  # the first byte of each line end
        self.last_byte = self.at + with_lf[keep]  # its last byte
        self._starts_with_lf_of_crlf = bool(len(ends) and lf_of_crlf[0])
        self._origin = origin
        self._view = view

    def before(self, position: int) -> int:
        """Lines ended before ``position``."""
        return int(np.searchsorted(self.at, position))

    def first_blank(self, line_open: bool) -> int | None:
        """The lines ended before the first blank line; None without one."""
        if not len(self.at):
            return None
        line_starts = np.empty(len(self.at), dtype=np.int64)
        line_starts[0] = 1 if self._starts_with_lf_of_crlf else self._origin
        line_starts[1:] = self.last_byte[:-1] + 1
        blank = self.at == line_starts
        if line_starts[0] == 0 and line_open:
            blank[0] = False  # its line began in the last block
        return int(np.argmax(blank)) if blank.any() else None

    def state_after(self, cut: int, line_open: bool) -> tuple[int, bool, bool]:
        """(lines ended, a line open, the last byte a \\r ending a line) after
        ``view[:cut]``, from ``line_open`` before it."""
        if not len(self.at):
            if len(self._ends):  # only the \n of the last block's \r\n
                return 0, cut > 1, False
            return 0, line_open or cut > 0, False
        last = int(self.last_byte[-1])
        return len(self.at), last + 1 < cut, last == cut - 1 and self._view[last] == _CR
