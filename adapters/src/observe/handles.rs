//! The handles of the series a plain request makes, registered once per thread with the
//! process's global recorder and kept (feature `metrics`).
//!
//! Rule: a recorder installed for good is asked for a series once, not at every event, as the
//! `metrics` docs advise (register, keep the handle): with a recorder installed, a request
//! builds no labels, hashes no key and allocates nothing for its series. Only the global
//! recorder's handles are kept: it is set once and lives as long as the process, so a handle
//! registered with it never goes stale. A local recorder (`metrics::with_local_recorder`, what
//! tests install) may end and another begin at the same address; its series are registered at
//! every event, as without the cache.
//!
//! The facade does not say whether the recorder in force is the global one or a local one. A
//! thread of its own, which no local recorder is set on, looks once at what it sees (a
//! thread started once per process, or once per local recorder a thread meets while the global
//! one is not known yet); the recorder in force is the global one when it is the same object
//! (the same address and size: no other live object has the address of one that never ends).
//! A recorder of no size (whose address says nothing) is never taken for the global one.
//!
//! Kept per thread, for the origins and methods a thread last used (at most [`GROUPS`], and
//! [`PER_GROUP`] series of each kind per group): beyond that, series are registered at every
//! event, as without the cache. The series of waits, pauses, throttles and denials are
//! registered at every event (they come with retries, which cost far more).

use core::cell::{Cell, RefCell};
use std::sync::OnceLock;

use ::metrics::{Counter, Histogram, Label, Recorder};

use backstop_core::{AttemptOutcome, StopReason};

/// The most groups (method and origin) a thread keeps.
const GROUPS: usize = 32;

/// The most series of one kind (by status, resend count, stop reason) a group keeps.
const PER_GROUP: usize = 64;

/// A recorder told apart from every other live one: its address and its size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct RecorderId {
    address: usize,
    size: usize,
}

impl RecorderId {
    fn of(recorder: &dyn Recorder) -> Self {
        let at: *const dyn Recorder = recorder;
        RecorderId {
            address: at.addr(),
            size: core::mem::size_of_val(recorder),
        }
    }
}

/// Whether the recorder in force on this thread (known to be listening) is the process's
/// global one, whose handles may be kept.
pub(crate) fn in_force_is_global() -> bool {
    static GLOBAL: OnceLock<RecorderId> = OnceLock::new();
    thread_local! {
        /// The last recorder this thread found not to be the global one.
        static NOT_GLOBAL: Cell<Option<RecorderId>> = const { Cell::new(None) };
    }
    let current = ::metrics::with_recorder(RecorderId::of);
    if current.size == 0 {
        return false;
    }
    if let Some(global) = GLOBAL.get() {
        return *global == current;
    }
    if NOT_GLOBAL.try_with(Cell::get).ok().flatten() == Some(current) {
        return false;
    }
    // A thread with no local recorder sees the global one, if any (else the facade's no-op,
    // which has no size). No thread to be had: nothing is kept.
    let seen = std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name("backstop-metrics".into())
            .spawn_scoped(scope, || ::metrics::with_recorder(RecorderId::of))
            .ok()
            .and_then(|seen| seen.join().ok())
    });
    match seen {
        Some(global) if global.size != 0 => {
            let global = *GLOBAL.get_or_init(|| global);
            global == current
        }
        _ => {
            let _ = NOT_GLOBAL.try_with(|not| not.set(Some(current)));
            false
        }
    }
}

/// What tells one `backstop.operations` series of a group from another: the stop reason,
/// whether the operation retried, its last attempt's result.
pub(crate) type Finished = (StopReason, bool, Option<AttemptOutcome>);

/// The kept handles of one group: an operation's method and origin labels.
struct Group {
    labels: [Label; 3],
    /// `backstop.operation.attempts` and `backstop.operation.wait.duration`.
    attempts: Option<Histogram>,
    waited: Option<Histogram>,
    /// `http.client.request.duration`, by the attempt's result and resend count.
    durations: Vec<((AttemptOutcome, u32), Histogram)>,
    /// `backstop.operations`, by the stop reason, whether it retried and the last result.
    operations: Vec<(Finished, Counter)>,
}

/// Which of a group's histograms.
pub(crate) enum Which {
    /// `backstop.operation.attempts`.
    Attempts,
    /// `backstop.operation.wait.duration`.
    Waited,
    /// `http.client.request.duration` of an attempt with this result and resend count.
    Duration(AttemptOutcome, u32),
}

thread_local! {
    static KEPT: RefCell<Vec<Group>> = const { RefCell::new(Vec::new()) };
}

/// Whether two groups' labels have the same values (their keys are the same in every group).
/// A thread's labels for one origin share their strings (the server labels it keeps, the
/// method's and the port's static ones): the same string is found without reading it.
fn same_values(a: &[Label; 3], b: &[Label; 3]) -> bool {
    a.iter().zip(b).all(|(a, b)| {
        let (a, b) = (a.value(), b.value());
        core::ptr::eq(a, b) || a == b
    })
}

/// A group's kept handles, as [`kept`] lends them.
pub(crate) struct Kept<'g>(&'g mut Group);

impl Kept<'_> {
    /// Records `value` in the histogram `which`, registered by `register` the first time.
    /// `false` (`register` not called, nothing recorded) when the group keeps no more of its
    /// kind: the caller registers it and records.
    pub(crate) fn record(
        &mut self,
        which: Which,
        value: f64,
        register: impl FnOnce() -> Histogram,
    ) -> bool {
        let group = &mut *self.0;
        let (durations, key) = match which {
            Which::Attempts => {
                group.attempts.get_or_insert_with(register).record(value);
                return true;
            }
            Which::Waited => {
                group.waited.get_or_insert_with(register).record(value);
                return true;
            }
            Which::Duration(result, resend) => (&mut group.durations, (result, resend)),
        };
        if let Some((_, histogram)) = durations.iter().find(|(k, _)| *k == key) {
            histogram.record(value);
            return true;
        }
        if durations.len() == PER_GROUP {
            return false;
        }
        let histogram = register();
        histogram.record(value);
        durations.push((key, histogram));
        true
    }

    /// Increments the `backstop.operations` counter for `key`, registered by `register` the
    /// first time. `false` (`register` not called, nothing counted) when the group keeps no
    /// more of them.
    pub(crate) fn count_operation(
        &mut self,
        key: Finished,
        register: impl FnOnce() -> Counter,
    ) -> bool {
        let operations = &mut self.0.operations;
        if let Some((_, counter)) = operations.iter().find(|(k, _)| *k == key) {
            counter.increment(1);
            return true;
        }
        if operations.len() == PER_GROUP {
            return false;
        }
        let counter = register();
        counter.increment(1);
        operations.push((key, counter));
        true
    }
}

/// Runs `f` on this thread's kept handles of the group `labels`, made (and the oldest dropped
/// when the thread keeps [`GROUPS`]) if it keeps none; `None` when the thread's locals are being
/// torn down (or `f` runs already: a recorder that records through backstop).
pub(crate) fn kept<T>(labels: &[Label; 3], f: impl FnOnce(Kept<'_>) -> T) -> Option<T> {
    KEPT.try_with(|kept| {
        let mut kept = kept.try_borrow_mut().ok()?;
        let i = match kept.iter().position(|g| same_values(&g.labels, labels)) {
            Some(i) => i,
            None => {
                if kept.len() == GROUPS {
                    kept.remove(0);
                }
                kept.push(Group {
                    labels: labels.clone(),
                    attempts: None,
                    waited: None,
                    durations: Vec::new(),
                    operations: Vec::new(),
                });
                kept.len() - 1
            }
        };
        kept.get_mut(i).map(|group| f(Kept(group)))
    })
    .ok()
    .flatten()
}
