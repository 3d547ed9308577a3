//! The hard bound on a blocking attempt: a timer thread that stops attempts at their deadline.
//!
//! Rule (DESIGN.md "Semantics"): an attempt never runs past its timeout, which never runs past
//! the overall deadline. The watchdog bounds the whole exchange up to the response head (send
//! and receive together), shutting the attempt's sockets down at its deadline, through the same
//! mechanism as an abort; ureq's own timeouts are left for what a shutdown cannot interrupt
//! (resolve, connect).
//!
//! Cheap on the hot path: each thread's [`AttemptScope`] registers with the watchdog once and
//! is reused by its later attempts; an attempt then only stores its deadline in its scope (one
//! atomic store) and reads when the thread will wake next (one atomic load). The thread is
//! woken only when a deadline earlier than its own next wake-up arrives (deadlines of
//! sequential attempts with the same timeout only grow), so it wakes about once per timeout
//! period. Scopes of threads that are gone are dropped as the thread scans.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError, Weak};
use std::time::{Duration, Instant};

use crate::abortable::AttemptScope;

/// One client's watchdog. Dropping the last clone of the client stops its thread.
#[derive(Default)]
pub(crate) struct Watchdog {
    shared: Arc<Shared>,
}

pub(crate) struct Shared {
    /// Deadlines are nanoseconds since this instant.
    origin: Instant,
    /// When the thread wakes by itself, in nanoseconds since `origin` (`u64::MAX`: only when
    /// notified).
    wakes_at: AtomicU64,
    /// The thread is running.
    running: AtomicBool,
    state: Mutex<State>,
    wake: Condvar,
}

impl Default for Shared {
    fn default() -> Self {
        Shared {
            origin: Instant::now(),
            wakes_at: AtomicU64::new(u64::MAX),
            running: AtomicBool::new(false),
            state: Mutex::default(),
            wake: Condvar::new(),
        }
    }
}

#[derive(Default)]
struct State {
    scopes: Vec<Weak<AttemptScope>>,
    stop: bool,
}

impl core::fmt::Debug for Watchdog {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Watchdog").finish_non_exhaustive()
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// `at` in nanoseconds since the origin (saturating).
    fn nanos(&self, at: Instant) -> u64 {
        u64::try_from(at.saturating_duration_since(self.origin).as_nanos()).unwrap_or(u64::MAX)
    }
}

impl Watchdog {
    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// Watches `scope` from now on (its deadline, when it has one).
    pub(crate) fn register(&self, scope: &Arc<AttemptScope>) {
        let mut state = self.shared.lock();
        state.scopes.push(Arc::downgrade(scope));
        self.start(&state);
    }

    /// Starts the thread unless it runs; the caller holds the lock.
    fn start(&self, _locked: &MutexGuard<'_, State>) {
        if self.shared.running.load(Ordering::Relaxed) {
            return;
        }
        let shared = self.shared.clone();
        let spawned = std::thread::Builder::new()
            .name("backstop-ureq-watchdog".into())
            .spawn(move || watch_loop(&shared));
        // Without the thread, the caller falls back to ureq's per-phase timeouts.
        self.shared
            .running
            .store(spawned.is_ok(), Ordering::Relaxed);
    }

    /// Stops `scope`'s current attempt at `at`, unless it is over by then. Returns whether the
    /// watchdog runs (else nothing will stop the attempt).
    pub(crate) fn watch(&self, scope: &AttemptScope, at: Instant) -> bool {
        let shared = &*self.shared;
        if !shared.running.load(Ordering::Relaxed) {
            // The thread could not start before: try again.
            self.start(&shared.lock());
            if !shared.running.load(Ordering::Relaxed) {
                return false;
            }
        }
        let at = shared.nanos(at);
        // Both sequentially consistent, paired with the thread's store of `wakes_at` and its
        // scan of the deadlines after it: either the thread sees this deadline, or this sees
        // when the thread will wake, and wakes it if that is too late.
        scope.deadline.store(at, Ordering::SeqCst);
        if at < shared.wakes_at.load(Ordering::SeqCst) {
            // Taking the lock waits until the thread sleeps (it holds the lock until then).
            let _locked = shared.lock();
            shared.wake.notify_one();
        }
        true
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.shared.lock().stop = true;
        self.shared.wake.notify_one();
    }
}

fn watch_loop(shared: &Shared) {
    let mut state = shared.lock();
    // Bounded by the client's life: `stop` is set when its last clone is dropped.
    while !state.stop {
        let now = shared.nanos(Instant::now());
        let mut next = u64::MAX;
        state.scopes.retain(|scope| {
            let Some(scope) = scope.upgrade() else {
                return false;
            };
            let at = scope.deadline.load(Ordering::SeqCst);
            if at <= now {
                scope.expire_if_due(now);
            } else {
                next = next.min(at);
            }
            true
        });
        shared.wakes_at.store(next, Ordering::SeqCst);
        // A deadline stored before `wakes_at` was, but after its scope was scanned: the
        // attempt did not wake the thread (it saw the old `wakes_at`), so look again.
        let missed = state.scopes.iter().any(|scope| {
            scope
                .upgrade()
                .is_some_and(|s| s.deadline.load(Ordering::SeqCst) < next)
        });
        if missed {
            continue;
        }
        state = if next == u64::MAX {
            shared
                .wake
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner)
        } else {
            let sleep = Duration::from_nanos(next.saturating_sub(now));
            shared
                .wake
                .wait_timeout(state, sleep)
                .unwrap_or_else(PoisonError::into_inner)
                .0
        };
    }
}
