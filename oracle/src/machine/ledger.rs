//! A budget that grants every retry and keeps the books, for the rule that
//! the budget pays only for retries actually sent. At every step it holds exactly the retries
//! sent, plus the one granted and not sent yet (the machine waits for it, or asks for its
//! send); once the operation is over, exactly the retries sent. It also counts the successes
//! the machine reports (a final 2xx or 3xx, never a final 4xx or 5xx).
//! send); once the operation is over, exactly the retries sent. It also hears of the
//! operation's start: once, when its first attempt starts (never for an operation that sent
//! nothing).

use std::cell::Cell;
use std::rc::Rc;

use backstop_core::{AttemptOutcome, Budget, Instant};

/// Shared between the machine (as its budget) and the model (to read the books).
#[derive(Clone, Debug, Default)]
pub(crate) struct Ledger(Rc<Books>);

#[derive(Debug, Default)]
struct Books {
    granted: Cell<u32>,
    cancelled: Cell<u32>,
    successes: Cell<u32>,
    /// `on_operation_start` calls, and the `now` of the last.
    starts: Cell<u32>,
    started_at: Cell<Option<Instant>>,
    /// While the model observes a clone of the machine: its calls are not the machine's.
    /// Shared with the overload oracle's gate and limiter, which are muted with it.
    muted: Rc<Cell<bool>>,
}

impl Ledger {
    /// Books whose muting (see [`Ledger::muted`]) is `muted`, shared with other objects the
    /// machine calls.
    pub(crate) fn sharing(muted: Rc<Cell<bool>>) -> Self {
        Ledger(Rc::new(Books {
            granted: Cell::new(0),
            cancelled: Cell::new(0),
            successes: Cell::new(0),
            starts: Cell::new(0),
            started_at: Cell::new(None),
            muted,
        }))
    }

    /// Retries granted and not given back.
    pub(super) fn paid(&self) -> u32 {
        let cancelled = self.0.cancelled.get();
        assert!(
            cancelled <= self.0.granted.get(),
            "a retry given back that was never granted"
        );
        self.0.granted.get() - cancelled
    }

    /// Attempts' ends reported as successes.
    pub(super) fn successes(&self) -> u32 {
        self.0.successes.get()
    }

    /// The operation starts the budget heard of, and the `now` of the last.
    pub(super) fn starts(&self) -> (u32, Option<Instant>) {
        (self.0.starts.get(), self.0.started_at.get())
    }

    /// Runs `f` (an observation on a clone) without counting its budget calls.
    pub(crate) fn muted<T>(&self, f: impl FnOnce() -> T) -> T {
        self.0.muted.set(true);
        let out = f();
        self.0.muted.set(false);
        out
    }
}

impl Budget for Ledger {
    fn on_operation_start(&self, now: Instant) {
        if !self.0.muted.get() {
            self.0.starts.set(self.0.starts.get() + 1);
            self.0.started_at.set(Some(now));
        }
    }

    fn try_retry(&self, _now: Instant, _cause: AttemptOutcome) -> bool {
        if !self.0.muted.get() {
            self.0.granted.set(self.0.granted.get() + 1);
        }
        true
    }

    fn on_retry_cancelled(&self, _now: Instant, granted_at: Instant, _cause: AttemptOutcome) {
        assert!(
            granted_at <= _now,
            "a retry given back before it was granted"
        );
        if !self.0.muted.get() {
            self.0.cancelled.set(self.0.cancelled.get() + 1);
        }
    }

    fn on_attempt_end(&self, _now: Instant, success: bool) {
        if success && !self.0.muted.get() {
            self.0.successes.set(self.0.successes.get() + 1);
        }
    }
}
