//! The hard bound on a blocking attempt: a timer thread that stops attempts at their deadline.
//!
//! Rule (DESIGN.md "Semantics"): an attempt never runs past its timeout, which never runs past
//! the overall deadline. ureq's per-phase timeouts (connect, send, receive the head) bound each
//! phase, not their sum; the watchdog bounds the sum, shutting the attempt's sockets down at
//! its deadline, through the same mechanism as an abort.
//!
//! Cheap on the hot path: registering is one lock and one push; the thread is woken only when
//! a deadline earlier than its own next wake-up arrives (deadlines of sequential attempts with
//! the same timeout only grow), so it wakes about once per timeout period. Entries of attempts
//! that are over are dropped lazily.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError, Weak};
use std::time::Instant;

use crate::abortable::AttemptScope;

/// One client's watchdog. Dropping the last clone of the client stops its thread.
#[derive(Default)]
pub(crate) struct Watchdog {
    shared: Arc<Shared>,
}

#[derive(Default)]
struct Shared {
    state: Mutex<State>,
    wake: Condvar,
}

#[derive(Default)]
struct State {
    entries: BinaryHeap<Entry>,
    /// When the thread will wake by itself (`None`: only when notified).
    wakes_at: Option<Instant>,
    running: bool,
    stop: bool,
}

struct Entry {
    at: Instant,
    scope: Weak<AttemptScope>,
}

// A min-heap on the deadline.
impl Ord for Entry {
    fn cmp(&self, other: &Self) -> Ordering {
        other.at.cmp(&self.at)
    }
}
impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.at == other.at
    }
}
impl Eq for Entry {}

impl core::fmt::Debug for Watchdog {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Watchdog").finish_non_exhaustive()
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Watchdog {
    /// Stops `scope` at `at`, unless it is over by then.
    pub(crate) fn watch(&self, at: Instant, scope: &Arc<AttemptScope>) {
        let mut state = self.shared.lock();
        // The oldest entries are usually of attempts long over: drop them as we go.
        while state
            .entries
            .peek()
            .is_some_and(|e| e.scope.strong_count() == 0)
        {
            state.entries.pop();
        }
        state.entries.push(Entry {
            at,
            scope: Arc::downgrade(scope),
        });
        if !state.running {
            state.running = true;
            let shared = self.shared.clone();
            let spawned = std::thread::Builder::new()
                .name("backstop-ureq-watchdog".into())
                .spawn(move || watch_loop(&shared));
            // Without the thread, the per-phase timeouts still bound each phase.
            state.running = spawned.is_ok();
        } else if state.wakes_at.is_none_or(|w| at < w) {
            // The thread sleeps past this deadline: wake it. Sequential attempts with one
            // timeout have growing deadlines, so this is rare.
            state.wakes_at = Some(at);
            self.shared.wake.notify_one();
        }
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
        let now = Instant::now();
        while state.entries.peek().is_some_and(|e| e.at <= now) {
            if let Some(scope) = state.entries.pop().and_then(|e| e.scope.upgrade()) {
                scope.stop(true);
            }
        }
        let next = state.entries.peek().map(|e| e.at);
        state.wakes_at = next;
        state = match next {
            Some(at) => {
                shared
                    .wake
                    .wait_timeout(state, at.saturating_duration_since(now))
                    .unwrap_or_else(PoisonError::into_inner)
                    .0
            }
            None => shared
                .wake
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner),
        };
    }
}
