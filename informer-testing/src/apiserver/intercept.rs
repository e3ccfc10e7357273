//! Users and the request interceptor: who sent a request, and a hook that sees every request
//! of a server before and after it is handled (the controller harness of
//! [`chaos`](crate::chaos) uses it to crash, fail, hold and trace a controller's requests).
//!
//! A request is attributed to a *user* when its bearer token is one
//! [`TestApiServer::user_config`](super::TestApiServer::user_config) handed out; the server's
//! own token (and plain HTTP without a token) is the anonymous administrator. While a write's
//! handler runs, its user is the *actor* of the changes it commits ([`current_actor`]), so
//! every committed change says who made it.

use std::any::Any;
use std::cell::RefCell;
use std::sync::Arc;

use bytes::Bytes;
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use http::StatusCode;

use super::faults::RequestInfo;
use super::status::ApiError;

/// What `before` hands to `after` (a guard held across the handler, say).
pub(crate) type Ticket = Box<dyn Any + Send>;

/// Sees every request to resources (not discovery) of one server.
pub(crate) trait Interceptor: Send + Sync + 'static {
    /// Before the handler: may wait (a stall, or holding the request forever), and may answer
    /// instead of the handler with an error.
    fn before(&self, request: &RequestInfo) -> BoxFuture<'static, Result<Ticket, ApiError>>;

    /// After the handler of a request that is not a watch, with the status it answered; the
    /// response is sent when the future completes (it may wait, holding the response).
    fn after(
        &self,
        request: &RequestInfo,
        status: StatusCode,
        ticket: Ticket,
    ) -> BoxFuture<'static, ()>;

    /// Wraps the body of a watch (its chunks, one or more event lines each).
    fn watch(
        &self,
        request: &RequestInfo,
        chunks: BoxStream<'static, Bytes>,
    ) -> BoxStream<'static, Bytes>;
}

thread_local! {
    static ACTOR: RefCell<Option<Arc<str>>> = const { RefCell::new(None) };
}

/// Runs `work` (synchronous: a request's handler) with `actor` as the author of the changes
/// it commits.
pub(crate) fn with_actor<T>(actor: Option<Arc<str>>, work: impl FnOnce() -> T) -> T {
    struct Restore(Option<Arc<str>>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let previous = self.0.take();
            ACTOR.with(|a| *a.borrow_mut() = previous);
        }
    }
    let previous = ACTOR.with(|a| a.replace(actor));
    let _restore = Restore(previous);
    work()
}

/// The user whose request is committing changes on this thread, if any.
pub(crate) fn current_actor() -> Option<Arc<str>> {
    ACTOR.with(|a| a.borrow().clone())
}
