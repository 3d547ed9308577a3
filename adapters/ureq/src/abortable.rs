//! Abort for a blocking client: shut down the socket of the attempt in flight.
//!
//! Rule (the seed's requirement 7): an abort interrupts the request in flight, even one blocked
//! in a read or write. ureq 3.5 lets a connector register a shutdown handle per connection
//! (`ConnectionDetails::register_shutdown`). [`AbortConnector`] wraps ureq's default connector
//! and keeps each connection's handle in its transport; whenever a transport does I/O for an
//! attempt (a new connection, or one reused from the pool), it binds itself to that attempt's
//! [`AttemptScope`], which the attempt's [`Abort`] hook shuts down. Only the aborted
//! operation's connection is closed; the agent and other operations carry on.
//!
//! The scope travels through a thread-local: ureq runs the connector and the transport on the
//! calling thread, the thread that runs the attempt.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};

use backstop_driver::Abort;
use ureq::unversioned::transport::{
    Buffers, ConnectionDetails, Connector, DefaultConnector, NextTimeout, ShutdownHandle, Transport,
};

type Handle = Weak<dyn ShutdownHandle>;

thread_local! {
    static CURRENT: RefCell<Option<Arc<AttemptScope>>> = const { RefCell::new(None) };
}

/// The connections one attempt used, shut down together when its operation is aborted.
pub(crate) struct AttemptScope {
    id: u64,
    abort: Abort,
    handles: Mutex<Vec<Handle>>,
}

impl AttemptScope {
    /// Runs `f` (one blocking attempt) with its connections bound to `abort`.
    pub(crate) fn run<T>(abort: &Abort, f: impl FnOnce() -> T) -> T {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        let scope = Arc::new(AttemptScope {
            id: NEXT.fetch_add(1, Ordering::Relaxed),
            abort: abort.clone(),
            handles: Mutex::new(Vec::new()),
        });
        let hook_scope = scope.clone();
        let _hook = abort.on_abort(move || hook_scope.shutdown_all());
        let _current = Current::enter(scope);
        f()
    }

    fn bind(&self, handle: &Handle) {
        self.lock().push(handle.clone());
        // An abort that fired before the push has already run its hook: shut down here.
        if self.abort.is_aborted() {
            shutdown(handle);
        }
    }

    fn shutdown_all(&self) {
        for handle in self.lock().iter() {
            shutdown(handle);
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Handle>> {
        self.handles.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

fn shutdown(handle: &Handle) {
    if let Some(h) = handle.upgrade() {
        h.shutdown();
    }
}

/// Makes a scope the thread's current one until dropped (also when the attempt panics).
struct Current(Option<Arc<AttemptScope>>);

impl Current {
    fn enter(scope: Arc<AttemptScope>) -> Self {
        Current(CURRENT.with(|c| c.replace(Some(scope))))
    }
}

impl Drop for Current {
    fn drop(&mut self) {
        let previous = self.0.take();
        CURRENT.with(|c| c.replace(previous));
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
        let forward = details.register_shutdown.clone();
        let keep = slot.clone();
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
            bound_to: 0,
        };
        transport.bind_current()?;
        Ok(Some(transport))
    }
}

/// A transport that binds itself to the attempt doing I/O on it.
#[derive(Debug)]
pub(crate) struct AbortableTransport {
    inner: Box<dyn Transport>,
    handle: Option<Handle>,
    bound_to: u64,
}

impl AbortableTransport {
    fn bind_current(&mut self) -> Result<(), ureq::Error> {
        let Some(handle) = &self.handle else {
            return Ok(());
        };
        CURRENT.with(|c| {
            let current = c.borrow();
            let Some(scope) = current.as_ref() else {
                return Ok(());
            };
            if scope.id != self.bound_to {
                scope.bind(handle);
                self.bound_to = scope.id;
            }
            if scope.abort.is_aborted() {
                return Err(ureq::Error::Io(std::io::Error::new(
                    std::io::ErrorKind::Interrupted,
                    "aborted",
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
        self.bind_current()?;
        self.inner.transmit_output(amount, timeout)
    }

    fn await_input(&mut self, timeout: NextTimeout) -> Result<bool, ureq::Error> {
        self.bind_current()?;
        self.inner.await_input(timeout)
    }

    fn is_open(&mut self) -> bool {
        self.inner.is_open()
    }

    fn is_tls(&self) -> bool {
        self.inner.is_tls()
    }
}
