use super::*;

#[test]
fn accepts_go_style_durations() {
    assert_eq!(parse("30s"), Ok(Duration::from_secs(30)));
    assert_eq!(parse("5m"), Ok(Duration::from_secs(300)));
    assert_eq!(parse("1h30m"), Ok(Duration::from_secs(5400)));
    assert_eq!(parse("500ms"), Ok(Duration::from_millis(500)));
    assert_eq!(parse("1m30s250ms"), Ok(Duration::from_millis(90_250)));
}

#[test]
fn rejects_malformed_durations_with_the_reason() {
    assert_eq!(parse("5"), Err("`5` has no unit".into()));
    assert_eq!(parse("5 minutes"), Err("unknown unit ` minutes`".into()));
    assert_eq!(parse("m5"), Err("expected a number at `m5`".into()));
    assert_eq!(parse(""), Err("the duration is empty".into()));
    assert_eq!(parse("3d"), Err("unknown unit `d`".into()));
}
