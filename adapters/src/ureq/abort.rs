//! Abort for a blocking client: shut down the sockets of the operation's attempt in flight.
//!
//! Rule: an abort interrupts the request in flight, even one blocked in a read or a write, and
//! only that operation's. ureq 3.5 hands a connector each connection's shutdown handle
//! (`ConnectionDetails::register_shutdown`). [`AbortConnector`] wraps ureq's default connector
//! and keeps the handle in its transport; whenever a transport does I/O for an attempt (a new
//! connection, or one reused from the pool), it ties its handle to that attempt's [`Abort`].
//! When the attempt ends the ties are undone, so a later abort never touches a connection that
//! is back in the pool.
//!
//! The attempt reaches the transport through a thread-local: ureq runs the connector and the
//! transport on the calling thread, the thread that runs the attempt.

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};

use crate::abort::Abort;
use crate::transport::HookGuard;
use ureq::unversioned::transport::{
    Buffers, ConnectionDetails, Connector, DefaultConnector, NextTimeout, ShutdownHandle, Transport,
};

type Handle = Weak<dyn ShutdownHandle>;

thread_local! {
    /// The attempt this thread runs, when its operation can be aborted.
    static CURRENT: RefCell<Option<Scope>> = const { RefCell::new(None) };
    /// The id of `CURRENT`'s attempt (0: none): a transport serving an operation without an
    /// abort, the usual case, learns from it alone that it has nothing to tie (a plain load,
    /// where `CURRENT`, which has a destructor, takes a borrow and a check of its state).
    static CURRENT_ID: Cell<u64> = const { Cell::new(0) };
}

/// Runs `attempt` (one blocking exchange) so that `abort` shuts down every connection it uses.
pub(crate) fn interruptible<T>(abort: Option<&Abort>, attempt: impl FnOnce() -> T) -> T {
    match abort {
        Some(abort) => {
            let _current = Current::enter(abort);
            attempt()
        }
        None => attempt(),
    }
}

/// One attempt's ties between its abort and its connections.
struct Scope {
    /// Tells transports apart the attempts they serve (a transport ties itself once each).
    id: u64,
    abort: Abort,
    /// The attempt runs: under this lock, a hook shuts a connection down only while it does.
    running: Arc<Mutex<bool>>,
    /// Dropped when the attempt ends, which unregisters the hooks.
    hooks: Vec<HookGuard>,
}

impl Scope {
    fn tie(&mut self, handle: &Handle) {
        let (running, handle) = (self.running.clone(), handle.clone());
        self.hooks.push(self.abort.on_abort(move || {
            let running = running.lock().unwrap_or_else(PoisonError::into_inner);
            if let (true, Some(socket)) = (*running, handle.upgrade()) {
                socket.shutdown();
            }
        }));
    }
}

/// Makes an attempt the thread's current one until dropped (also when the attempt panics),
/// then undoes its ties.
struct Current(Option<Scope>);

impl Current {
    fn enter(abort: &Abort) -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        let scope = Scope {
            id: NEXT.fetch_add(1, Ordering::Relaxed),
            abort: abort.clone(),
            running: Arc::new(Mutex::new(true)),
            hooks: Vec::new(),
        };
        CURRENT_ID.with(|id| id.set(scope.id));
        Current(CURRENT.with(|c| c.replace(Some(scope))))
    }
}

impl Drop for Current {
    fn drop(&mut self) {
        let previous = self.0.take();
        CURRENT_ID.with(|id| id.set(previous.as_ref().map_or(0, |s| s.id)));
        if let Some(scope) = CURRENT.with(|c| c.replace(previous)) {
            // A hook that runs from now on finds the attempt over; one running now finishes
            // before this returns.
            *scope.running.lock().unwrap_or_else(PoisonError::into_inner) = false;
        }
    }
}

/// ureq's default connector (TCP, TLS, proxies), with abortable connections.
#[derive(Debug, Default)]
pub(crate) struct AbortConnector {
    inner: DefaultConnector,
}

impl Connector<()> for AbortConnector {
    type Out = AbortableTransport;

    fn connect(
        &self,
        details: &ConnectionDetails,
        chained: Option<()>,
    ) -> Result<Option<Self::Out>, ureq::Error> {
        let slot: Arc<Mutex<Option<Handle>>> = Arc::default();
        let (forward, keep) = (details.register_shutdown.clone(), slot.clone());
        let ours = ConnectionDetails {
            uri: details.uri,
            addrs: details.addrs.clone(),
            config: details.config,
            request_level: details.request_level,
            resolver: details.resolver,
            now: details.now,
            timeout: details.timeout,
            current_time: details.current_time.clone(),
            run_connector: details.run_connector.clone(),
            register_shutdown: Arc::new(move |handle: Handle| {
                // Keep the first handle: the socket under any TLS or proxy layer.
                keep.lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .get_or_insert_with(|| handle.clone());
                forward(handle)
            }),
        };
        let Some(inner) = self.inner.connect(&ours, chained)? else {
            return Ok(None);
        };
        let handle = slot.lock().unwrap_or_else(PoisonError::into_inner).take();
        let mut transport = AbortableTransport {
            inner,
            handle,
            tied_to: 0,
        };
        transport.tie_to_current()?;
        Ok(Some(transport))
    }
}

/// A transport that ties itself to the attempt doing I/O on it.
#[derive(Debug)]
pub(crate) struct AbortableTransport {
    inner: Box<dyn Transport>,
    handle: Option<Handle>,
    /// The id of the attempt it is tied to (0: none yet).
    tied_to: u64,
}

impl AbortableTransport {
    /// Ties the connection to the thread's current attempt, if it is not yet; fails if that
    /// attempt's operation was aborted.
    fn tie_to_current(&mut self) -> Result<(), ureq::Error> {
        let Some(handle) = &self.handle else {
            return Ok(());
        };
        if CURRENT_ID.with(Cell::get) == 0 {
            return Ok(());
        }
        CURRENT.with(|c| {
            let mut current = c.borrow_mut();
            let Some(scope) = current.as_mut() else {
                return Ok(());
            };
            if self.tied_to != scope.id {
                self.tied_to = scope.id;
                scope.tie(handle);
            }
            if scope.abort.is_aborted() {
                return Err(ureq::Error::Io(std::io::Error::new(
                    std::io::ErrorKind::Interrupted,
                    "the operation was aborted",
                )));
            }
            Ok(())
        })
    }
}

impl Transport for AbortableTransport {
    fn buffers(&mut self) -> &mut dyn Buffers {
        self.inner.buffers()
    }

    fn transmit_output(&mut self, amount: usize, timeout: NextTimeout) -> Result<(), ureq::Error> {
        self.tie_to_current()?;
        self.inner.transmit_output(amount, timeout)
    }

    fn await_input(&mut self, timeout: NextTimeout) -> Result<bool, ureq::Error> {
        self.tie_to_current()?;
        self.inner
            .await_input(crate::ureq::drain::within_drain(timeout))
    }

    fn is_open(&mut self) -> bool {
        self.inner.is_open()
    }

    fn is_tls(&self) -> bool {
        self.inner.is_tls()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;

    /// A stand-in for a socket: records its shutdown.
    #[derive(Default)]
    struct FakeSocket(AtomicBool);

    impl ShutdownHandle for FakeSocket {
        fn shutdown(&self) {
            self.0.store(true, Ordering::SeqCst);
        }
    }

    fn tie_current(socket: &Arc<FakeSocket>) {
        let handle: Handle = Arc::downgrade(socket) as Handle;
        CURRENT.with(|c| {
            c.borrow_mut()
                .as_mut()
                .expect("a current attempt")
                .tie(&handle)
        });
    }

    #[test]
    fn an_abort_shuts_down_the_connections_of_the_attempt_in_flight() {
        let abort = Abort::new();
        let socket = Arc::new(FakeSocket::default());
        interruptible(Some(&abort), || {
            tie_current(&socket);
            abort.abort();
        });
        assert!(socket.0.load(Ordering::SeqCst));
    }

    #[test]
    fn an_abort_after_the_attempt_leaves_its_connections_alone() {
        let abort = Abort::new();
        let socket = Arc::new(FakeSocket::default());
        interruptible(Some(&abort), || tie_current(&socket));
        // The connection is back in the pool by now, perhaps serving another operation.
        abort.abort();
        assert!(!socket.0.load(Ordering::SeqCst));
    }
}
