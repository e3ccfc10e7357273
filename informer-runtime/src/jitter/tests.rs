use std::time::Duration;

use super::{between, jitter};

#[test]
fn jitter_stretches_by_up_to_the_factor() {
    let d = Duration::from_millis(800);
    let mut stretched = false;
    for _ in 0..1000 {
        let j = jitter(d, 1.0);
        assert!(j >= d && j < d * 2, "{j:?} not in [{d:?}, {:?})", d * 2);
        stretched |= j > d;
    }
    assert!(stretched, "jitter never stretched the delay");
    for _ in 0..1000 {
        let j = jitter(d, 0.2);
        assert!(j >= d && j < d.mul_f64(1.2), "{j:?}");
    }
}

#[test]
fn jitter_of_a_zero_negative_or_non_finite_factor_is_none() {
    let d = Duration::from_secs(2);
    for factor in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        assert_eq!(jitter(d, factor), d, "factor {factor}");
    }
}

#[test]
fn jitter_saturates_instead_of_overflowing() {
    let j = jitter(Duration::MAX - Duration::from_secs(1), 1.0);
    assert!(j >= Duration::MAX - Duration::from_secs(1));
}

#[test]
fn between_is_uniform_in_the_half_open_range() {
    let (lo, hi) = (Duration::from_secs(300), Duration::from_secs(600));
    let samples: Vec<Duration> = (0..2000).map(|_| between(lo, hi)).collect();
    assert!(samples.iter().all(|d| *d >= lo && *d < hi));
    let mean = samples.iter().sum::<Duration>() / samples.len() as u32;
    assert!(
        mean > Duration::from_secs(420) && mean < Duration::from_secs(480),
        "mean {mean:?}"
    );
}

#[test]
fn between_an_empty_or_reversed_range_is_its_low_end() {
    let lo = Duration::from_secs(5);
    assert_eq!(between(lo, lo), lo);
    assert_eq!(between(lo, Duration::from_secs(1)), lo);
    let one_ns = lo + Duration::from_nanos(1);
    assert_eq!(between(lo, one_ns), lo, "[lo, lo + 1ns) holds only lo");
}
