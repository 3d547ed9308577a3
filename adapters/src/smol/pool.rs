//! The idle HTTP/1 connections of one [`HttpService`](crate::smol::HttpService) and its clones,
//! by scheme, host and port.
//!
//! Rule (RFC 9112 §9.3): a persistent connection carries the next request only once the
//! previous exchange is over: its response read in full, and its request written in full. So a
//! connection comes back to the pool only from a response body that ended ([`Lease::release`],
//! called by the response's `Body`), and only if hyper had written the whole request by then;
//! a body dropped early drops its connection, which hyper closes. A request the server answered
//! before reading all of it (a 413 to a large upload) leaves hyper writing the rest, which the
//! server may never read: that connection is dropped too, and its task ends once the server
//! has read the rest or closed it. Nothing runs in the background: a connection the server
//! closed while idle is found closed when it is next taken, or when another is put back, and
//! discarded.

use core::fmt;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};

use crate::smol::connect::Target;
use crate::smol::connection::Connection;

/// The most idle connections kept per target: a few requests in flight to one host at once
/// find one each; past this the oldest is closed (the one a server's idle time-out closes
/// first).
const MAX_IDLE_PER_TARGET: usize = 8;

/// Idle connections, each ready for a request once hyper has finished the previous exchange.
pub(crate) struct Pool<B> {
    idle: Mutex<HashMap<Target, Vec<Connection<B>>>>,
}

impl<B> Pool<B> {
    pub(crate) fn new() -> Self {
        Pool {
            idle: Mutex::new(HashMap::new()),
        }
    }

    /// An idle connection to `target` that can carry a request now, the most recently used
    /// first (the likeliest to be open still). Each is taken once hyper says it is ready: just
    /// after its response body ended, its connection task may still be noticing that the
    /// exchange is over, which takes no reading or writing (its request was written in full);
    /// a connection it closed says so at once and is dropped.
    pub(crate) async fn take(&self, target: &Target) -> Option<Connection<B>> {
        // Bounded: each pass removes one connection from a list of at most
        // `MAX_IDLE_PER_TARGET`.
        while let Some(mut connection) = self.pop(target) {
            if connection.ready().await.is_ok() {
                return Some(connection);
            }
        }
        None
    }

    /// The most recently used idle connection to `target` that hyper has not closed.
    fn pop(&self, target: &Target) -> Option<Connection<B>> {
        let mut idle = self.lock();
        let list = idle.get_mut(target)?;
        let open = core::iter::from_fn(|| list.pop()).find(|c| !c.is_closed());
        if list.is_empty() {
            idle.remove(target);
        }
        open
    }

    /// Keeps `connection`, whose last response was read to its end, for the next request to
    /// `target` if hyper has written the whole of its last request.
    fn put(&self, target: Target, connection: Connection<B>) {
        if connection.is_closed() || !connection.is_written() {
            return;
        }
        let mut idle = self.lock();
        // Connections the servers closed go now, from every list: they only hold their slot.
        idle.retain(|_, list| {
            list.retain(|c| !c.is_closed());
            !list.is_empty()
        });
        let list = idle.entry(target).or_default();
        if list.len() >= MAX_IDLE_PER_TARGET {
            list.remove(0);
        }
        list.push(connection);
    }

    /// The number of idle connections, for `Debug`.
    fn idle_count(&self) -> usize {
        self.lock().values().map(Vec::len).sum()
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<Target, Vec<Connection<B>>>> {
        // A panic while the lock was held left the map whole: every change is one call.
        self.idle.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl<B> fmt::Debug for Pool<B> {
    // A count only: the hosts are the caller's business.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pool")
            .field("idle", &self.idle_count())
            .finish()
    }
}

/// A connection lent to one response until its body ends. It holds the pool weakly: once
/// every clone of the service is gone, a body that ends closes its connection.
pub(crate) struct Lease<B> {
    pool: Weak<Pool<B>>,
    target: Target,
    connection: Connection<B>,
}

impl<B> Lease<B> {
    pub(crate) fn new(pool: &Arc<Pool<B>>, target: Target, connection: Connection<B>) -> Self {
        Lease {
            pool: Arc::downgrade(pool),
            target,
            connection,
        }
    }
}

/// A [`Lease`] whatever the request body's type, for the response's `Body`, which has none.
/// Dropping it without [`release`](Release::release) closes the connection.
pub(crate) trait Release: Send + Sync {
    /// Gives the connection back to its pool: its response was read to its end (the pool
    /// keeps it if its request was written in full).
    fn release(self: Box<Self>);
}

impl<B: Send + 'static> Release for Lease<B> {
    fn release(self: Box<Self>) {
        if let Some(pool) = self.pool.upgrade() {
            pool.put(self.target, self.connection);
        }
    }
}
