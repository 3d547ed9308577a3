//! The events of a retrier's operations, recorded in order for a scenario to assert on.

use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::Duration;

use backstop::{EventKind, Retrier};

/// The events recorded so far, shared with the retrier's callback, and a condition variable
/// told of each new one.
#[derive(Clone, Debug, Default)]
pub struct Recorded(Arc<(Mutex<Vec<EventKind>>, Condvar)>);

impl Recorded {
    /// Every event recorded so far, in order.
    #[must_use]
    pub fn all(&self) -> Vec<EventKind> {
        self.0
             .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Waits until an event for which `seen` holds has been recorded, at most `timeout` (an
    /// operation running on another thread): whether one was.
    pub fn wait_for(&self, timeout: Duration, seen: impl Fn(&EventKind) -> bool) -> bool {
        let (events, recorded) = &*self.0;
        let events = events.lock().unwrap_or_else(PoisonError::into_inner);
        let (events, _) = recorded
            .wait_timeout_while(events, timeout, |events| !events.iter().any(&seen))
            .unwrap_or_else(PoisonError::into_inner);
        events.iter().any(seen)
    }
}

/// `retrier` recording the kind of every event of its operations (and its clones'), and the
/// record.
#[must_use]
pub fn recorded(retrier: Retrier) -> (Retrier, Recorded) {
    let record = Recorded::default();
    let events = record.0.clone();
    let retrier = retrier.on_event(move |e| {
        let (recorded, told) = &*events;
        recorded
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(e.kind);
        told.notify_all();
    });
    (retrier, record)
}
