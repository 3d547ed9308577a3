//! A transport made of closures, for the loop's own tests: how each test's client sends,
//! names its errors and drains a discarded body, written where the test reads it.

use core::future::Future;

use backstop::transport::DrainLimits;
use backstop::{Attempt, ErrorKind, Transport};

/// `send` makes one attempt, `kind` names its errors, `drain` reads a discarded body.
pub struct Closures<S, K, D> {
    pub send: S,
    pub kind: K,
    pub drain: D,
}

impl<S, K, D, Sent, Drained, Q, B, E> Transport<Q> for Closures<S, K, D>
where
    S: FnMut(Attempt<Q>) -> Sent,
    Sent: Future<Output = Result<http::Response<B>, E>>,
    K: Fn(&E) -> ErrorKind,
    D: FnMut(B, DrainLimits) -> Drained,
    Drained: Future,
    E: std::error::Error + 'static,
{
    type Body = B;
    type Error = E;

    fn send(&mut self, attempt: Attempt<Q>) -> impl Future<Output = Result<http::Response<B>, E>> {
        (self.send)(attempt)
    }

    fn error_kind(&self, error: &E) -> ErrorKind {
        (self.kind)(error)
    }

    fn drain(&mut self, body: B, limits: DrainLimits) -> impl Future<Output = ()> {
        let drained = (self.drain)(body, limits);
        async move {
            let _ = drained.await;
        }
    }
}
