"""The characters that show nothing or change how the rest of a line reads, as regular
expression class bodies (for `re` and for the OpenAPI document's ECMA-262 patterns): what queue
names refuse (the core's `validate::is_hidden` and `is_ignorable`, core/src/validate.rs), what
the CLI's tables escape (`deadletter.cli._output.printable`) and what the console shows escaped
(`http/static/visible.js`, the same set). U+202E turned ``Invoice \\u202efdp.exe`` into
``Invoice exe.pdf``, and a zero-width space made ``emails\\u200b`` read as ``emails``
(new-user findings N6, N7, session 7)."""

from __future__ import annotations

__all__ = ["CONTROLS", "HIDDEN", "IGNORABLE"]

CONTROLS = "\x00-\x1f\x7f-\x9f"
"""The C0 controls, DEL and the C1 controls (what a terminal obeys: ESC, BEL, OSC, ...)."""

HIDDEN = (
    "\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890-\u0891\u08e2\u180e\u200b\u200e-\u200f"
    "\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd"
    "\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001"
    "\U000e0020-\U000e007f"
)
"""Unicode's format characters (general category Cf, Unicode 16) but the joiners U+200C and
U+200D, which emoji sequences and scripts such as Persian need: the bidirectional controls, which
reorder what follows them, and invisible ones (ZERO WIDTH SPACE, WORD JOINER, the BOM, SOFT
HYPHEN, tags, ...)."""

IGNORABLE = (
    "\u034f\u115f-\u1160\u17b4-\u17b5\u180b-\u180d\u180f\u200c-\u200d\u2065\u3164"
    "\ufe00-\ufe0f\uffa0\ufff0-\ufff8\U000e0000\U000e0002-\U000e001f\U000e0080-\U000e0fff"
)
"""Unicode's Default_Ignorable_Code_Point characters that `HIDDEN` leaves out (the joiners,
variation selectors, Hangul fillers, ...): they show nothing either, so a queue name made only of
them and white space is refused, though they are allowed inside one."""
