use std::time::{Duration, Instant};

use super::*;

#[test]
fn a_fake_clock_stands_still_until_moved() {
    let clock = FakeClock::new();
    let first = clock.now();
    std::thread::sleep(Duration::from_millis(5));
    assert_eq!(clock.now(), first);
}

#[test]
fn advance_moves_a_fake_clock_forward_by_exactly_the_duration() {
    let start = Instant::now();
    let clock = FakeClock::starting_at(start);
    clock.advance(Duration::from_secs(3));
    clock.advance(Duration::from_nanos(1));
    assert_eq!(
        clock.now(),
        start + Duration::from_secs(3) + Duration::from_nanos(1)
    );
}

#[test]
fn set_may_move_a_fake_clock_backwards() {
    let start = Instant::now();
    let clock = FakeClock::starting_at(start + Duration::from_secs(60));
    clock.set(start);
    assert_eq!(clock.now(), start);
}

#[test]
fn clones_of_a_fake_clock_share_one_time() {
    let clock = FakeClock::new();
    let other = clock.clone();
    other.advance(Duration::from_secs(1));
    assert_eq!(clock.now(), other.now());
    clock.set(other.now() + Duration::from_secs(5));
    assert_eq!(clock.now(), other.now());
}

#[test]
#[should_panic(expected = "goes past the largest Instant")]
fn advancing_past_the_largest_instant_panics_with_a_clear_message() {
    FakeClock::new().advance(Duration::MAX);
}

#[test]
fn the_real_clock_follows_the_system_clock() {
    let before = Instant::now();
    let read = RealClock.now();
    std::thread::sleep(Duration::from_millis(2));
    let later = RealClock.now();
    assert!(read >= before);
    assert!(later.duration_since(read) >= Duration::from_millis(2));
}

#[test]
fn a_clock_is_usable_as_a_trait_object() {
    let clock = FakeClock::new();
    let clocks: [Box<dyn Clock>; 2] = [Box::new(RealClock), Box::new(clock.clone())];
    assert_eq!(clocks[1].now(), clock.now());
    assert!(clocks[0].now() >= clock.now());
}
