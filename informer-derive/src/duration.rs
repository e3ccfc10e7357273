//! Duration literals of attributes: `"30s"`, `"5m"`, `"1h30m"`, `"500ms"` (Go's syntax,
//! as `kubectl` and client-go flags take them).

use std::time::Duration;

/// Parses a duration literal; the error says what is wrong.
pub fn parse(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    if text.is_empty() {
        return Err("the duration is empty".into());
    }
    let mut total = Duration::ZERO;
    let mut rest = text;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        if digits == 0 {
            return Err(format!("expected a number at `{rest}`"));
        }
        let number: u64 = rest[..digits]
            .parse()
            .map_err(|_| format!("`{}` is too large", &rest[..digits]))?;
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(rest.len());
        let unit = &rest[..unit_len];
        let millis = match unit {
            "ms" => 1,
            "s" => 1_000,
            "m" => 60_000,
            "h" => 3_600_000,
            "" => return Err(format!("`{number}` has no unit")),
            other => return Err(format!("unknown unit `{other}`")),
        };
        total += Duration::from_millis(
            number
                .checked_mul(millis)
                .ok_or_else(|| "the duration is too large".to_string())?,
        );
        rest = &rest[unit_len..];
    }
    Ok(total)
}

#[cfg(test)]
mod tests;
