//! Host names resolved by hyper-util's resolver, its failures marked as DNS failures.
//!
//! Rule: an unknown host is `ErrorKind::Dns` on every adapter. hyper-util reports every
//! connect failure as one opaque error; marking the resolver's errors with
//! [`ResolveError`] is what tells a host that did not resolve from one that refused.

use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};

use crate::ResolveError;
use hyper_util::client::legacy::connect::dns::{GaiAddrs, GaiFuture, GaiResolver, Name};

/// hyper-util's `getaddrinfo` resolver whose errors are [`ResolveError`]s. The ready-made
/// [`Client`](crate::tokio::Client) uses it; give it to `HttpConnector::new_with_resolver` in a
/// client of your own for the same classification.
#[derive(Clone, Debug)]
pub struct Resolver {
    gai: GaiResolver,
}

impl Resolver {
    /// A resolver on tokio's blocking pool.
    #[must_use]
    pub fn new() -> Self {
        Resolver {
            gai: GaiResolver::new(),
        }
    }
}

impl Default for Resolver {
    fn default() -> Self {
        Resolver::new()
    }
}

impl tower_service::Service<Name> for Resolver {
    type Response = GaiAddrs;
    type Error = ResolveError;
    type Future = Resolving;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), ResolveError>> {
        self.gai.poll_ready(cx).map_err(ResolveError::new)
    }

    fn call(&mut self, name: Name) -> Resolving {
        Resolving(self.gai.call(name))
    }
}

/// A resolution in progress (see [`Resolver`]).
#[derive(Debug)]
pub struct Resolving(GaiFuture);

impl Future for Resolving {
    type Output = Result<GaiAddrs, ResolveError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.0).poll(cx).map_err(ResolveError::new)
    }
}
