//! An API server's error as one line of a log or an error message.

/// An API server's error in one line, as its message, code and reason: kube's own `Display`
/// of `kube::Error::Api` repeats the whole `Status`, metadata included. Any other error as
/// it words itself.
pub(crate) fn brief(err: &kube::Error) -> String {
    match err {
        kube::Error::Api(status) => {
            format!("{} ({} {})", status.message, status.code, status.reason)
        }
        other => other.to_string(),
    }
}
