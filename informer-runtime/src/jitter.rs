//! Random spreading of delays, so that the retries of many clients (reflectors backing off,
//! standbys polling a Lease, watches timing out) do not fall into step: client-go's
//! `wait.Jitter`, on the thread-local generator of `rand`; and the growth of backoff delays.

use std::time::Duration;

/// `d` stretched by a random part of up to `max_factor × d`: a uniform duration in
/// `[d, d × (1 + max_factor))` (client-go's `wait.Jitter`). A `max_factor` that is zero,
/// negative or not finite leaves `d` as it is; a stretch past [`Duration::MAX`] saturates.
pub(crate) fn jitter(d: Duration, max_factor: f64) -> Duration {
    if !(max_factor.is_finite() && max_factor > 0.0) {
        return d;
    }
    let spread = Duration::try_from_secs_f64(d.as_secs_f64() * max_factor).unwrap_or(Duration::MAX);
    between(d, d.saturating_add(spread))
}

/// A uniform duration in `[lo, hi)`; `lo` when `hi <= lo`.
pub(crate) fn between(lo: Duration, hi: Duration) -> Duration {
    let Some(spread) = hi.checked_sub(lo).filter(|s| !s.is_zero()) else {
        return lo;
    };
    // `mul_f64` of a fraction below 1 cannot overflow, but may round up to `spread` itself.
    let part = spread.mul_f64(rand::random::<f64>());
    lo + part.min(spread - Duration::from_nanos(1))
}

/// `d * factor` for a finite `factor >= 0`: exact for whole factors, saturating on overflow.
pub(crate) fn scale(d: Duration, factor: f64) -> Duration {
    if factor.fract() == 0.0 && factor <= f64::from(u32::MAX) {
        // `factor` is a whole number that fits a u32.
        d.checked_mul(factor as u32).unwrap_or(Duration::MAX)
    } else {
        Duration::try_from_secs_f64(d.as_secs_f64() * factor).unwrap_or(Duration::MAX)
    }
}

#[cfg(test)]
mod tests;
