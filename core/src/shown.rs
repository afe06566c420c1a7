//! How a text is shown to people (the CLI's tables, the HTTP API's problem details, the core's
//! error messages, `repr` in Python): the characters that a new queue name refuses as control or
//! invisible ones escaped, every other one as it is. One rule with the names' (session 10, tester
//! T2: the flags of England, Scotland and Wales, which names allow, showed as a black flag and
//! escaped tags), so that a hidden character cannot make one name look like another and what a
//! name may hold shows as typed.

use std::fmt;
use std::str::Chars;

use crate::validate::{after_flag_tags, is_hidden};

/// Each character of `text`, in order, with whether it is shown escaped: a control character
/// (C0, DEL, C1) or an invisible one ([`crate::validate`]'s `is_hidden`: format characters, other
/// default-ignorable ones, line and paragraph separators), but the tags of a flag of England,
/// Scotland or Wales (U+1F3F4, the tags spelling `gbeng`, `gbsct` or `gbwls`, U+E007F). The
/// joiners U+200C, U+200D and the variation selectors are not escaped (`👩\u{200d}💻`,
/// `\u{2764}\u{fe0f}`, a Persian word with U+200C). Exactly the characters for which a new queue
/// name is refused as holding a control or invisible character.
pub fn shown(text: &str) -> Shown<'_> {
    Shown {
        chars: text.chars(),
        flag: 0,
    }
}

/// The iterator of [`shown`].
#[derive(Debug, Clone)]
pub struct Shown<'a> {
    chars: Chars<'a>,
    /// Bytes of the rest that are a flag's tags, shown as they are.
    flag: usize,
}

impl Iterator for Shown<'_> {
    type Item = (char, bool);

    fn next(&mut self) -> Option<(char, bool)> {
        // No slicing of the text: its panic path formats with `Debug`, whose Unicode tables weigh
        // about 4 kB gzipped in the npm package's WebAssembly (63 488 B against 59 337 B).
        let c = self.chars.next()?;
        if self.flag > 0 {
            self.flag -= c.len_utf8();
            return Some((c, false));
        }
        if c == '\u{1F3F4}' {
            let rest = self.chars.as_str();
            self.flag = rest.len() - after_flag_tags(rest).len();
        }
        Some((c, c.is_control() || is_hidden(c)))
    }
}

/// Writes `c` as every place that shows people a text writes a character [`shown`] escapes: the
/// core's error messages ([`crate::Quoted`]), the CLI's tables, the HTTP API's problem details,
/// `repr` in Python and the console: `\t`, `\n`, `\r`; `\x1b` in Latin-1, `\u202e` up to U+FFFF,
/// `\U000e0041` past it (as Python writes them), so an operator finds in a log the text a table
/// showed; `"` and `\` as `\"` and `\\` (for a quoted text). A loop over hex digits, no
/// formatting machinery: the npm package's WebAssembly has a size budget, and its module stays
/// as large as with Rust's `\u{200b}` before, 59 832 B gzipped (`write!` with `{:02x}`,
/// `{:04x}`, `{:08x}` made it 44 B larger).
pub fn escape(out: &mut impl fmt::Write, c: char) -> fmt::Result {
    let code = u32::from(c);
    let (kind, mut shift) = match c {
        '\t' => ('t', 0),
        '\n' => ('n', 0),
        '\r' => ('r', 0),
        '"' | '\\' => (c, 0),
        '\0'..='\u{ff}' => ('x', 8),
        '\u{100}'..='\u{ffff}' => ('u', 16),
        _ => ('U', 32),
    };
    // The errors joined with `and`: returned at once with `?`, the .wasm was 6 B larger.
    let mut done = out.write_char('\\').and(out.write_char(kind));
    while shift > 0 {
        shift -= 4;
        let digit = b"0123456789abcdef"[(code >> shift) as usize & 0xF];
        done = done.and(out.write_char(char::from(digit)));
    }
    done
}

#[cfg(test)]
mod tests {
    use super::shown;
    use crate::{Arg, EnqueueArgs, Limits};

    fn escaped(text: &str) -> String {
        shown(text)
            .map(|(c, hidden)| {
                if hidden {
                    format!("<{:x}>", u32::from(c))
                } else {
                    c.into()
                }
            })
            .collect()
    }

    /// The tags of `letters` (each ASCII letter's code point plus U+E0000).
    fn tags(letters: &str) -> String {
        letters
            .chars()
            .filter_map(|c| char::from_u32(u32::from(c) + 0xE0000))
            .collect()
    }

    #[test]
    fn what_names_allow_shows_as_typed_and_what_they_refuse_escaped() {
        let end = "\u{E007F}";
        let flags = ["gbeng", "gbsct", "gbwls"].map(|f| format!("\u{1F3F4}{}{end}", tags(f)));
        let persian = "\u{645}\u{6cc}\u{200c}\u{62e}\u{648}\u{627}\u{647}\u{645}";
        let typed = [
            flags[0].clone(),
            flags[1].clone(),
            flags[2].clone(),
            format!("{}{}", flags[0], flags[2]),
            format!("jobs {} x", flags[1]),
            "\u{1F469}\u{200D}\u{1F4BB}".into(),
            "\u{2764}\u{FE0F}".into(),
            persian.into(),
            "emails".into(),
        ];
        for name in typed {
            assert_eq!(escaped(&name), name);
        }
        let black = "\u{1F3F4}";
        let wales = tags("gbwls");
        for (name, shown) in [
            ("a\u{200B}b".to_owned(), "a<200b>b".to_owned()),
            ("x\u{202E}y".into(), "x<202e>y".into()),
            ("emails\u{3164}".into(), "emails<3164>".into()),
            ("tab\tnl\n".into(), "tab<9>nl<a>".into()),
            // Tags spelling another flag, or not ended, or alone: escaped.
            (
                format!("{black}{}{end}", tags("abc")),
                format!("{black}<e0061><e0062><e0063><e007f>"),
            ),
            (
                format!("{black}{}", tags("gbeng")),
                format!("{black}<e0067><e0062><e0065><e006e><e0067>"),
            ),
            (tags("gbeng"), "<e0067><e0062><e0065><e006e><e0067>".into()),
            (
                format!("{black}{wales}{end}{end}"),
                format!("{black}{wales}{end}<e007f>"),
            ),
        ] {
            assert_eq!(escaped(&name), shown, "{name:?}");
        }
    }

    /// One rule: a name between letters is refused as holding a control or invisible character
    /// exactly when `shown` escapes one of its characters, for every code point and the flags.
    #[test]
    fn shown_escapes_exactly_what_a_new_name_refuses_as_hidden() {
        let refused = |name: &str| {
            EnqueueArgs::new(&Arg::Str(name), &[], false, &Limits::default()).is_err_and(|e| {
                e.field_errors()
                    .iter()
                    .any(|f| f.message.starts_with("must not contain"))
            })
        };
        let escapes = |name: &str| shown(name).any(|(_, hidden)| hidden);
        let mut names: Vec<String> = (0..=0x10_FFFF)
            .filter_map(char::from_u32)
            .map(|c| format!("a{c}b"))
            .collect();
        for letters in [
            "gbeng",
            "gbsct",
            "gbwls",
            "gbenx",
            "abcde",
            "gbeng\u{7f}",
            "gb",
        ] {
            let tagged = tags(letters);
            names.push(format!("a\u{1F3F4}{tagged}\u{E007F}b"));
            names.push(format!("a\u{1F3F4}{tagged}b"));
        }
        for name in &names {
            assert_eq!(escapes(name), refused(name), "{name:?}");
        }
    }
}
