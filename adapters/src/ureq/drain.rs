//! Reading a discarded response's body to its end on the calling thread, so that ureq's pool
//! keeps its connection for the next attempt.
//!
//! Rule: the drain is bounded by bytes and by time, and the abort interrupts it. ureq bounds
//! a body's reads only by the timeouts set when the request was made, which must not bound the
//! caller's own body; so while a drain runs, the connection's transport cuts every wait for
//! input to the drain's end (a thread-local, like the abort's: ureq reads on the calling
//! thread).

use std::cell::Cell;
use std::io;
use std::time::Instant;

use crate::abort::Abort;
use crate::transport::DrainLimits;
use ureq::unversioned::transport::time::Duration;
use ureq::unversioned::transport::NextTimeout;
use ureq::{Body, Timeout};

use crate::ureq::abort::interruptible;

thread_local! {
    /// When the drain this thread runs must end.
    static READ_BY: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// Reads `body` to its end unless it is longer than `limits.max_bytes()` or slower than
/// `limits.max_time()`; `abort` shuts its connection down. Returns whether it reached the end
/// (and ureq put the connection back in its pool).
pub(crate) fn drain(body: Body, limits: DrainLimits, abort: Option<&Abort>) -> bool {
    let _read_by = ReadBy::set(Instant::now().checked_add(limits.max_time()));
    interruptible(abort, || {
        let mut reader = body
            .into_with_config()
            .limit(limits.max_bytes().saturating_add(1))
            .reader();
        io::copy(&mut reader, &mut io::sink()).is_ok_and(|n| n <= limits.max_bytes())
    })
}

/// `timeout`, cut to the end of the drain this thread runs, if any.
pub(crate) fn within_drain(timeout: NextTimeout) -> NextTimeout {
    let Some(by) = READ_BY.with(Cell::get) else {
        return timeout;
    };
    let left = Duration::Exact(by.saturating_duration_since(Instant::now()));
    if left < timeout.after {
        NextTimeout {
            after: left,
            reason: Timeout::RecvBody,
            ..timeout
        }
    } else {
        timeout
    }
}

/// The end of the drain (or the bounded read) this thread runs, set until dropped.
pub(crate) struct ReadBy(Option<Instant>);

impl ReadBy {
    pub(crate) fn set(by: Option<Instant>) -> Self {
        ReadBy(READ_BY.with(|r| r.replace(by)))
    }
}

impl Drop for ReadBy {
    fn drop(&mut self) {
        READ_BY.with(|r| r.set(self.0));
    }
}
