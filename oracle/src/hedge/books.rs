//! The budget and the latency source of the machine under test, shared with the model so that
//! it can read what the machine told them. Both can be muted while the model observes a clone
//! of the machine (its calls are not the machine's).

use core::time::Duration;
use std::cell::{Cell, RefCell};
use std::rc::Rc;

use backstop_core::{AttemptOutcome, Budget, Instant, Latencies, LatencyTracker};

/// A budget that denies the requests its pattern says and keeps the books.
#[derive(Clone, Debug, Default)]
pub(super) struct Books(Rc<Ledger>);

#[derive(Debug, Default)]
struct Ledger {
    /// Bit `k`: the `k`-th request is denied.
    denials: u32,
    asked: Cell<u32>,
    denied: Cell<u32>,
    given_back: Cell<u32>,
    starts: Cell<u32>,
    /// The `now` of the last start heard of.
    started_at: Cell<Option<Instant>>,
    successes: Cell<u32>,
    failures: Cell<u32>,
    muted: Cell<bool>,
}

impl Books {
    pub(super) fn new(denials: u32) -> Self {
        Books(Rc::new(Ledger {
            denials,
            ..Ledger::default()
        }))
    }

    /// Copies granted and not given back.
    pub(super) fn paid(&self) -> u32 {
        let granted = self.0.asked.get() - self.0.denied.get();
        assert!(
            self.0.given_back.get() <= granted,
            "a copy given back that was never granted"
        );
        granted - self.0.given_back.get()
    }

    pub(super) fn asked(&self) -> u32 {
        self.0.asked.get()
    }

    pub(super) fn denied(&self) -> u32 {
        self.0.denied.get()
    }

    pub(super) fn starts(&self) -> u32 {
        self.0.starts.get()
    }

    pub(super) fn started_at(&self) -> Option<Instant> {
        self.0.started_at.get()
    }

    /// The attempts' ends the budget heard of: (successes, failures).
    pub(super) fn ends(&self) -> (u32, u32) {
        (self.0.successes.get(), self.0.failures.get())
    }

    fn muted(&self) -> bool {
        self.0.muted.get()
    }

    fn bump(&self, c: &Cell<u32>) {
        if !self.muted() {
            c.set(c.get() + 1);
        }
    }
}

impl Budget for Books {
    fn on_operation_start(&self, now: Instant) {
        if !self.muted() {
            self.0.started_at.set(Some(now));
        }
        self.bump(&self.0.starts);
    }

    fn try_retry(&self, _now: Instant, _cause: AttemptOutcome) -> bool {
        // A muted call (on a clone) answers what the machine's own next request would get.
        let k = self.0.asked.get();
        let grant = k >= 32 || self.0.denials & (1 << k) == 0;
        self.bump(&self.0.asked);
        if !grant {
            self.bump(&self.0.denied);
        }
        grant
    }

    fn on_retry_cancelled(&self, now: Instant, granted_at: Instant, _cause: AttemptOutcome) {
        assert!(granted_at <= now, "a copy given back before it was granted");
        self.bump(&self.0.given_back);
    }

    fn on_attempt_end(&self, _now: Instant, success: bool) {
        self.bump(if success {
            &self.0.successes
        } else {
            &self.0.failures
        });
    }
}

/// A [`LatencyTracker`] that also lists what the machine recorded.
#[derive(Clone)]
pub(super) struct Samples(Rc<Tracked>);

struct Tracked {
    tracker: LatencyTracker,
    recorded: RefCell<Vec<(Instant, Duration)>>,
    muted: Cell<bool>,
}

impl core::fmt::Debug for Samples {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        // The tracker's 4 KB of counters say nothing the list does not.
        write!(f, "Samples({:?})", self.0.recorded.borrow())
    }
}

impl Samples {
    /// A tracker with `window`, holding `preload` (recorded at `at`, before the machine).
    pub(super) fn new(window: Duration, at: Instant, preload: &[Duration]) -> Self {
        let tracker = LatencyTracker::new(window);
        for &d in preload {
            tracker.record(at, d);
        }
        Samples(Rc::new(Tracked {
            tracker,
            recorded: RefCell::new(Vec::new()),
            muted: Cell::new(false),
        }))
    }

    /// What the machine recorded, sorted.
    pub(super) fn recorded(&self) -> Vec<(Instant, Duration)> {
        let mut v = self.0.recorded.borrow().clone();
        v.sort();
        v
    }
}

impl Latencies for Samples {
    fn quantile(&self, now: Instant, percentile: u8, min_samples: u32) -> Option<Duration> {
        self.0.tracker.quantile(now, percentile, min_samples)
    }

    fn record(&self, now: Instant, latency: Duration) {
        if !self.0.muted.get() {
            self.0.recorded.borrow_mut().push((now, latency));
            self.0.tracker.record(now, latency);
        }
    }
}

/// Runs `f` (an observation on a clone) with the budget and the latencies muted.
pub(super) fn muted<T>(books: &Books, samples: &Samples, f: impl FnOnce() -> T) -> T {
    books.0.muted.set(true);
    samples.0.muted.set(true);
    let out = f();
    books.0.muted.set(false);
    samples.0.muted.set(false);
    out
}
