"""How queue names reach people (session 10, tester T2): the CLI's tables, the HTTP API's problem
details, ``repr`` of a message and the console (``visible.js``, run here in Node) show exactly the
characters a new queue name refuses escaped, and what it allows as typed: the flags of England,
Scotland and Wales, emoji joined by U+200D, U+FE0F, a Persian word with U+200C. One list of names
for all of them; the core's rule (`_deadletter.printable`) against the console's for every code
point. The CLI's tables also escape the white space at either end of a name (``emails\\x20``)."""

from __future__ import annotations

import io
import json
import shutil
import sqlite3
import re
import subprocess
from contextlib import closing
from pathlib import Path
from typing import Any
from urllib.parse import quote

import deadletter
import pytest
from deadletter import cli
from deadletter.cli import _output
from deadletter._deadletter import check_new_queue
from deadletter import _invisible
from deadletter._invisible import printable
from http_client import client_of, problem
from virtual_clock import Clock

VISIBLE = Path(deadletter.__file__).parent / "http" / "static" / "visible.js"


def tags(letters: str) -> str:
    """The tag characters spelling ``letters`` (each ASCII letter's code point plus U+E0000)."""
    return "".join(chr(0xE0000 + ord(c)) for c in letters)


BLACK, END = "\U0001f3f4", "\U000e007f"
ENGLAND, SCOTLAND, WALES = (BLACK + tags(f) + END for f in ("gbeng", "gbsct", "gbwls"))
TYPED = [
    ENGLAND,
    SCOTLAND,
    WALES,
    f"reports {WALES} daily",
    "\U0001f469\u200d\U0001f4bb",
    "\u2764\ufe0f",
    "\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645",  # Persian, with ZERO WIDTH NON-JOINER
    "emails",
]
"""Names a new queue takes, shown as typed."""
ESCAPED = {
    "a\u200bb": r"a\u200bb",
    "x\u202ey": r"x\u202ey",
    "emails\u3164": r"emails\u3164",
    BLACK + tags("abc") + END: BLACK + r"\U000e0061\U000e0062\U000e0063\U000e007f",
    BLACK + tags("gbeng"): BLACK + r"\U000e0067\U000e0062\U000e0065\U000e006e\U000e0067",
}
"""Names a new queue refuses (0.1.0 stored them), as they are shown."""
SHOWN = {**{name: name for name in TYPED}, **ESCAPED}


def node_json(body: str, stdin: str = "") -> Any:
    """What ``body``, an ES module that sees the console's visible.js as ``shown``,
    writes to standard output as JSON, run in Node (the test is skipped without Node)."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    script = f"import * as shown from {json.dumps(VISIBLE.as_uri())};\n{body}"
    done = subprocess.run(
        [node, "--input-type=module", "-e", script],
        input=stdin,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout)


def console(texts: list[str], function: str = "visible") -> list[str]:
    """``function(text)`` of the console's visible.js (``visible``, ``queueName``) for each of
    ``texts``, in Node."""
    body = (
        "import { readFileSync } from 'node:fs';\n"
        "const texts = JSON.parse(readFileSync(0, 'utf8'));\n"
        f"process.stdout.write(JSON.stringify(texts.map(shown.{function})));\n"
    )
    result: list[str] = node_json(body, json.dumps(texts))
    return result


def test_the_cli_and_the_api_show_what_names_allow_as_typed_and_escape_the_rest() -> None:
    assert {name: printable(name) for name in SHOWN} == SHOWN
    for name in TYPED:
        check_new_queue(name)
    for name in ESCAPED:
        with pytest.raises(deadletter.ValidationError) as refused:
            check_new_queue(name)
        assert [(e["field"], e["code"]) for e in refused.value.errors] == [("queue", "invalid")]


def test_the_console_shows_the_same_list_the_same_way() -> None:
    assert console(list(SHOWN)) == list(SHOWN.values())


def test_the_console_escapes_what_the_core_escapes_for_every_code_point() -> None:
    """Each code point between two letters: escaped by visible.js exactly when the core's rule
    escapes it (but tab and the line breaks, which the console shows its own way)."""
    codes = [c for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF and chr(c) not in "\t\n\r"]
    texts = [f"a{chr(c)}b" for c in codes]
    core = [c for c, text in zip(codes, texts) if printable(text) != text]
    body = (
        "const escaped = [];\n"
        "for (let c = 0; c < 0x110000; c += 1) {\n"
        "  if ((c >= 0xd800 && c <= 0xdfff) || c === 9 || c === 10 || c === 13) continue;\n"
        "  const text = `a${String.fromCodePoint(c)}b`;\n"
        "  if (shown.visible(text) !== text) escaped.push(c);\n"
        "}\n"
        "process.stdout.write(JSON.stringify(escaped));\n"
    )
    assert node_json(body) == core
    assert len(core) > 4000  # the controls, format and other ignorable characters


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = cli.main(list(argv), out=out, err=err)
    return status, out.getvalue(), err.getvalue()


def test_the_cli_tables_show_names_as_typed_escaped_and_with_their_edge_spaces(
    tmp_path: Path,
) -> None:
    """0.1.0 took any name: ``emails `` and ``emails`` read alike in ``stats`` (and ``\\x20``
    alone as an empty cell); their white space at either end is escaped now."""
    file = tmp_path / "names.db"
    old = [*ESCAPED, "emails ", " emails", " ", "a b"]
    with deadletter.open(file) as db:
        for name in [*TYPED, *(f"old {n}" for n in range(len(old)))]:
            db.queue(name).enqueue("x")
    with closing(sqlite3.connect(file)) as raw, raw:  # names stored before the rules
        for n, name in enumerate(old):
            raw.execute("UPDATE messages SET queue = ? WHERE queue = ?", (name, f"old {n}"))
    status, out, _ = run("stats", str(file))
    assert status == 0
    shown = sorted(line.split("  ")[0] for line in out.splitlines()[1:])
    expected = [*SHOWN.values(), r"emails\x20", r"\x20emails", r"\x20", "a b"]
    assert shown == sorted(_output.cell(text, _output.CELL_WIDTH) for text in expected)  # cut
    status, out, _ = run("show", str(file), "emails ", str(len(TYPED) + len(ESCAPED) + 1))
    assert status == 0 and re.split(r"\s{2,}", out.splitlines()[1]) == ["queue", r"emails\x20"]
    # A flag takes the two columns of its black flag: its tags take none (they counted one each).
    assert [_output.shown_width(flag) for flag in (ENGLAND, SCOTLAND, WALES)] == [2, 2, 2]


def test_repr_of_a_message_shows_its_texts_by_the_same_rule() -> None:
    q = deadletter.open().queue(WALES)
    m = q.enqueue("pay \u202egnp.exe \u2764\ufe0f it's")
    assert repr(m).startswith(
        f"<deadletter.Message id=1 queue='{WALES}' status='pending' retry_count=0/3 "
        "payload=\"pay \\u202egnp.exe \u2764\ufe0f it's\""
    )


def test_repr_of_a_queue_its_stats_and_its_messages_show_its_name_alike(tmp_path: Path) -> None:
    """Session 11 (tester T3): ``repr`` of ``QueueStats`` and of ``Queue`` were Python's, which
    escapes the joiners and a flag's tags that ``repr`` of a message shows as typed."""
    file, clock = tmp_path / "names.db", Clock()
    with deadletter.open(file, clock=clock) as db:
        for n in range(len(SHOWN)):
            db.queue(f"q{n}").enqueue("x")
    with closing(sqlite3.connect(file)) as raw, raw:  # names stored before the rules
        for n, name in enumerate(SHOWN):
            raw.execute("UPDATE messages SET queue = ? WHERE queue = ?", (name, f"q{n}"))
    with deadletter.open(file, clock=clock) as db:
        for n, (name, shown) in enumerate(SHOWN.items()):
            q = db.queue(name)
            reprs = [repr(q), repr(q.stats()), repr(q.get(n + 1))]
            assert [r.count(f"'{shown}'") for r in reprs] == [1, 1, 1], reprs
            assert reprs[:2] == [
                f"<deadletter.Queue '{shown}'>",
                f"<deadletter.QueueStats queue='{shown}' pending=1 processing=0 succeeded=0 "
                "dead=0 expired=0 delayed=0 oldest_due_age=0:00:00>",
            ]


def test_the_cores_errors_quote_names_as_the_cli_tables_show_them() -> None:
    """Session 11 (tester T3): the core wrote Rust's ``\\u{200b}`` where the CLI's tables, the
    HTTP API's details and the console write ``\\u200b``, so a name seen in a table was not found
    in a log. Astral characters as ``\\U000e0061``, controls as ``\\x7f``, ``\\t``."""
    db = deadletter.open()
    shown = {**SHOWN, "tab\t del\x7f c1\x85": r"tab\t del\x7f c1\x85"}
    for name, escaped in shown.items():
        with pytest.raises(deadletter.NotFoundError) as raised:
            db.queue(name).get(99)
        assert str(raised.value) == f'message 99 not found in queue "{escaped}"'
        assert escaped == printable(name)


def test_the_api_404_of_no_queue_shows_names_as_typed() -> None:
    db = deadletter.open()
    db.queue(ENGLAND).enqueue("x")
    client = client_of(db, Clock())
    r = client.post(f"/queues/{quote(SCOTLAND, safe='')}/pause")
    assert problem(r, 404, "not_found")["detail"] == (
        f'no queue "{SCOTLAND}" (it holds no message and no settings); queues: "{ENGLAND}"; '
        "give create=true to create it"
    )


EDGES = {
    "emails ": r"emails\x20",
    " ": r"\x20",
    "emails\u2800": r"emails\u2800",
    "jobs\u200d": r"jobs\u200d",
    "\u200djobs": r"\u200djobs",
    "jobs\ufe0f": r"jobs\ufe0f",
    "\ufe0fjobs": r"\ufe0fjobs",
    "x\u200c": r"x\u200c",
    "jobs \ufe0f": r"jobs \ufe0f",
    "\u2764\ufe0f": "\u2764\ufe0f",
    "#\ufe0f\u20e3": "#\ufe0f\u20e3",
    "\u845b\U000e0100": "\u845b\U000e0100",
    "\U0001f469\u200d\U0001f4bb": "\U0001f469\u200d\U0001f4bb",
    "a b": "a b",
    # Session 11 (tester T3): what joins, varies or spaces nothing inside a name, an accent.
    "ema\u200dils": r"ema\u200dils",
    "ema\ufe0fils": r"ema\ufe0fils",
    "caf\u00e9\ufe0f": "caf\u00e9" + r"\ufe0f",
    "cafe\u0301": r"cafe\u0301",
    "\U0001f469\u200d\ufe0f": "\U0001f469" + r"\u200d\ufe0f",
    "a\u2800b": r"a\u2800b",
    "a\u00a0b": r"a\xa0b",
    "\u2764\ufe0f\ufe0f": "\u2764\ufe0f" + r"\ufe0f",
    "\u2764\ufe0f\u200d\U0001f525": "\u2764\ufe0f\u200d\U0001f525",
    "\u0915\u094d\u200d\u0937": "\u0915\u094d\u200d\u0937",
    "caf\u00e9": "caf\u00e9",
    "\u00ae\ufe0f": "\u00ae\ufe0f",
}
"""Queue names with what reads as nothing at an end (white space, a joiner or variation selector)
or that read as another name (a joiner or variation selector that joins or varies nothing, white
space but U+0020, an accent after an ASCII letter: the core's ``look_alike``), as the CLI's tables
and the console show them, and names whose joiners and selectors join or vary something, shown as
typed."""


def test_the_cli_and_the_console_escape_what_reads_as_nothing_at_a_names_ends() -> None:
    """Session 10: ``jobs\\u200d`` and ``jobs\\ufe0f`` (0.1.0 stored them) showed as ``jobs`` in
    the CLI's tables, and ``emails `` as ``emails`` in the console (HTML drops the space)."""
    assert {text: _invisible.name(text) for text in EDGES} == EDGES
    for text in EDGES:  # what shows as typed is what a new name takes
        refused = EDGES[text] != text
        try:
            check_new_queue(text)
        except deadletter.ValidationError:
            assert refused, ascii(text)
        else:
            assert not refused, ascii(text)
    assert console(list(EDGES), "queueName") == list(EDGES.values())


def test_a_name_shows_as_typed_exactly_when_a_new_queue_takes_it_for_each_code_point() -> None:
    """Session 11 (tester T3): ``ema\\u200dils``, ``a\\u2800b`` and ``cafe\\u0301`` (stored
    before the rule) showed as ``emails``, ``a b`` and ``caf\\u00e9`` in the CLI's tables and the
    console. Each code point below U+3100 and the joiners, selectors and blanks above it, between
    ASCII letters, Latin-1 letters, ideographs, emoji, a keycap's base and U+20E3, at either end:
    the CLI's tables (``_invisible.name``) and the console (``queueName``) show the name escaped
    exactly when the core refuses it as a new queue's."""
    codes = [*range(0x3100), *range(0xFE00, 0xFE10), *range(0xE0100, 0xE01F0), 0x3164, 0xFEFF]
    codes += [0x20E3, 0x1F3FB, 0x1F525, 0xE0067, 0xE007F]
    contexts = ["a{}b", "\u00e9{}\u00e9", "\u845b{}\u845b", "\U0001f469{}\U0001f4bb", "#{}\u20e3"]
    contexts += ["x{}", "{}x"]
    texts = [
        context.format(chr(code))
        for code in codes
        if not 0xD800 <= code <= 0xDFFF and chr(code) not in "\t\n\r"  # the console's own way
        for context in contexts
    ]
    refused = []
    for text in texts:
        try:
            check_new_queue(text)
        except deadletter.ValidationError:
            refused.append(text)
    escaped = [text for text in texts if _invisible.name(text) != text]
    assert escaped == refused
    assert len(refused) > 2_000  # controls, invisible ones, joiners, selectors, blanks, accents
    shown = console(texts, "queueName")
    assert [text for text, seen in zip(texts, shown) if seen != text] == refused
    assert shown == [_invisible.name(text) for text in texts]
