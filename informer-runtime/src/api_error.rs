//! An API server's error as one line of a log or an error message.

/// The API server's `Status` behind `error`: the first `kube::Error::Api` in its source
/// chain (a `ReconcileError` or a wrapper of ours keeps the API's error as a source).
pub(crate) fn api_status<'a>(
    error: &'a (dyn std::error::Error + 'static),
) -> Option<&'a kube::core::Status> {
    let mut next = Some(error);
    while let Some(current) = next {
        if let Some(kube::Error::Api(status)) = current.downcast_ref::<kube::Error>() {
            return Some(status);
        }
        next = current.source();
    }
    None
}

/// An API server's error in one line, as its message, code and reason: kube's own `Display`
/// of `kube::Error::Api` repeats the whole `Status`, metadata included. Any other error as
/// it words itself.
pub(crate) fn brief(err: &kube::Error) -> String {
    match err {
        // A Status without a reason (a proxy's, or a server's 500) shows its code alone.
        kube::Error::Api(status) if status.reason.is_empty() => {
            format!("{} ({})", status.message, status.code)
        }
        kube::Error::Api(status) => {
            format!("{} ({} {})", status.message, status.code, status.reason)
        }
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use crate::api_error::brief;

    fn api_error(message: &str, code: u16, reason: &str) -> kube::Error {
        kube::Error::Api(
            kube::core::Status::failure(message, reason)
                .with_code(code)
                .boxed(),
        )
    }

    #[test]
    fn an_api_error_reads_as_its_message_code_and_reason() {
        let err = api_error("pods \"x\" not found", 404, "NotFound");
        assert_eq!(brief(&err), "pods \"x\" not found (404 NotFound)");
    }

    #[test]
    fn an_api_error_without_a_reason_shows_its_code_alone() {
        let err = api_error(".status: expected map, got all good", 500, "");
        assert_eq!(brief(&err), ".status: expected map, got all good (500)");
    }
}
