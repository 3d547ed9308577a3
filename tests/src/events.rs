//! The events of a retrier's operations, recorded in order for a scenario to assert on.

use std::sync::{Arc, Mutex, PoisonError};

use backstop::{EventKind, Retrier};

/// The events recorded so far, shared with the retrier's callback.
#[derive(Clone, Debug, Default)]
pub struct Recorded(Arc<Mutex<Vec<EventKind>>>);

impl Recorded {
    /// Every event recorded so far, in order.
    #[must_use]
    pub fn all(&self) -> Vec<EventKind> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// `retrier` recording the kind of every event of its operations (and its clones'), and the
/// record.
#[must_use]
pub fn recorded(retrier: Retrier) -> (Retrier, Recorded) {
    let record = Recorded::default();
    let events = record.0.clone();
    let retrier = retrier.on_event(move |e| {
        events
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(e.kind);
    });
    (retrier, record)
}
