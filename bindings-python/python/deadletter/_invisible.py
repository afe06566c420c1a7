"""The characters that show nothing or change how the rest of a line reads, as regular
expression class bodies (for `re` and for the OpenAPI document's ECMA-262 patterns): what queue
names refuse (the core's `validate::is_hidden` and `is_joiner_or_selector`,
core/src/validate.rs), what the CLI's tables and the HTTP API's problem details escape
(`printable`) and what the console shows escaped (`http/static/visible.js`, the same set).
U+202E turned ``Invoice \\u202efdp.exe`` into ``Invoice exe.pdf``, and a zero-width space made
``emails\\u200b`` read as ``emails`` (new-user findings N6, N7, session 7); a Hangul filler made
``jobs\\u3164`` read as ``jobs``, and a line separator broke the line a name was shown on
(session 8)."""

from __future__ import annotations

import re

from ._deadletter import printable as _printable

__all__ = ["CONTROLS", "HIDDEN", "IGNORABLE", "escaped", "name", "printable"]

CONTROLS = "\x00-\x1f\x7f-\x9f"
"""The C0 controls, DEL and the C1 controls (what a terminal obeys: ESC, BEL, OSC, ...)."""

HIDDEN = (
    "\u00ad\u034f\u0600-\u0605\u061c\u06dd\u070f\u0890-\u0891\u08e2\u115f-\u1160\u17b4-\u17b5"
    "\u180e\u200b\u200e-\u200f\u2028-\u202e\u2060-\u206f\u3164\ufeff\uffa0\ufff0-\ufffb"
    "\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"
    "\U000e0000-\U000e00ff\U000e01f0-\U000e0fff"
)
"""The core's `validate::is_hidden`, from Unicode 16: the format characters (general category Cf:
the bidirectional controls, which reorder what follows them, and invisible ones such as ZERO
WIDTH SPACE, WORD JOINER, the BOM, SOFT HYPHEN, tags), the other Default_Ignorable_Code_Point
characters (the combining grapheme joiner U+034F, the Hangul fillers U+115F, U+1160, U+3164,
U+FFA0, the Khmer inherent vowels U+17B4, U+17B5, the code points kept ignorable) and the line
and paragraph separators U+2028, U+2029 (Zl, Zp); but the joiners and the variation selectors
(`IGNORABLE`)."""

IGNORABLE = (
    "\u180b-\u180d\u180f\u200c-\u200d\ufe00-\ufe0f\U000e0100-\U000e01ef"
)
"""The Default_Ignorable_Code_Point characters that `HIDDEN` leaves out: the joiners U+200C and
U+200D (emoji sequences and scripts such as Persian need them) and the variation selectors
(emoji need U+FE0F; Mongolian's U+180B..U+180F but U+180E; the ideographic U+E0100..U+E01EF).
They show nothing alone, so a queue name made only of them and white space is refused, though
they are allowed inside one."""


SURROGATE = re.compile("[\ud800-\udfff]")
"""A lone surrogate (a file name or argument that was not UTF-8, decoded with
``surrogateescape``), which no queue holds and the core cannot read: escaped here."""


def printable(text: str) -> str:
    """``text`` with every character that a new queue name refuses as a control or invisible one
    escaped, ``\\n``, ``\\r``, ``\\t``, ``\\x1b`` or ``\\u202e``, and every other one as it is: the
    core's rule (`_deadletter.printable`), so the joiners, the variation selectors and the tags of
    the flags of England, Scotland and Wales, which names allow, show as typed (session 10, tester
    T2: the flags showed as a black flag and escaped tags). People's output is one line per value,
    in order, and never drives the terminal (payloads and errors come from whoever can enqueue).
    ``--json`` escapes its own way."""
    try:
        return _printable(text)
    except UnicodeEncodeError:
        return _printable(SURROGATE.sub(lambda m: escaped(m.group()), text))


JOINER = re.compile("[\u180b-\u180d\u180f\u200c\u200d\ufe00-\ufe0f\U000e0100-\U000e01ef]")
"""A joiner or variation selector (core/src/validate.rs ``is_joiner_or_selector``)."""


def blank(char: str) -> bool:
    """White space, or U+2800 BRAILLE PATTERN BLANK, which the core counts as white space in
    names (``is_blank``)."""
    return char.isspace() or char == "\u2800"


def name(queue: str) -> str:
    """A queue name as the CLI's tables show it: `printable`, and what reads as nothing at either
    end escaped: white space (all of it, in a name of only white space), a joiner or variation
    selector first, a joiner last, variation selectors last after an ASCII character or white
    space (the core's ``loose_end``): ``emails\\x20``, ``jobs\\u200d``. ``emails ``,
    ``jobs\u200d`` and ``emails``, all stored by 0.1.0, read alike otherwise (session 10, tester
    T2). The console shows names the same way (``queueName`` of ``http/static/visible.js``)."""
    shown = printable(queue)
    head = 0
    while head < len(shown) and (blank(shown[head]) or JOINER.match(shown[head])):
        head += 1
    tail = len(shown)
    while tail > head and blank(shown[tail - 1]):
        tail -= 1
    if tail == len(shown):  # no white space last: joiners or selectors joining or varying nothing?
        run = tail
        while run > head and JOINER.match(shown[run - 1]):
            run -= 1
        before = shown[run - 1] if run > head else " "
        if run < tail and (shown[tail - 1] in "\u200c\u200d" or before.isascii() or blank(before)):
            tail = run
    return escape_all(shown[:head]) + shown[head:tail] + escape_all(shown[tail:])


def escape_all(text: str) -> str:
    """Each character of ``text`` `escaped`."""
    return "".join(map(escaped, text))


def escaped(char: str) -> str:
    """``\\x1b`` for a character of Latin-1, ``\\u202e`` up to U+FFFF, ``\\U000e0041`` past it
    (as Python writes them)."""
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"
