//! Abort and hard timeouts for a blocking client: shut down the socket of the attempt in flight.
//!
//! Rule (the seed's requirement 7): an abort interrupts the request in flight, even one blocked
//! in a read or write. ureq 3.5 lets a connector register a shutdown handle per connection
//! (`ConnectionDetails::register_shutdown`). [`AbortConnector`] wraps ureq's default connector
//! and keeps each connection's handle in its transport; whenever a transport does I/O for an
//! attempt (a new connection, or one reused from the pool), it binds itself to that attempt's
//! [`AttemptScope`], which the attempt's [`Abort`] hook shuts down, and so does the client's
//! [`Watchdog`] when the attempt's timeout expires. Only that operation's connection is
//! closed; the agent and other operations carry on.
//!
//! The scope travels through a thread-local: ureq runs the connector and the transport on the
//! calling thread, the thread that runs the attempt.

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};

use backstop_driver::Abort;

use crate::watchdog::{Shared, Watchdog};
use ureq::unversioned::transport::{
    Buffers, ConnectionDetails, Connector, DefaultConnector, NextTimeout, ShutdownHandle, Transport,
};

type Handle = Weak<dyn ShutdownHandle>;

/// Scopes kept per thread for reuse, at most this many (one per client the thread uses).
const SPARE_SCOPES: usize = 4;

thread_local! {
    static CURRENT: RefCell<Option<Arc<AttemptScope>>> = const { RefCell::new(None) };
    /// Scopes of attempts that are over, each registered with its client's watchdog: the next
    /// attempt on this thread reuses one instead of allocating and registering a new one.
    static SPARE: RefCell<Vec<Arc<AttemptScope>>> = const { RefCell::new(Vec::new()) };
}

/// The connections of the attempt in flight on one thread, shut down together when its
/// operation is aborted or its timeout expires. Reused by the thread's next attempts (with the
/// same watchdog): every attempt has its own id, and a stop meant for an earlier attempt
/// finds another id and does nothing.
pub(crate) struct AttemptScope {
    /// The id of the attempt the scope serves (0: none, or it is over).
    id: AtomicU64,
    /// Mirrors `ScopeState::stopped`, for a check without the lock on every read and write.
    stopped: AtomicBool,
    /// When the watchdog stops the attempt: nanoseconds since its origin (`u64::MAX`: never).
    pub(crate) deadline: AtomicU64,
    /// The watchdog this scope is registered with (identity only).
    watchdog: Weak<Shared>,
    state: Mutex<ScopeState>,
}

/// Reset when an attempt ends, ready for the next one.
#[derive(Default)]
struct ScopeState {
    handles: Vec<Handle>,
    /// Aborted or expired: connections bound from now on are shut down at once.
    stopped: bool,
    /// The watchdog stopped the attempt at its deadline.
    expired: bool,
}

impl AttemptScope {
    /// Runs `f` (one blocking attempt) with its connections bound to this attempt: `abort`
    /// shuts them down, and so does `watchdog` at `deadline`. `f` is told whether the watchdog
    /// watches it (its thread runs and there is a deadline). Returns `f`'s result and whether
    /// the watchdog stopped it.
    pub(crate) fn run<T>(
        abort: Option<&Abort>,
        watchdog: &Watchdog,
        deadline: Option<std::time::Instant>,
        f: impl FnOnce(bool) -> T,
    ) -> (T, bool) {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        let id = NEXT.fetch_add(1, Ordering::Relaxed);
        let scope = Self::spare(watchdog);
        scope.begin(id);
        let hook = abort.map(|abort| {
            let scope = scope.clone();
            abort.on_abort(move || scope.stop(id, false))
        });
        let watched = deadline.is_some_and(|deadline| watchdog.watch(&scope, deadline));
        let result = {
            // Should the attempt panic, its connections are left alone from then on.
            let _end = EndOnUnwind(&scope);
            let _current = Current::enter(scope.clone());
            f(watched)
        };
        let expired = scope.end();
        drop(hook);
        SPARE.with(|spare| {
            let mut spare = spare.borrow_mut();
            // Most recently used last; scopes of clients that are gone, and beyond that the
            // least recently used, make room.
            if spare.len() >= SPARE_SCOPES {
                spare.retain(|s| s.watchdog.strong_count() > 0);
                if spare.len() >= SPARE_SCOPES {
                    spare.remove(0);
                }
            }
            spare.push(scope);
        });
        (result, expired)
    }

    /// A scope of this thread's for `watchdog` that nothing else holds (an abort hook still
    /// running elsewhere may), or a new one registered with it.
    fn spare(watchdog: &Watchdog) -> Arc<AttemptScope> {
        let shared = watchdog.shared();
        let reused = SPARE.with(|spare| {
            let mut spare = spare.borrow_mut();
            let i = spare.iter().position(|scope| {
                core::ptr::eq(scope.watchdog.as_ptr(), Arc::as_ptr(shared))
                    && Arc::strong_count(scope) == 1
            })?;
            Some(spare.remove(i))
        });
        reused.unwrap_or_else(|| {
            let scope = Arc::new(AttemptScope {
                id: AtomicU64::new(0),
                stopped: AtomicBool::new(false),
                deadline: AtomicU64::new(u64::MAX),
                watchdog: Arc::downgrade(shared),
                state: Mutex::new(ScopeState::default()),
            });
            watchdog.register(&scope);
            scope
        })
    }

    /// Starts serving attempt `id` (the state was reset when the previous one ended).
    fn begin(&self, id: u64) {
        self.id.store(id, Ordering::Release);
    }

    /// Ends the current attempt and resets the state for the next; returns whether the
    /// watchdog stopped it. Under the lock: a stop that holds it finishes first, and any later
    /// one finds no attempt (its connections may be back in the pool: never touch them again).
    fn end(&self) -> bool {
        let mut state = self.lock();
        self.id.store(0, Ordering::Release);
        self.deadline.store(u64::MAX, Ordering::Release);
        self.stopped.store(false, Ordering::Release);
        state.handles.clear();
        state.stopped = false;
        core::mem::take(&mut state.expired)
    }

    fn bind(&self, handle: &Handle) -> bool {
        let mut state = self.lock();
        state.handles.push(handle.clone());
        // A stop that came before the push did not see this connection: shut it down here.
        if state.stopped {
            shutdown(handle);
        }
        state.stopped
    }

    fn is_stopped(&self) -> bool {
        self.stopped.load(Ordering::Acquire)
    }

    /// Shuts down every connection of attempt `id`, unless it is over (or the scope serves
    /// another attempt by now).
    pub(crate) fn stop(&self, id: u64, expired: bool) {
        let mut state = self.lock();
        if self.id.load(Ordering::Acquire) == id {
            self.stop_locked(&mut state, expired);
        }
    }

    /// Stops the current attempt if its deadline is at or before `now` (watchdog nanoseconds),
    /// and clears the deadline: the watchdog need not come back for it.
    pub(crate) fn expire_if_due(&self, now: u64) {
        let mut state = self.lock();
        // Under the lock the attempt cannot end, so no other attempt's deadline is stored.
        if self.id.load(Ordering::Acquire) == 0 || self.deadline.load(Ordering::SeqCst) > now {
            return;
        }
        self.deadline.store(u64::MAX, Ordering::SeqCst);
        self.stop_locked(&mut state, true);
    }

    fn stop_locked(&self, state: &mut ScopeState, expired: bool) {
        state.stopped = true;
        state.expired |= expired;
        self.stopped.store(true, Ordering::Release);
        for handle in &state.handles {
            shutdown(handle);
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ScopeState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

fn shutdown(handle: &Handle) {
    if let Some(h) = handle.upgrade() {
        h.shutdown();
    }
}

/// Ends the scope's attempt if the attempt panics (`AttemptScope::run` ends it otherwise).
struct EndOnUnwind<'a>(&'a AttemptScope);

impl Drop for EndOnUnwind<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.end();
        }
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
            let id = scope.id.load(Ordering::Acquire);
            let stopped = if id == self.bound_to {
                scope.is_stopped()
            } else {
                self.bound_to = id;
                scope.bind(handle)
            };
            if stopped {
                return Err(ureq::Error::Io(std::io::Error::new(
                    std::io::ErrorKind::Interrupted,
                    "attempt stopped (aborted or timed out)",
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Condvar;
    use std::time::{Duration, Instant};

    /// A stand-in for a socket: records its shutdown.
    #[derive(Default)]
    struct FakeSocket {
        down: Mutex<bool>,
        changed: Condvar,
    }

    impl ShutdownHandle for FakeSocket {
        fn shutdown(&self) {
            *self.down.lock().expect("lock") = true;
            self.changed.notify_all();
        }
    }

    impl FakeSocket {
        /// Blocks like a read until shut down or `timeout`; returns whether it was shut down.
        fn read(&self, timeout: Duration) -> bool {
            let down = self.down.lock().expect("lock");
            let (down, _) = self
                .changed
                .wait_timeout_while(down, timeout, |d| !*d)
                .expect("lock");
            *down
        }
    }

    fn attempt_on(socket: &Arc<FakeSocket>, read_for: Duration) -> bool {
        let handle: Handle = Arc::downgrade(socket) as Weak<dyn ShutdownHandle>;
        CURRENT.with(|c| c.borrow().as_ref().expect("a current scope").bind(&handle));
        socket.read(read_for)
    }

    #[test]
    fn watchdog_stops_a_blocked_attempt_at_its_deadline() {
        let watchdog = Watchdog::default();
        let socket = Arc::new(FakeSocket::default());
        let start = Instant::now();
        let deadline = start + Duration::from_millis(50);
        let (interrupted, expired) = AttemptScope::run(None, &watchdog, Some(deadline), |_| {
            attempt_on(&socket, Duration::from_secs(10))
        });
        assert!(interrupted && expired);
        assert!(start.elapsed() >= Duration::from_millis(50));
        assert!(start.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn abort_stops_a_blocked_attempt_and_is_not_a_timeout() {
        let watchdog = Watchdog::default();
        let socket = Arc::new(FakeSocket::default());
        let abort = Abort::new();
        let aborter = {
            let abort = abort.clone();
            let socket = socket.clone();
            std::thread::spawn(move || {
                // Abort once the attempt has bound its socket (the first read started); bounded.
                let give_up = Instant::now() + Duration::from_secs(10);
                while Arc::weak_count(&socket) == 0 && Instant::now() < give_up {
                    std::thread::yield_now();
                }
                abort.abort();
            })
        };
        let (interrupted, expired) = AttemptScope::run(Some(&abort), &watchdog, None, |_| {
            attempt_on(&socket, Duration::from_secs(10))
        });
        aborter.join().expect("aborter");
        assert!(interrupted && !expired);
    }

    #[test]
    fn a_finished_attempt_is_left_alone_by_its_watchdog_and_abort() {
        let watchdog = Watchdog::default();
        let socket = Arc::new(FakeSocket::default());
        let abort = Abort::new();
        let deadline = Instant::now() + Duration::from_millis(20);
        let (interrupted, expired) =
            AttemptScope::run(Some(&abort), &watchdog, Some(deadline), |_| {
                attempt_on(&socket, Duration::ZERO)
            });
        assert!(!interrupted && !expired);
        abort.abort();
        // Past the deadline, the connection (now back in a pool) is still up.
        assert!(!socket.read(Duration::from_millis(100)));
    }
}
