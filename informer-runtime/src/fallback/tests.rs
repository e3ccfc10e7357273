use std::sync::Once;

use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

use super::*;

/// A subscriber that drops everything: what a user who wants silence installs.
struct Silent;

impl Subscriber for Silent {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        false
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, _: &Event<'_>) {}
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

#[test]
fn without_a_subscriber_failures_are_printed() {
    // Tests run on threads without a global subscriber: none is set in this crate.
    assert!(no_subscriber());
}

#[test]
fn any_subscriber_turns_the_fallback_off() {
    tracing::subscriber::with_default(Silent, || assert!(!no_subscriber()));
}

#[test]
fn the_first_line_of_a_process_says_why_it_is_printed() {
    let hint = Once::new();
    let mut out = Vec::new();
    write_line(&mut out, format_args!("controller a: failed"), &hint);
    write_line(&mut out, format_args!("controller a: failed again"), &hint);
    let text = String::from_utf8(out).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines,
        [
            HINT_LINE,
            "informer: controller a: failed",
            "informer: controller a: failed again"
        ]
    );
}
