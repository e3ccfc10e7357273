//! What a caught panic said, for the logs of the code that catches it (event handlers,
//! reconcilers, the reflector task).

use std::any::Any;

/// The message of a panic payload: the `&str` or `String` given to `panic!`, or a
/// placeholder for any other payload (`std::panic::panic_any`).
pub(crate) fn message(payload: &(dyn Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "<non-string panic payload>".to_owned())
}

#[cfg(test)]
mod tests;
