//! Every argument rule, applied to [`Arg`]s. All rejected fields of a call are reported together.

use crate::arg::Arg;
use crate::error::{Error, FieldError, Quoted, Result};
use crate::message::{Id, Millis, Status};

/// Longest queue name, in characters.
pub const MAX_QUEUE_CHARS: usize = 255;
/// Allowed `max_retries`, and the default.
pub const MAX_RETRIES_RANGE: (i64, i64) = (1, 10);
/// Default `max_retries`.
pub const DEFAULT_MAX_RETRIES: i64 = 3;
/// Longest lease (visibility timeout): 12 hours, in milliseconds.
pub const MAX_LEASE_MS: i64 = 12 * 3600 * 1000;
/// Default lease: 30 s.
pub const DEFAULT_LEASE_MS: i64 = 30_000;
/// Default payload limit: 1 MiB of UTF-8.
pub const DEFAULT_MAX_PAYLOAD_BYTES: i64 = 1 << 20;
/// Largest payload limit a database may be opened with: 64 MiB.
pub const MAX_PAYLOAD_LIMIT: i64 = 64 << 20;
/// `list` page size: allowed range and default.
pub const LIST_LIMIT_RANGE: (i64, i64) = (1, 1000);
/// Default `list` page size.
pub const DEFAULT_LIST_LIMIT: i64 = 100;
/// Longest idempotency key, in characters.
pub const MAX_IDEMPOTENCY_KEY_CHARS: usize = 255;
/// Longest enqueue delay and backoff: 30 days, in milliseconds.
pub const MAX_DELAY_MS: i64 = 30 * 86_400_000;
/// Longest expiry of a message (`expires_in`): 365 days, in milliseconds.
pub const MAX_EXPIRES_IN_MS: i64 = 365 * 86_400_000;
/// Longest group name, in characters (the idempotency key's limit).
pub const MAX_GROUP_CHARS: usize = MAX_IDEMPOTENCY_KEY_CHARS;
/// Most messages in one `enqueue_many`.
pub const MAX_BATCH: usize = 1000;
/// Most messages in one `claim_many`.
pub const MAX_CLAIM_MANY: i64 = 100;
/// The earliest instant a message can hold: 0001-01-01T00:00:00Z in UTC milliseconds (Python's
/// `datetime.min`; JavaScript's `Date` reaches further).
pub const MIN_TIME: Millis = -62_135_596_800_000;
/// The latest instant a message can hold: 9999-12-31T23:59:59.999Z (Python's `datetime.max`,
/// to the millisecond). Every stored timestamp, and so every `now` and every instant derived from
/// it (`now + lease`, `now + backoff`, `now + delay`), is within [`MIN_TIME`]..=[`MAX_TIME`].
pub const MAX_TIME: Millis = 253_402_300_799_999;

/// Why NUL is refused in names, keys and error texts: not every store can hold it (PostgreSQL's
/// `text` cannot), and a message must mean the same in every store.
const NUL: &str = "must not contain NUL (U+0000): not every store can hold it";

/// Collects field errors while arguments are read.
#[derive(Default)]
pub(crate) struct Check {
    errors: Vec<FieldError>,
}

impl Check {
    /// A check of a call made at `now`: starts with the clock's range.
    pub(crate) fn at(now: Millis) -> Self {
        let mut check = Self::default();
        check.now(now);
        check
    }

    fn reject(&mut self, field: &'static str, code: &'static str, message: String) {
        self.errors.push(FieldError {
            field,
            code,
            message,
            index: None,
        });
    }

    /// Marks every field error added from `from` on as belonging to batch item `index`.
    pub(crate) fn tag_item(&mut self, from: usize, index: usize) {
        for error in &mut self.errors[from..] {
            error.index = Some(index);
        }
    }

    /// How many field errors were collected so far.
    pub(crate) fn len(&self) -> usize {
        self.errors.len()
    }

    /// The clock's `now`: within [`MIN_TIME`]..=[`MAX_TIME`].
    pub(crate) fn now(&mut self, now: Millis) {
        if !(MIN_TIME..=MAX_TIME).contains(&now) {
            self.reject("clock", "out_of_range", clock_message(&now));
        }
    }

    /// A number (integer or float) in `range`, or `default` when `Null`.
    pub(crate) fn number(
        &mut self,
        field: &'static str,
        arg: &Arg<'_>,
        (min, max): (f64, f64),
        default: f64,
    ) -> f64 {
        #[allow(clippy::cast_precision_loss)] // a range check: rounding is harmless
        let value = match *arg {
            Arg::Null => return default,
            Arg::Int(n) => n as f64,
            Arg::BigInt => f64::INFINITY,
            Arg::Float(f) if !f.is_nan() => f,
            ref other => {
                self.wrong_type(field, "a number", other);
                return default;
            }
        };
        if (min..=max).contains(&value) {
            value
        } else {
            // The ranges are of whole numbers: said as integers (no float formatting code in the
            // WebAssembly build).
            #[allow(clippy::cast_possible_truncation)]
            let (min, max) = (min as i64, max as i64);
            self.reject(
                field,
                "out_of_range",
                format!("must be between {min} and {max}"),
            );
            default
        }
    }

    /// A string naming one of `choices`, or `default` when `Null`; anything else is `invalid`.
    pub(crate) fn one_of<T: Copy>(
        &mut self,
        field: &'static str,
        arg: &Arg<'_>,
        choices: &[(&str, T)],
        default: T,
    ) -> T {
        let Some(name) = self.opt_string(field, arg) else {
            return default;
        };
        if let Some((_, value)) = choices.iter().find(|(n, _)| *n == name) {
            return *value;
        }
        // Written out rather than joined (see `error::describe`).
        let mut names = String::new();
        for (i, (n, _)) in choices.iter().enumerate() {
            if i > 0 {
                names.push_str(", ");
            }
            names.push_str(n);
        }
        let message = format!("must be one of {names} or null; got {}", Quoted(name));
        self.reject(field, "invalid", message);
        default
    }

    /// An optional instant (UTC ms) within [`MIN_TIME`]..=[`MAX_TIME`].
    pub(crate) fn opt_instant(&mut self, field: &'static str, arg: &Arg<'_>) -> Option<Millis> {
        match arg {
            Arg::Null => None,
            other => self.int(field, other, (MIN_TIME, MAX_TIME), None),
        }
    }

    /// An optional idempotency key: a non-empty string of at most
    /// [`MAX_IDEMPOTENCY_KEY_CHARS`] characters, without NUL.
    pub(crate) fn idempotency_key<'a>(&mut self, arg: &Arg<'a>) -> Option<&'a str> {
        self.key("idempotency_key", arg, MAX_IDEMPOTENCY_KEY_CHARS)
    }

    /// An optional ordering group: the idempotency key's rules, field `group`.
    pub(crate) fn group<'a>(&mut self, arg: &Arg<'a>) -> Option<&'a str> {
        self.key("group", arg, MAX_GROUP_CHARS)
    }

    /// An optional key-like string: non-empty, at most `max` characters, without NUL.
    fn key<'a>(&mut self, field: &'static str, arg: &Arg<'a>, max: usize) -> Option<&'a str> {
        let key = self.opt_string(field, arg)?;
        if key.is_empty() {
            self.reject(field, "empty", "must not be empty".into());
        } else if key.contains('\0') {
            self.reject(field, "invalid", NUL.into());
        } else if chars(key) > max {
            self.reject(
                field,
                "too_long",
                format!("must be at most {max} characters"),
            );
        } else {
            return Some(key);
        }
        None
    }

    /// An optional integer in `range` (`Null` -> `None`).
    pub(crate) fn opt_int(
        &mut self,
        field: &'static str,
        arg: &Arg<'_>,
        range: (i64, i64),
    ) -> Option<i64> {
        match arg {
            Arg::Null => None,
            given => self.int(field, given, range, None),
        }
    }

    fn wrong_type(&mut self, field: &'static str, expected: &str, got: &Arg<'_>) {
        self.reject(
            field,
            "type",
            format!("must be {expected}, got {}", got.kind()),
        );
    }

    /// A payload over the open-time limit.
    pub(crate) fn reject_too_large(&mut self, len: usize, max: usize) {
        self.reject(
            "payload",
            "too_large",
            format!("is {len} bytes; the limit is {max}"),
        );
    }

    /// A required string without NUL (an error text).
    pub(crate) fn text<'a>(&mut self, field: &'static str, arg: &Arg<'a>) -> Option<&'a str> {
        let text = self.string(field, arg)?;
        if text.contains('\0') {
            self.reject(field, "invalid", NUL.into());
            return None;
        }
        Some(text)
    }

    /// An optional string without NUL (a text to look for in error texts, which never hold NUL).
    pub(crate) fn opt_text<'a>(&mut self, field: &'static str, arg: &Arg<'a>) -> Option<&'a str> {
        match arg {
            Arg::Null => None,
            other => self.text(field, other),
        }
    }

    /// An optional text to look for (`payload_contains`, `error_contains`): a non-empty string
    /// (an empty one would select everything, which is what leaving it out says) without NUL
    /// (no stored text holds one).
    pub(crate) fn search<'a>(&mut self, field: &'static str, arg: &Arg<'a>) -> Option<&'a str> {
        let text = self.opt_text(field, arg)?;
        if text.is_empty() {
            self.reject(field, "empty", "must not be empty".into());
            return None;
        }
        Some(text)
    }

    /// An argument that is well-typed but not allowed here: `invalid`, with why.
    pub(crate) fn reject_invalid(&mut self, field: &'static str, message: String) {
        self.reject(field, "invalid", message);
    }

    /// A required string.
    pub(crate) fn string<'a>(&mut self, field: &'static str, arg: &Arg<'a>) -> Option<&'a str> {
        match *arg {
            Arg::Str(s) => Some(s),
            ref other => {
                self.wrong_type(field, "a string", other);
                None
            }
        }
    }

    /// An optional string (`Null` -> `None`).
    pub(crate) fn opt_string<'a>(&mut self, field: &'static str, arg: &Arg<'a>) -> Option<&'a str> {
        match arg {
            Arg::Null => None,
            other => self.string(field, other),
        }
    }

    /// A batch over [`MAX_BATCH`] items.
    pub(crate) fn reject_too_large_batch(&mut self, len: usize, max: usize) {
        self.reject(
            "items",
            "too_large",
            format!("has {len} items; the limit is {max}"),
        );
    }

    /// Adds the field errors of `err` (a validation error from a helper such as [`later`]).
    pub(crate) fn extend(&mut self, err: Error) {
        if let Error::Validation(fields) = err {
            self.errors.extend(fields);
        }
    }

    /// An integer in `range`, or `default` when `Null` (required when `default` is `None`).
    pub(crate) fn int(
        &mut self,
        field: &'static str,
        arg: &Arg<'_>,
        (min, max): (i64, i64),
        default: Option<i64>,
    ) -> Option<i64> {
        match (arg, default) {
            (Arg::Null, Some(default)) => Some(default),
            (Arg::Int(n), _) if (min..=max).contains(n) => Some(*n),
            (Arg::Int(_) | Arg::BigInt, _) => {
                // The message is built here only: formatting it on every call cost about 6 us per
                // enqueue+claim+succeed cycle in the browser build (profile.mjs, session 8).
                self.reject(
                    field,
                    "out_of_range",
                    format!("must be between {min} and {max}"),
                );
                None
            }
            (other, _) => {
                self.wrong_type(field, "an integer", other);
                None
            }
        }
    }

    /// A boolean, or `default` when `Null`.
    pub(crate) fn bool(&mut self, field: &'static str, arg: &Arg<'_>, default: bool) -> bool {
        match arg {
            Arg::Null => default,
            Arg::Bool(b) => *b,
            other => {
                self.wrong_type(field, "a bool", other);
                default
            }
        }
    }

    /// A queue name: a non-empty string of at most [`MAX_QUEUE_CHARS`] characters, without NUL.
    pub(crate) fn queue<'a>(&mut self, arg: &Arg<'a>) -> Option<&'a str> {
        self.queue_field("queue", arg)
    }

    /// [`Check::queue`] for the argument `field`.
    fn queue_field<'a>(&mut self, field: &'static str, arg: &Arg<'a>) -> Option<&'a str> {
        let name = self.string(field, arg)?;
        if name.is_empty() {
            self.reject(field, "empty", "must not be empty".into());
        } else if name.contains('\0') {
            self.reject(field, "invalid", NUL.into());
        } else if chars(name) > MAX_QUEUE_CHARS {
            self.reject(
                field,
                "too_long",
                format!("must be at most {MAX_QUEUE_CHARS} characters"),
            );
        } else {
            return Some(name);
        }
        None
    }

    /// The name of a queue that messages are put under (`enqueue`, `enqueue_many`) or that a
    /// write of its row creates (`pause`, `set_settings`: [`crate::row_write`]): a queue name
    /// ([`Check::queue`]) that can be shown safely, so not one holding a control character
    /// (C0 U+0000..U+001F, DEL U+007F, C1 U+0080..U+009F) or an [`is_hidden`] character (the
    /// format characters, Unicode's general category Cf, the other default-ignorable ones and the
    /// line and paragraph separators, but the joiners and the variation selectors: the
    /// bidirectional controls U+202A..U+202E, U+2066..U+2069 make a name read as another in a
    /// terminal or a page, U+200B, U+2060, U+FEFF, U+00AD, U+3164 make names that show as empty
    /// or as another one: new-user finding N7, session 7; tag characters outside the three flags
    /// get their own message: tester T2, session 10), nor one with nothing to show (only
    /// [`is_blank`] and [`is_joiner_or_selector`] characters: it reads as empty), nor one that
    /// starts or ends with an [`is_blank`] character (`"emails "` read as `emails`: session 9;
    /// U+2800 since session 10, tester T2), nor one that reads as another name ([`look_alike`]:
    /// a joiner or variation selector that joins or varies nothing, `jobs\u{200d}`,
    /// `ema\u{fe0f}ils`; white space but U+0020, `a\u{a0}b`; an accent after an ASCII letter,
    /// `cafe\u{301}`: sessions 10 and 11, testers T2 and T3), nor `.` or `..` (browsers and HTTP
    /// clients resolve them as path segments, so the HTTP API and its console could not reach
    /// the queue: new-user finding F3, session 6): `invalid`.
    /// Making a handle, reading, replaying, purging, resuming and reading the settings take any
    /// name [`Check::queue`] takes, so that queues already stored under such a name (by 0.1.0, or
    /// before a rule) keep working (issue 23, item 5); so do `pause` and `set_settings` on a queue
    /// that exists (session 10).
    pub(crate) fn new_queue<'a>(&mut self, arg: &Arg<'a>) -> Option<&'a str> {
        self.new_queue_field("queue", arg)
    }

    /// The queue a message is moved to (`move`, `move_all`: field `to_queue`): the rules of
    /// [`Check::new_queue`], since messages are put under it; the queue they leave (`from`, when
    /// it was accepted) is `invalid`.
    pub(crate) fn target_queue<'a>(
        &mut self,
        arg: &Arg<'a>,
        from: Option<&str>,
    ) -> Option<&'a str> {
        let name = self.new_queue_field("to_queue", arg)?;
        if from == Some(name) {
            // Issue 19: `move_all` to its own queue read as if about one message.
            let why = "is the source queue too: the source and the target are the same queue";
            self.reject("to_queue", "invalid", why.into());
            return None;
        }
        Some(name)
    }

    /// [`Check::new_queue`] for the argument `field`.
    fn new_queue_field<'a>(&mut self, field: &'static str, arg: &Arg<'a>) -> Option<&'a str> {
        let name = self.queue_field(field, arg)?;
        let why = if let Some(why) = holds_hidden(name) {
            why
        } else if name
            .chars()
            .all(|c| is_blank(c) || is_joiner_or_selector(c))
            || matches!(name.as_bytes(), b"." | b"..")
        {
            "must not be only white space or invisible characters, . or .."
        } else if let Some(why) = look_alike(name) {
            why
        } else {
            return Some(name);
        };
        self.reject(field, "invalid", why.into());
        None
    }

    /// A message id: an integer >= 1.
    pub(crate) fn id(&mut self, arg: &Arg<'_>) -> Option<Id> {
        self.int("id", arg, (1, i64::MAX), None)
    }

    /// An optional status filter.
    pub(crate) fn status(&mut self, arg: &Arg<'_>) -> Option<Status> {
        let name = self.opt_string("status", arg)?;
        let status = Status::parse(name);
        if status.is_none() {
            let message = format!(
                "must be one of pending, processing, succeeded, dead; got {}",
                Quoted(name)
            );
            self.reject("status", "invalid", message);
        }
        status
    }

    /// The status `purge` removes: required, `succeeded` or `dead` (the finished statuses).
    pub(crate) fn finished_status(&mut self, arg: &Arg<'_>) -> Option<Status> {
        if matches!(arg, Arg::Null) {
            self.wrong_type("status", "a string", arg);
            return None;
        }
        let status = self.status(arg)?;
        if matches!(status, Status::Succeeded | Status::Dead) {
            Some(status)
        } else {
            let message = format!(
                "must be succeeded or dead (only finished messages are purged); got {}",
                Quoted(status.as_str())
            );
            self.reject("status", "invalid", message);
            None
        }
    }

    /// `Ok(value)` when no field was rejected, else the validation error with every field.
    pub(crate) fn finish<T>(self, value: impl FnOnce() -> T) -> Result<T> {
        if self.errors.is_empty() {
            Ok(value())
        } else {
            Err(Error::Validation(self.errors))
        }
    }
}

/// The characters a new queue name refuses because they show nothing or change how the rest of
/// the line reads (new-user finding N7, session 7, and its sequel of session 8), from Unicode 16:
///
/// - the format characters (general category Cf): the bidirectional controls (U+202A..U+202E,
///   U+2066..U+2069, U+200E, U+200F, U+061C), which reorder what follows them, and characters
///   that show nothing (U+00AD, U+180E, U+200B, U+2060..U+2064, U+FEFF, the tags U+E0001,
///   U+E0020..U+E007F, ...);
/// - the other `Default_Ignorable_Code_Point` characters (DerivedCoreProperties.txt), which show
///   nothing either: the combining grapheme joiner U+034F, the Hangul fillers U+115F, U+1160,
///   U+3164, U+FFA0, the Khmer inherent vowels U+17B4, U+17B5, and the code points Unicode keeps
///   ignorable for later (U+2065, U+FFF0..U+FFF8, U+E0000, U+E0002..U+E001F, U+E0080..U+E00FF,
///   U+E01F0..U+E0FFF): `\u{3164}` alone was a name that read as empty, `jobs\u{3164}` one that
///   read as `jobs`;
/// - the line and paragraph separators U+2028, U+2029 (categories Zl, Zp), which break the line
///   a name is shown on.
///
/// Left out, and allowed inside a name, are the default-ignorable characters that change the
/// character before them rather than hide: the joiners U+200C and U+200D, which emoji sequences
/// and scripts such as Persian need, and the variation selectors ([`is_joiner_or_selector`]:
/// U+FE00..U+FE0F, which emoji need, `\u{2764}\u{fe0f}`; Mongolian's U+180B..U+180D, U+180F;
/// the ideographic ones U+E0100..U+E01EF). The console and the CLI show the same set escaped,
/// and errors quote it escaped ([`crate::error::Quoted`]).
pub(crate) fn is_hidden(c: char) -> bool {
    matches!(c,
        '\u{AD}' | '\u{34F}' | '\u{600}'..='\u{605}' | '\u{61C}' | '\u{6DD}' | '\u{70F}'
        | '\u{890}'..='\u{891}' | '\u{8E2}' | '\u{115F}'..='\u{1160}' | '\u{17B4}'..='\u{17B5}'
        | '\u{180E}' | '\u{200B}' | '\u{200E}'..='\u{200F}' | '\u{2028}'..='\u{202E}'
        | '\u{2060}'..='\u{206F}' | '\u{3164}' | '\u{FEFF}' | '\u{FFA0}' | '\u{FFF0}'..='\u{FFFB}'
        | '\u{110BD}' | '\u{110CD}' | '\u{13430}'..='\u{1343F}' | '\u{1BCA0}'..='\u{1BCA3}'
        | '\u{1D173}'..='\u{1D17A}' | '\u{E0000}'..='\u{E00FF}' | '\u{E01F0}'..='\u{E0FFF}')
}

/// Why `name` is refused, when it holds a control character (C0, DEL, C1) or an [`is_hidden`] one
/// outside a flag of England, Scotland or Wales: U+1F3F4 (a black flag), the tag characters
/// spelling `gbeng`, `gbsct` or `gbwls`, then U+E007F, Unicode's three recommended emoji tag
/// sequences (`RGI_Emoji_Tag_Sequence`, UTS #51; session 9). Any other tag characters stay
/// refused, also in a sequence well formed by UTS #51 ED-14a: a flag followed by tags spelling
/// anything shows as the black flag alone, so two such names would look the same; their message
/// says where tags are allowed (session 10, tester T2: it read as the generic one).
fn holds_hidden(name: &str) -> Option<&'static str> {
    let mut chars = name.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1F3F4}' {
            chars = after_flag_tags(chars.as_str()).chars();
        } else if matches!(c, '\u{E0001}' | '\u{E0020}'..='\u{E007F}') {
            return Some(
                "must not contain tag characters: they are allowed only in the flags of \
                 England, Scotland and Wales",
            );
        } else if c.is_control() || is_hidden(c) {
            return Some("must not contain control, invisible or line separator characters");
        }
    }
    None
}

/// `rest`, which follows U+1F3F4, after the tags of one of the three flags and their end tag;
/// `rest` itself when it does not start with them.
/// (A loop over `chars`: `str`'s pattern searchers cost the npm package's WebAssembly, which has
/// a size budget, 4 448 bytes gzipped: 63 680 against 59 232, `make js`, session 9.)
pub(crate) fn after_flag_tags(rest: &str) -> &str {
    const FLAGS: [[u8; 5]; 3] = [*b"gbeng", *b"gbsct", *b"gbwls"];
    let mut chars = rest.chars();
    let mut spelled = [0u8; 5];
    for letter in &mut spelled {
        match chars.next() {
            // A tag character is its ASCII letter's code point plus U+E0000.
            Some(c @ '\u{E0061}'..='\u{E007A}') => {
                *letter = u8::try_from(u32::from(c) - 0xE0000).unwrap_or(0);
            }
            _ => return rest,
        }
    }
    if FLAGS.contains(&spelled) && chars.next() == Some('\u{E007F}') {
        chars.as_str()
    } else {
        rest
    }
}

/// The `Default_Ignorable_Code_Point` characters that [`is_hidden`] leaves out: the joiners
/// U+200C, U+200D and the variation selectors (U+180B..U+180D, U+180F, U+FE00..U+FE0F,
/// U+E0100..U+E01EF). They show nothing alone, so a name made only of them and white space reads
/// as empty (new-user finding N7, session 7); inside one they are allowed where they join or vary
/// something ([`look_alike`]).
fn is_joiner_or_selector(c: char) -> bool {
    matches!(c,
        '\u{180B}'..='\u{180D}' | '\u{180F}' | '\u{200C}'..='\u{200D}' | '\u{FE00}'..='\u{FE0F}'
        | '\u{E0100}'..='\u{E01EF}')
}

/// White space for a queue name's rules: Unicode's `White_Space` and U+2800 BRAILLE PATTERN
/// BLANK, which shows as a blank without being white space or ignorable (session 10, tester T2).
fn is_blank(c: char) -> bool {
    c.is_whitespace() || c == '\u{2800}'
}

/// Why `name` reads as another name, when one of its characters joins, varies or spaces nothing
/// where it stands (tester T2, session 10: `jobs\u{200d}` and `jobs\u{fe0f}` read as `jobs`;
/// tester T3, session 11: `ema\u{200d}ils`, `ema\u{fe0f}ils`, `a\u{2800}b`, `cafe\u{301}`).
/// One pass over its characters, each seen between the one before and the one after it (a name's
/// start and end count as a character below U+0530), after Unicode's rules for where the joiners
/// and selectors act (IDNA's CONTEXTJ, RFC 5892 Appendix A; UTS #51's emoji sequences):
///
/// - [`is_blank`] white space at either end (`"emails "` reads as `emails`: session 9);
/// - a joiner (U+200C, U+200D) after a character below U+0530 (ASCII, Latin, Greek, Cyrillic:
///   scripts no joiner acts on; white space) or another joiner, or before one of those or a
///   variation selector (`ema\u{200d}ils`, `\u{1f469}\u{200d}\u{fe0f}`). Emoji ZWJ sequences
///   (`\u{1f469}\u{200d}\u{1f4bb}`, `\u{2764}\u{fe0f}\u{200d}\u{1f525}`), Persian and Arabic
///   ZWNJ between letters and Indic joiners after a virama stay valid;
/// - a variation selector ([`is_joiner_or_selector`] but the joiners) after a character below
///   U+0530 (`ema\u{fe0f}ils`, `caf\u{e9}\u{fe0f}`), another selector (`\u{2764}\u{fe0f}\u{fe0f}`)
///   or a joiner: none of them has variants in a name. `\u{a9}\u{fe0f}`, `\u{ae}\u{fe0f}` and the
///   keycaps (`#\u{fe0f}\u{20e3}`: `0`..`9`, `#`, `*`, U+FE0F, U+20E3) are emoji and stay valid,
///   as do `\u{2764}\u{fe0f}`, CJK ideographic variation sequences (`\u{845b}\u{e0100}`) and
///   Mongolian's (`\u{1820}\u{180b}`);
/// - white space but U+0020 ([`is_blank`]: U+00A0, U+2800, U+3000, ...): `a\u{a0}b` reads as
///   `a b`;
/// - a combining mark of U+0300..U+036F after an ASCII letter: `cafe\u{301}` reads as `caf\u{e9}`,
///   which Unicode's NFC writes as one character. Not full NFC, whose tables would not fit the npm
///   package's WebAssembly (a size budget): other decomposed letters (`\u{fc}\u{304}`, Hangul
///   jamo, kana with U+3099) are not refused yet, and an ASCII letter with a mark that has no
///   composed form (`x\u{301}`) is refused as well.
fn look_alike(name: &str) -> Option<&'static str> {
    let low = |c: char| c < '\u{530}';
    let joiner = |c: char| matches!(c, '\u{200C}' | '\u{200D}');
    let mut chars = name.chars();
    // NUL, which no queue name holds, stands for its start and end.
    let (mut before, mut next) = ('\0', chars.next());
    while let Some(c) = next {
        next = chars.next();
        let after = next.unwrap_or('\0');
        if is_blank(c) && (before == '\0' || after == '\0') {
            return Some(
                "must not start or end with white space: it would read as the name without it",
            );
        }
        let emoji = matches!(before, '\u{A9}' | '\u{AE}')
            || matches!(before, '0'..='9' | '#' | '*') && after == '\u{20E3}';
        if joiner(c)
            && (low(before) || joiner(before) || low(after) || is_joiner_or_selector(after))
        {
            return Some(
                "must not have a joiner that joins nothing: it would read as the name without it",
            );
        }
        if !joiner(c)
            && is_joiner_or_selector(c)
            && (low(before) && !emoji || is_joiner_or_selector(before))
        {
            return Some(
                "must not have a variation selector that varies nothing: it would read as the name \
                 without it",
            );
        }
        if c != ' ' && is_blank(c) {
            return Some(
                "must not have white space but the space U+0020: it would read as a space",
            );
        }
        if matches!(c, '\u{300}'..='\u{36F}') && before.is_ascii_alphabetic() {
            return Some(
                "must not have an accent after an ASCII letter: write the accented letter as one \
                 character (Unicode NFC)",
            );
        }
        before = c;
    }
    None
}

/// The characters of `s` (its bytes that start one): `str::chars().count()` links a large
/// word-at-a-time routine into the npm package's WebAssembly, which has a size budget, for names
/// of at most a few hundred bytes.
fn chars(s: &str) -> usize {
    s.bytes().filter(|b| !(0x80..0xC0).contains(b)).count()
}

fn clock_message(now: &dyn std::fmt::Display) -> String {
    format!(
        "gave {now} ms since the epoch; every instant must be between 0001-01-01T00:00:00Z \
         ({MIN_TIME}) and 9999-12-31T23:59:59.999Z ({MAX_TIME})"
    )
}

/// A clock's time given as a finite number of milliseconds (JavaScript's clocks), floored. One
/// beyond the range of [`Millis`] is the `out_of_range` error on `clock` that the core gives any
/// time outside its instants, naming the value as `shown` writes it, the value returned (issue 19:
/// `-1e20` read as the `-9223372036854775808` it saturated to); one within it is the core's to
/// judge. (`shown` is the binding's: JavaScript's own number to string, and no float formatting
/// in the npm package's WebAssembly, whose size has a budget.)
pub fn clock_millis(ms: f64, shown: impl FnOnce() -> String) -> Result<Millis> {
    // 2^63, exactly: every floored value below it in magnitude, and -2^63, fit in i64.
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    let floored = ms.floor();
    if (-TWO_63..TWO_63).contains(&floored) {
        #[allow(clippy::cast_possible_truncation)] // within range: exact
        Ok(floored as Millis)
    } else {
        Err(Error::Validation(vec![FieldError {
            field: "clock",
            code: "out_of_range",
            message: clock_message(&shown()),
            index: None,
        }]))
    }
}

/// `now + delta`, when it stays within [`MAX_TIME`]; else a validation error on `clock` (a clock
/// so late that a lease or a retry would pass the last representable instant).
pub fn later(now: Millis, delta: Millis) -> Result<Millis> {
    match now.checked_add(delta) {
        Some(at) if (MIN_TIME..=MAX_TIME).contains(&at) => Ok(at),
        _ => Err(Error::Validation(vec![FieldError {
            field: "clock",
            code: "out_of_range",
            message: format!(
                "is too late: {now} + {delta} ms passes 9999-12-31T23:59:59.999Z ({MAX_TIME})"
            ),
            index: None,
        }])),
    }
}

/// A jitter sample drawn by the binding (or by the user's `random` function): a number in
/// `[0, 1)`; anything else is a validation error on `random`.
pub fn jitter_sample(arg: &Arg<'_>) -> Result<f64> {
    let mut check = Check::default();
    #[allow(clippy::cast_precision_loss)]
    let sample = match *arg {
        Arg::Int(n) => Some(n as f64),
        Arg::Float(f) => Some(f),
        ref other => {
            check.wrong_type("random", "a function returning a number in [0, 1)", other);
            None
        }
    };
    if sample.is_some_and(|s| !(0.0..1.0).contains(&s)) {
        check.reject(
            "random",
            "out_of_range",
            "must return a number in [0, 1)".into(),
        );
    }
    check.finish(|| sample.unwrap_or_default())
}

/// `args`, a request checked without its jitter sample (`ClaimArgs::new`, `ClaimArgs::reap`,
/// `FailArgs::new`), with the `sample` a host of the WebAssembly component passed checked as
/// [`jitter_sample`] checks it: a number in `[0, 1)` (not NaN), else `out_of_range` on `random`,
/// reported with the request's other rejected fields. The other bindings check their random
/// source's value with [`jitter_sample`] before; the component took any f64 and clamped it (NaN,
/// -3 and infinity gave no backoff at all: new-user finding F8, session 6). Apart so that the
/// npm package's WebAssembly, which has a size budget, does not check twice.
pub fn sampled<T>(args: Result<T>, sample: f64) -> Result<T> {
    let Err(Error::Validation(mut rejected)) = jitter_sample(&Arg::Float(sample)) else {
        return args;
    };
    if let Err(Error::Validation(fields)) = args {
        rejected.splice(0..0, fields);
    }
    Err(Error::Validation(rejected))
}

/// The lease tokens a host of the WebAssembly component drew for a claim of up to `n` messages
/// (the other bindings draw their own, UUIDs): fewer than `n` is a `store` error (the host's
/// fault); one that is empty (`empty`), holds NUL or repeats another (`invalid`) is a validation
/// error on `lease_tokens`: a token is what proves a worker holds its lease, so two messages
/// leased under one token, or a token that no store can keep, would let a worker act on a lease
/// it does not hold (new-user finding F8, session 6).
///
/// A token equal to another live message's lease token is not looked for (left by session 6's
/// helpers, judged harmless): an ack, failure or heartbeat names its message by id and its token
/// is compared with that message's lease alone, and an ack or failure may leave the token out
/// altogether, so sharing a token lets a worker do nothing it could not do without one. What
/// fences a worker whose lease ran out is that the message's next lease has another token: the
/// host's random draw promises that, as the other bindings' UUIDs do (a check here would need
/// every live lease of the queue, and could not see a reaped lease's old token anyway).
pub fn lease_tokens(tokens: &[String], n: usize) -> Result<()> {
    if tokens.len() < n {
        return Err(Error::Store(format!(
            "a claim of up to {n} messages needs as many lease tokens, got {}",
            tokens.len()
        )));
    }
    let mut check = Check::default();
    let mut seen = std::collections::BTreeSet::new();
    for token in tokens {
        if token.is_empty() {
            check.reject(
                "lease_tokens",
                "empty",
                "must not hold an empty token".into(),
            );
        } else if token.contains('\0') {
            check.reject("lease_tokens", "invalid", NUL.into());
        } else if !seen.insert(token.as_str()) {
            let why = format!("must all differ; {} is given twice", Quoted(token));
            check.reject("lease_tokens", "invalid", why);
        } else {
            continue;
        }
        break;
    }
    check.finish(|| ())
}

/// An integer option in `min..=max`, `default` when `Null`, by the rule of every integer argument
/// of the core (a bool, a float or a string is `type`; an integer outside the range is
/// `out_of_range`), for settings outside the core such as a store's.
pub fn integer(field: &'static str, arg: &Arg<'_>, range: (i64, i64), default: i64) -> Result<i64> {
    let mut check = Check::default();
    let value = check.int(field, arg, range, Some(default));
    check.finish(|| value.unwrap_or(default))
}

/// Checks a queue name alone (non-empty string, at most 255 characters, no NUL), for bindings
/// that make a queue handle before any operation, and for every call on a queue that may already
/// exist: names stored by 0.1.0, or before a rule of [`new_queue_name`], keep working.
pub fn queue_name<'a>(arg: &Arg<'a>) -> Result<&'a str> {
    let mut check = Check::default();
    let name = check.queue(arg);
    check.finish(|| name.unwrap_or_default())
}

/// Checks the name of a queue that messages are put under, or that a write of its row creates:
/// the rules of an enqueue's queue name (no control, invisible or line separator character,
/// something visible, no white space at either end, no joiner, variation selector, white space
/// or accent that makes it read as another name, not `.` or `..`: `invalid` on `queue`).
/// [`crate::row_write`] applies it to `pause` and `set_settings`.
pub fn new_queue_name<'a>(arg: &Arg<'a>) -> Result<&'a str> {
    let mut check = Check::default();
    let name = check.new_queue(arg);
    check.finish(|| name.unwrap_or_default())
}

/// Settings fixed when a database is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Lease given by `claim` when the caller names none, in milliseconds.
    pub default_lease_ms: i64,
    /// Largest accepted payload, in bytes of UTF-8.
    pub max_payload_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            default_lease_ms: DEFAULT_LEASE_MS,
            max_payload_bytes: 1 << 20,
        }
    }
}

impl Limits {
    /// Validates open-time options: `lease_ms` in 1..=12 h (default 30 s), `max_payload_bytes`
    /// in 1..=64 MiB (default 1 MiB).
    pub fn new(lease_ms: &Arg<'_>, max_payload_bytes: &Arg<'_>) -> Result<Self> {
        let mut check = Check::default();
        let lease = check.int(
            "lease_ms",
            lease_ms,
            (1, MAX_LEASE_MS),
            Some(DEFAULT_LEASE_MS),
        );
        let max = check.int(
            "max_payload_bytes",
            max_payload_bytes,
            (1, MAX_PAYLOAD_LIMIT),
            Some(DEFAULT_MAX_PAYLOAD_BYTES),
        );
        check.finish(|| Self {
            default_lease_ms: lease.unwrap_or(DEFAULT_LEASE_MS),
            max_payload_bytes: max.and_then(|m| usize::try_from(m).ok()).unwrap_or(1 << 20),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_queue_name_says_why() {
        let why = |name: &str| {
            let err = new_queue_name(&Arg::Str(name)).expect_err(name);
            err.field_errors()[0].message.clone()
        };
        let tags = "must not contain tag characters: they are allowed only in the flags of \
                    England, Scotland and Wales";
        assert_eq!(why("\u{1f3f4}\u{e0061}\u{e007f}"), tags);
        assert_eq!(why("jobs\u{e0067}"), tags);
        let hidden = "must not contain control, invisible or line separator characters";
        assert_eq!(why("a\u{200b}b"), hidden);
        let blank = "must not be only white space or invisible characters, . or ..";
        assert_eq!(why("\u{2800}"), blank);
        assert_eq!(why(" \u{fe0f}"), blank);
        let edge = "must not start or end with white space: it would read as the name without it";
        assert_eq!(why("jobs\u{2800}"), edge);
        assert_eq!(why("\u{a0}jobs"), edge);
        let joiner =
            "must not have a joiner that joins nothing: it would read as the name without it";
        let selector = "must not have a variation selector that varies nothing: it would read as \
                        the name without it";
        let space = "must not have white space but the space U+0020: it would read as a space";
        let accent = "must not have an accent after an ASCII letter: write the accented letter as \
                      one character (Unicode NFC)";
        for (name, said) in [
            ("jobs\u{200d}", joiner),
            ("\u{200c}jobs", joiner),
            ("ema\u{200d}ils", joiner),
            ("\u{1f469}\u{200d}\u{fe0f}", joiner),
            ("\u{1f469}\u{200d}\u{200d}\u{1f4bb}", joiner),
            ("\u{e9}\u{200c}\u{e9}", joiner),
            ("jobs\u{fe0f}", selector),
            ("ema\u{fe0f}ils", selector),
            ("caf\u{e9}\u{fe0f}", selector),
            ("\u{2764}\u{fe0f}\u{fe0f}", selector),
            ("1\u{fe0f}", selector),
            ("a\u{e0100}b", selector),
            ("a\u{2800}b", space),
            ("a\u{a0}b", space),
            ("a\u{3000}b", space),
            ("cafe\u{301}", accent),
            ("E\u{300}", accent),
        ] {
            assert_eq!(why(name), said, "{name:?}");
        }
        for name in [
            "\u{1f469}\u{200d}\u{1f4bb}",
            "\u{2764}\u{fe0f}\u{200d}\u{1f525}",
            "\u{645}\u{6cc}\u{200c}\u{62e}",
            "\u{915}\u{94d}\u{200d}\u{937}",
            "\u{915}\u{94d}\u{200c}\u{937}",
            "#\u{fe0f}\u{20e3}",
            "*\u{fe0f}\u{20e3} 0\u{fe0f}\u{20e3}",
            "\u{a9}\u{fe0f}",
            "\u{ae}\u{fe0f} jobs",
            "\u{845b}\u{e0100}",
            "\u{1820}\u{180b}",
            "caf\u{e9}",
            "1\u{301}",
            "billing emails",
        ] {
            assert_eq!(new_queue_name(&Arg::Str(name)), Ok(name));
        }
    }

    #[test]
    fn a_clock_beyond_the_range_of_millis_is_named_as_returned() {
        let shown = |ms: f64| move || format!("{ms:e}");
        assert_eq!(
            clock_millis(1_767_225_600_000.9, || unreachable!()),
            Ok(1_767_225_600_000)
        );
        assert_eq!(clock_millis(-0.5, || unreachable!()), Ok(-1));
        // Beyond the instants but within i64: the core's check says it (Check::now).
        assert_eq!(
            clock_millis(1e17, || unreachable!()),
            Ok(100_000_000_000_000_000)
        );
        for (returned, said) in [(-1e20, "-1e20"), (9.3e18, "9.3e18"), (1e300, "1e300")] {
            let err = clock_millis(returned, shown(returned)).expect_err("beyond i64");
            let Error::Validation(fields) = err else {
                panic!("{err}")
            };
            assert_eq!((fields[0].field, fields[0].code), ("clock", "out_of_range"));
            assert!(
                fields[0]
                    .message
                    .starts_with(&format!("gave {said} ms since the epoch;")),
                "{}",
                fields[0].message
            );
        }
    }
}
