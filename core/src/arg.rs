//! Untyped arguments, as they arrive from a dynamically typed caller.
//!
//! Bindings map each native value to an [`Arg`] without judging it (a Python `bool` is
//! [`Arg::Bool`], never an integer; a JS number with a fraction is [`Arg::Float`]); the core then
//! applies every type and range rule once, so Python, JavaScript and Rust reject the same inputs
//! with the same field codes. Rust callers pass plain values through the `From` impls.

/// One argument value before validation. `Null` stands for both "absent" and "null/None":
/// optional arguments then take their default, required ones are rejected.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum Arg<'a> {
    /// Absent, `None`, `null` or `undefined`.
    #[default]
    Null,
    /// A boolean.
    Bool(bool),
    /// An integer that fits in `i64`.
    Int(i64),
    /// An integer too large for `i64` (Python's unbounded `int`).
    BigInt,
    /// A number with a fraction, or not finite.
    Float(f64),
    /// A string.
    Str(&'a str),
    /// Anything else; carries the caller's name for its type (`list`, `Date`, `object`).
    Other(&'a str),
}

impl Arg<'_> {
    /// How the value is described in messages: `a string`, `a float`, `a bool`, ... A float
    /// that is not finite says so, in the words of both languages (issue 19: a NaN delay read
    /// "got a float", as if any float were wrong): `NaN (not a finite number)`, `infinity (not a
    /// finite number)`, `-infinity (not a finite number)`.
    pub fn kind(&self) -> String {
        match self {
            Self::Null => "null".into(),
            Self::Bool(_) => "a bool".into(),
            Self::Int(_) | Self::BigInt => "an integer".into(),
            Self::Float(f) if f.is_finite() => "a float".into(),
            Self::Float(f) if f.is_nan() => "NaN (not a finite number)".into(),
            Self::Float(f) if *f > 0.0 => "infinity (not a finite number)".into(),
            Self::Float(_) => "-infinity (not a finite number)".into(),
            Self::Str(_) => "a string".into(),
            Self::Other(name) => (*name).to_owned(),
        }
    }
}

impl<'a> From<&'a str> for Arg<'a> {
    fn from(value: &'a str) -> Self {
        Self::Str(value)
    }
}

impl<'a> From<&'a String> for Arg<'a> {
    fn from(value: &'a String) -> Self {
        Self::Str(value)
    }
}

impl From<i64> for Arg<'_> {
    fn from(value: i64) -> Self {
        Self::Int(value)
    }
}

impl From<u32> for Arg<'_> {
    fn from(value: u32) -> Self {
        Self::Int(value.into())
    }
}

impl From<bool> for Arg<'_> {
    fn from(value: bool) -> Self {
        Self::Bool(value)
    }
}

impl<'a, T: Into<Arg<'a>>> From<Option<T>> for Arg<'a> {
    fn from(value: Option<T>) -> Self {
        value.map_or(Self::Null, Into::into)
    }
}

#[cfg(test)]
mod tests {
    use super::Arg;

    #[test]
    fn a_float_that_is_not_finite_says_so() {
        assert_eq!(Arg::Float(2.5).kind(), "a float");
        assert_eq!(Arg::Float(f64::NAN).kind(), "NaN (not a finite number)");
        assert_eq!(
            Arg::Float(f64::INFINITY).kind(),
            "infinity (not a finite number)"
        );
        assert_eq!(
            Arg::Float(f64::NEG_INFINITY).kind(),
            "-infinity (not a finite number)"
        );
    }
}
