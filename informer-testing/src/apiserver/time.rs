//! Kubernetes timestamps (`metav1.Time`, `metav1.MicroTime`), formatted and parsed with `jiff`.

use jiff::Timestamp;

/// `metav1.Time`: RFC 3339 in UTC with second precision, e.g. `2024-05-01T12:00:00Z`.
pub(crate) fn format_time(at: Timestamp) -> String {
    at.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// `metav1.MicroTime`: RFC 3339 in UTC with microseconds, e.g. `2024-05-01T12:00:00.000001Z`.
pub(crate) fn format_micro_time(at: Timestamp) -> String {
    at.strftime("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()
}

/// The current time as a `metav1.Time` string.
pub(crate) fn now_rfc3339() -> String {
    format_time(Timestamp::now())
}

/// Parses an RFC 3339 timestamp (any precision and offset).
pub(crate) fn parse_rfc3339(text: &str) -> Option<Timestamp> {
    text.parse().ok()
}

#[cfg(test)]
mod tests;
