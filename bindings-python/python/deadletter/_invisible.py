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


def low(char: str) -> bool:
    """Below U+0530: ASCII, Latin, Greek, Cyrillic, which no joiner joins and no variation selector
    varies in a name."""
    return ord(char) < 0x530


def look_alike(before: str, char: str, after: str) -> bool:
    """Whether ``char``, between ``before`` and ``after`` (a space at a name's ends), makes a queue
    name read as another: the core's ``look_alike`` (core/src/validate.rs; session 11, tester T3).
    A joiner after a `low` character or a joiner, or before one of those or a variation selector
    (``ema\\u200dils``); a variation selector after a `low` character (but U+00A9, U+00AE and a
    keycap's base before U+20E3), a joiner or another selector (``ema\\ufe0fils``); white space but
    U+0020 (``a\\u00a0b``); an accent of U+0300..U+036F after an ASCII letter (``cafe\\u0301``)."""
    if char in "\u200c\u200d":
        return bool(low(before) or before in "\u200c\u200d" or low(after) or JOINER.match(after))
    if JOINER.match(char):
        emoji = before in ("\u00a9", "\u00ae") or (before in "0123456789#*" and after == "\u20e3")
        return (low(before) and not emoji) or bool(JOINER.match(before))
    if char != " " and blank(char):
        return True
    return "\u0300" <= char <= "\u036f" and before.isascii() and before.isalpha()


def name(queue: str) -> str:
    """A queue name as the CLI's tables show it: `printable`, white space at either end escaped
    (all of it, in a name of only white space: ``emails\\x20``, ``\\x20``), and each character that
    makes it read as another name escaped (`look_alike`: ``jobs\\u200d``, ``ema\\u200dils``,
    ``a\\u2800b``, ``cafe\\u0301``). ``emails ``, ``ema\\u200dils`` and ``emails``, all stored
    before the rules, read alike otherwise (sessions 10 and 11, testers T2 and T3). A name shows as
    typed exactly when a new queue may take it, but for the control and invisible characters
    (`printable` escapes them) and the names ``.`` and ``..``. The console shows names the same way
    (``queueName`` of ``http/static/visible.js``)."""
    head = 0
    while head < len(queue) and blank(queue[head]):
        head += 1
    tail = len(queue)
    while tail > head and blank(queue[tail - 1]):
        tail -= 1
    shown, run = [], 0
    for i, char in enumerate(queue):
        before = queue[i - 1] if i else " "
        after = queue[i + 1] if i + 1 < len(queue) else " "
        edge = i < head or i >= tail
        if (edge or look_alike(before, char, after)) and printable(char) == char:
            shown.append(printable(queue[run:i]) + escaped(char))
            run = i + 1
    return "".join(shown) + printable(queue[run:])


def escaped(char: str) -> str:
    """``\\x1b`` for a character of Latin-1, ``\\u202e`` up to U+FFFF, ``\\U000e0041`` past it
    (as Python writes them)."""
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"
