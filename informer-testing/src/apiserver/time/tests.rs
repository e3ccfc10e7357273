use jiff::Timestamp;

use super::*;

fn at(secs: i64, nanos: i32) -> Timestamp {
    Timestamp::new(secs, nanos).unwrap()
}

#[test]
fn time_is_utc_with_second_precision() {
    assert_eq!(format_time(at(0, 0)), "1970-01-01T00:00:00Z");
    assert_eq!(format_time(at(951_782_400, 0)), "2000-02-29T00:00:00Z");
    assert_eq!(
        format_time(at(1_700_000_000, 999_999_999)),
        "2023-11-14T22:13:20Z"
    );
}

#[test]
fn micro_time_keeps_six_fraction_digits() {
    assert_eq!(
        format_micro_time(at(1_700_000_000, 1_000)),
        "2023-11-14T22:13:20.000001Z"
    );
    assert_eq!(format_micro_time(at(0, 0)), "1970-01-01T00:00:00.000000Z");
}

#[test]
fn parsing_round_trips_and_accepts_offsets() {
    for secs in [0, 951_782_400, 1_700_000_000] {
        assert_eq!(parse_rfc3339(&format_time(at(secs, 0))), Some(at(secs, 0)));
    }
    assert_eq!(
        parse_rfc3339("2023-11-14T23:13:20+01:00"),
        Some(at(1_700_000_000, 0))
    );
    assert_eq!(parse_rfc3339("garbage"), None);
}
