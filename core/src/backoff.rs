//! Backoff policies: how long a failed message waits before its next attempt.
//!
//! The delay after the n-th failure is `min(initial * multiplier^(n-1), cap)`, rounded to the
//! millisecond. The default policy (`initial` 2 s, `multiplier` 2, `cap` 1 h, no jitter) is exactly
//! the project's original schedule, `min(2^n, 3600)` seconds. Jitter follows the definitions of
//! AWS's architecture blog ("Exponential Backoff And Jitter", 2015): *full* draws uniformly in
//! `[0, delay)`, *equal* in `[delay/2, delay)`. The core stays deterministic: the binding draws the
//! random sample in `[0, 1)` and passes it in.

use crate::arg::Arg;
use crate::error::Result;
use crate::message::Millis;
use crate::validate::{Check, MAX_DELAY_MS};

/// How a delay is spread to keep clients that failed together from retrying in lockstep.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Jitter {
    /// The delay as computed.
    #[default]
    None,
    /// Uniform in `[0, delay)`.
    Full,
    /// Uniform in `[delay/2, delay)`.
    Equal,
}

impl Jitter {
    /// The name users pass: `full` or `equal` (`None` is null/None in the bindings).
    pub fn as_str(self) -> Option<&'static str> {
        match self {
            Self::None => None,
            Self::Full => Some("full"),
            Self::Equal => Some("equal"),
        }
    }
}

/// A validated backoff policy. Every field is in range, so [`Backoff::delay_ms`] cannot overflow.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Backoff {
    /// Delay after the first failure, in milliseconds (0..=30 days; `cap_ms` still bounds it).
    pub initial_ms: Millis,
    /// Growth factor per further failure (1..=100).
    pub multiplier: f64,
    /// Longest delay, in milliseconds (0..=30 days).
    pub cap_ms: Millis,
    /// How the delay is spread.
    pub jitter: Jitter,
}

impl Default for Backoff {
    /// `min(2^n, 3600)` seconds after the n-th failure, no jitter.
    fn default() -> Self {
        Self {
            initial_ms: 2_000,
            multiplier: 2.0,
            cap_ms: 3_600_000,
            jitter: Jitter::None,
        }
    }
}

/// Allowed multipliers.
pub const MULTIPLIER_RANGE: (f64, f64) = (1.0, 100.0);

/// The additive recurrence step (the golden ratio's fractional part) that spreads one sample over
/// several messages of one call: `sample_i = frac(sample + i * STEP)` (a low-discrepancy sequence,
/// so messages rescheduled together do not get the same jitter).
const STEP: f64 = 0.618_033_988_749_894_9;

impl Backoff {
    /// Validates a policy given field by field (`Null` takes the default): `initial_ms` and
    /// `cap_ms` integers in 0..=30 days, `multiplier` a number in
    /// 1..=100, `jitter` null, `"full"` or `"equal"`. Every rejected field is reported.
    pub fn new(
        initial_ms: &Arg<'_>,
        multiplier: &Arg<'_>,
        cap_ms: &Arg<'_>,
        jitter: &Arg<'_>,
    ) -> Result<Self> {
        let default = Self::default();
        let mut check = Check::default();
        let initial = check.int(
            "initial_ms",
            initial_ms,
            (0, MAX_DELAY_MS),
            Some(default.initial_ms),
        );
        let cap = check.int("cap_ms", cap_ms, (0, MAX_DELAY_MS), Some(default.cap_ms));
        let multiplier = check.number(
            "multiplier",
            multiplier,
            MULTIPLIER_RANGE,
            default.multiplier,
        );
        let jitter = check.one_of(
            "jitter",
            jitter,
            &[("full", Jitter::Full), ("equal", Jitter::Equal)],
            Jitter::None,
        );
        check.finish(|| Self {
            initial_ms: initial.unwrap_or_default(),
            multiplier,
            cap_ms: cap.unwrap_or_default(),
            jitter,
        })
    }

    /// The delay in milliseconds after the `failures`-th failure (0 gives `initial / multiplier`,
    /// so the default schedule starts at 1 s), with jitter applied from `sample` in `[0, 1)`
    /// (values outside are clamped; ignored without jitter).
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_precision_loss,
        clippy::cast_sign_loss
    )] // every float is clamped to [0, cap_ms] (at most 30 days) before the cast
    pub fn delay_ms(&self, failures: u32, sample: f64) -> Millis {
        // `powi` (repeated squaring) rather than `powf`: libm's `pow` weighs 1 kB gzipped in the
        // WebAssembly module (budget: bindings-wasm/size.mjs). Exact while the power fits in 53
        // bits (2 and 1.5 to the 30th...); beyond, within a few ulps, far below the millisecond
        // this rounds to. An exponent beyond i32 gives the cap either way (multiplier >= 1).
        let exponent = i32::try_from(failures).unwrap_or(i32::MAX) - 1;
        let grown = self.initial_ms as f64 * self.multiplier.powi(exponent);
        let base = grown.min(self.cap_ms as f64).round().max(0.0) as Millis;
        let sample = if sample.is_finite() {
            sample.clamp(0.0, 1.0)
        } else {
            0.0
        };
        match self.jitter {
            Jitter::None => base,
            Jitter::Full => (base as f64 * sample).floor() as Millis,
            Jitter::Equal => {
                let half = base / 2;
                half + ((base - half) as f64 * sample).floor() as Millis
            }
        }
    }

    /// The sample for the `index`-th message rescheduled by one call, from the call's `sample`.
    pub fn spread(sample: f64, index: usize) -> f64 {
        #[allow(clippy::cast_precision_loss)] // a batch index is small
        let shifted = sample + index as f64 * STEP;
        shifted.rem_euclid(1.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_is_the_original_schedule_for_every_count() {
        let policy = Backoff::default();
        for n in 0..=40u32 {
            let original = if n >= 12 {
                3_600_000
            } else {
                (1_000i64 << n).min(3_600_000)
            };
            assert_eq!(policy.delay_ms(n, 0.7), original, "n = {n}");
        }
        assert_eq!(policy.delay_ms(u32::MAX, 0.0), 3_600_000);
    }

    #[test]
    fn jitter_stays_in_its_range() {
        let full = Backoff {
            jitter: Jitter::Full,
            ..Backoff::default()
        };
        let equal = Backoff {
            jitter: Jitter::Equal,
            ..Backoff::default()
        };
        assert_eq!(full.delay_ms(3, 0.0), 0);
        assert_eq!(full.delay_ms(3, 0.25), 2_000);
        assert_eq!(full.delay_ms(3, 0.999_999), 7_999);
        assert_eq!(equal.delay_ms(3, 0.0), 4_000);
        assert_eq!(equal.delay_ms(3, 0.5), 6_000);
        assert_eq!(equal.delay_ms(3, f64::NAN), 4_000);
    }

    #[test]
    fn huge_multipliers_and_counts_stop_at_the_cap() {
        let policy = Backoff {
            multiplier: 100.0,
            cap_ms: 30 * 86_400_000,
            ..Backoff::default()
        };
        assert_eq!(policy.delay_ms(u32::MAX, 0.0), 30 * 86_400_000);
        assert_eq!(policy.delay_ms(2, 0.0), 200_000);
    }

    #[test]
    fn spread_samples_differ_and_stay_in_range() {
        let samples: Vec<f64> = (0..5).map(|i| Backoff::spread(0.9, i)).collect();
        assert!(samples.iter().all(|s| (0.0..1.0).contains(s)));
        assert!((samples[1] - 0.518_033_988_749_895).abs() < 1e-12);
        assert!((samples[0] - 0.9).abs() < f64::EPSILON);
    }
}
