// What the console shows of a text that came from the API or the URL: its invisible characters
// as visible escapes, as the CLI's tables show them (deadletter/_invisible.py: the same set).
// U+202E (right-to-left override) turned "Invoice \u202efdp.exe" into "Invoice exe.pdf", and a
// zero-width space made "emails\u200b" read as "emails" (new-user findings N6, N7 and M7,
// session 7): whoever can enqueue writes payloads, errors, groups and keys, and every text the
// console shows goes through `visible`. Line breaks and tabs stay: each view shows them its way.

/**
 * The C0 controls but tab, line feed and carriage return; DEL and the C1 controls; and what queue
 * names refuse as invisible (core/src/validate.rs is_hidden, Unicode 16): the format characters
 * (general category Cf: the bidirectional controls, zero-width spaces, the BOM, soft hyphens,
 * tags, ...), the other default-ignorable ones (the combining grapheme joiner, the Hangul fillers
 * U+115F, U+1160, U+3164, U+FFA0, ...) and the line and paragraph separators U+2028, U+2029; but
 * the joiners U+200C and U+200D and the variation selectors, which emoji and scripts such as
 * Persian need.
 */
export const HIDDEN = new RegExp(
  "[\\0-\\x08\\x0b\\x0c\\x0e-\\x1f\\x7f-\\x9f\\xad\\u034f\\u0600-\\u0605\\u061c\\u06dd" +
    "\\u070f\\u0890\\u0891\\u08e2\\u115f\\u1160\\u17b4\\u17b5\\u180e\\u200b\\u200e\\u200f" +
    "\\u2028-\\u202e\\u2060-\\u206f\\u3164\\ufeff\\uffa0\\ufff0-\\ufffb\\u{110bd}\\u{110cd}" +
    "\\u{13430}-\\u{1343f}\\u{1bca0}-\\u{1bca3}\\u{1d173}-\\u{1d17a}\\u{e0000}-\\u{e00ff}" +
    "\\u{e01f0}-\\u{e0fff}]",
  "gu",
);

/** `\x1b` for a character of Latin-1, `\u202e` up to U+FFFF, `\U000e0041` past it (as Python
 * and the CLI write them). */
export function escaped(char) {
  const code = char.codePointAt(0);
  const hex = code.toString(16);
  if (code < 0x100) return `\\x${hex.padStart(2, "0")}`;
  return code < 0x10000 ? `\\u${hex.padStart(4, "0")}` : `\\U${hex.padStart(8, "0")}`;
}

/**
 * A flag of England, Scotland or Wales: U+1F3F4, the tags spelling gbeng, gbsct or gbwls, U+E007F
 * (Unicode's recommended emoji tag sequences), which queue names allow (core/src/validate.rs
 * after_flag_tags) and so show as typed; any other tag is `HIDDEN` (session 10, tester T2).
 */
const FLAG = "\\u{1f3f4}\\u{e0067}\\u{e0062}(?:\\u{e0065}\\u{e006e}\\u{e0067}|\\u{e0073}\\u{e0063}\\u{e0074}|\\u{e0077}\\u{e006c}\\u{e0073})\\u{e007f}";
const SHOWN = new RegExp(`(${FLAG})|${HIDDEN.source}`, "gu");

/** `text` with every `HIDDEN` character escaped but a flag's tags; null and undefined as they
 * are. What the CLI's `printable` escapes (the core's `shown`), less tab and the line breaks. */
export const visible = (text) =>
  typeof text === "string" ? text.replace(SHOWN, (char, flag) => flag ?? escaped(char)) : text;

/** A joiner or variation selector (core/src/validate.rs is_joiner_or_selector). */
const JOINER = /^[\u180b-\u180d\u180f\u200c\u200d\ufe00-\ufe0f\u{e0100}-\u{e01ef}]$/u;
/** White space, or U+2800 BRAILLE PATTERN BLANK, which names count as white space (is_blank). */
const blank = (char) => /^\s$/u.test(char) || char === "\u2800";

/** Below U+0530: ASCII, Latin, Greek, Cyrillic, which no joiner joins and no variation selector
 * varies in a name. */
const low = (char) => char.codePointAt(0) < 0x530;
const joiner = (char) => char === "\u200c" || char === "\u200d";

/**
 * Whether `char`, between `before` and `after` (a space at a name's ends), makes a queue name read
 * as another: the core's look_alike (core/src/validate.rs; session 11, tester T3). A joiner after a
 * `low` character or a joiner, or before one of those or a variation selector (`ema\u200dils`); a
 * variation selector after a `low` character (but U+00A9, U+00AE and a keycap's base before
 * U+20E3), a joiner or another selector (`ema\ufe0fils`); white space but U+0020 (`a\u00a0b`); an
 * accent of U+0300..U+036F after an ASCII letter (`cafe\u0301`).
 */
function lookAlike(before, char, after) {
  if (joiner(char)) return low(before) || joiner(before) || low(after) || JOINER.test(after);
  if (JOINER.test(char)) {
    const keycap = /^[0-9#*]$/.test(before) && after === "\u20e3";
    const emoji = before === "\u00a9" || before === "\u00ae" || keycap;
    return (low(before) && !emoji) || JOINER.test(before);
  }
  if (char !== " " && blank(char)) return true;
  return /^[\u0300-\u036f]$/.test(char) && /^[A-Za-z]$/.test(before);
}

/**
 * A queue name as the console shows it: `visible`, white space at either end escaped (all of it,
 * in a name of only white space: `emails\x20`, `\x20`), and each character that makes it read as
 * another name escaped (`lookAlike`: `jobs\u200d`, `ema\u200dils`, `a\u2800b`, `cafe\u0301`).
 * `emails `, `ema\u200dils` and `emails`, all stored before the rules, read alike otherwise, in a
 * page more than anywhere (HTML drops trailing spaces). The CLI's tables show names the same way
 * (deadletter/_invisible.py `name`; sessions 10 and 11).
 */
export function queueName(queue) {
  if (typeof queue !== "string") return queue;
  const chars = [...queue];
  let head = 0;
  while (head < chars.length && blank(chars[head])) head += 1;
  let tail = chars.length;
  while (tail > head && blank(chars[tail - 1])) tail -= 1;
  let shown = "";
  let run = 0;
  chars.forEach((char, i) => {
    const [before, after] = [chars[i - 1] ?? " ", chars[i + 1] ?? " "];
    const edge = i < head || i >= tail;
    if ((edge || lookAlike(before, char, after)) && visible(char) === char) {
      shown += visible(chars.slice(run, i).join("")) + escaped(char);
      run = i + 1;
    }
  });
  return shown + visible(chars.slice(run).join(""));
}
