use std::panic::{catch_unwind, panic_any};

use super::message;

fn caught(f: impl FnOnce() + std::panic::UnwindSafe) -> String {
    let payload = catch_unwind(f).expect_err("the closure panics");
    message(&*payload)
}

#[test]
fn a_literal_message_is_returned() {
    assert_eq!(caught(|| panic!("boom")), "boom");
}

#[test]
fn a_formatted_message_is_returned() {
    let n = 3;
    assert_eq!(caught(move || panic!("boom {n}")), "boom 3");
}

#[test]
fn another_payload_gets_a_placeholder() {
    assert_eq!(caught(|| panic_any(7u32)), "<non-string panic payload>");
}
