//! The retry metrics, as shared counters.
//!
//! Rule: what tells whether retries help or hurt: the share of operations that retried, the mean
//! attempts per operation, the successes after a retry, the operations that exhausted a limit, and
//! the counts of 429, 503 and 504 responses.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use backstop_core::AttemptOutcome;
use backstop_core::StopReason;

use crate::observe::events::EventKind;

/// Shared counters; clone the handle to read them while operations run.
///
/// ```
/// use backstop::Metrics;
///
/// let metrics = Metrics::new();
/// let snapshot = metrics.snapshot();
/// assert_eq!(snapshot.operations, 0);
/// assert_eq!(snapshot.retried_share(), 0.0);
/// ```
///
/// These counters need no dependency and no exporter: a test, a CLI or a service without a
/// metrics pipeline reads them. A service that exports its metrics turns on the `metrics`
/// feature instead (or as well): every operation of every [`Retrier`](crate::Retrier) then
/// goes to the recorder of the [`metrics`](https://docs.rs/metrics/0.24) facade (Prometheus,
/// OpenTelemetry, StatsD, …), each attempt under OpenTelemetry's HTTP client name, as these
/// series:
///
/// | name | kind (unit) | labels | one per |
/// |---|---|---|---|
/// | `http.client.request.duration` | histogram (seconds) | `http.request.method`, `server.address`, `server.port`, `http.response.status_code` (a response), `error.type` (a response of 400 or more: its status, as the HTTP client conventions mark an error; an error: its kind, `timeout`, `connection_refused`, …), `http.request.resend_count` (attempt − 1, after the first) | attempt (hedge copy) |
/// | `backstop.operations` | counter | `http.request.method`, `server.address`, `server.port`, `backstop.stop_reason` (`final_status`, `attempts`, `deadline`, …), `backstop.retried` (`true` after more than one attempt), and the last attempt's `http.response.status_code` and `error.type` as above (an operation that sent nothing: `error.type` is its stop reason, `origin_paused`, …) | operation |
/// | `backstop.operation.attempts` | histogram (attempts) | method, address, port | operation |
/// | `backstop.operation.wait.duration` | histogram (seconds): the time slept between attempts | method, address, port | operation |
/// | `backstop.waits` | counter | method, address, port, `backstop.wait.source` (`backoff`, `retry_after`, `origin_paused`, `rate_limited`, …) | wait |
/// | `backstop.budget.denials` | counter | method, address, port | operation a retry budget refused a retry or hedge copy |
/// | `backstop.origin.pauses` | counter | method, address, port | closing of an origin's gate |
/// | `backstop.rate_limiter.enabled` | counter | method, address, port | switching on of the send-rate limiter |
///
/// What to watch, from these series:
///
/// - share of operations retried: `backstop.operations{backstop.retried="true"}` over all
///   `backstop.operations`;
/// - mean attempts: the sum of `backstop.operation.attempts` over its count;
/// - successes after a retry: `backstop.operations{backstop.retried="true"}` with a 2xx or 3xx
///   `http.response.status_code`;
/// - operations that exhausted a limit: `backstop.operations` whose `backstop.stop_reason` is
///   `attempts`, `deadline`, `retry_after_above_max`, `budget`, `origin_paused` or
///   `rate_limited`;
/// - 429, 503 and 504 responses: the count of `http.client.request.duration` with that
///   `http.response.status_code`.
///
/// The units and descriptions go to the recorder installed when a `Retrier` is built: install
/// it first. An operation that starts while no recorder is installed (neither a global nor a
/// local one) makes no series: it builds no label and hashes no key, so a library that turns
/// the feature on costs its users nothing until they install a recorder. (The facade has no
/// call that says so; backstop compares the recorder in force with its no-op by its vtable,
/// which an optimised build has one of: where a build has two, the series are made and handed
/// to the no-op, as the macros do.)
///
/// One GET answered 503, then 200 after a backoff of 0.2 s, gives:
///
/// ```text
/// http.client.request.duration{http.request.method="GET",server.address="api.example.com",server.port="443",http.response.status_code="503",error.type="503"} 0.012
/// http.client.request.duration{…,http.response.status_code="200",http.request.resend_count="1"} 0.010
/// backstop.waits{…,backstop.wait.source="backoff"} +1
/// backstop.operations{…,backstop.stop_reason="final_status",backstop.retried="true",http.response.status_code="200"} +1
/// backstop.operation.attempts{…} 2
/// backstop.operation.wait.duration{…} 0.2
/// ```
#[derive(Clone, Debug, Default)]
pub struct Metrics(Arc<Counters>);

#[derive(Debug, Default)]
struct Counters {
    operations: AtomicU64,
    retried: AtomicU64,
    attempts: AtomicU64,
    successes_after_retry: AtomicU64,
    exhausted: AtomicU64,
    aborted: AtomicU64,
    status_429: AtomicU64,
    status_503: AtomicU64,
    status_504: AtomicU64,
}

/// The counters at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct MetricsSnapshot {
    /// Operations finished.
    pub operations: u64,
    /// Operations that made more than one attempt.
    pub retried: u64,
    /// Attempts made by finished operations.
    pub attempts: u64,
    /// Operations that ended with a 2xx or 3xx response after more than one attempt.
    pub successes_after_retry: u64,
    /// Operations that stopped on a limit (attempts, deadline, `Retry-After` ceiling, budget).
    pub exhausted: u64,
    /// Operations the caller aborted.
    pub aborted: u64,
    /// 429 responses received.
    pub status_429: u64,
    /// 503 responses received.
    pub status_503: u64,
    /// 504 responses received.
    pub status_504: u64,
}

impl MetricsSnapshot {
    /// The share of operations that retried, in `[0, 1]`.
    #[must_use]
    pub fn retried_share(&self) -> f64 {
        ratio(self.retried, self.operations)
    }

    /// The mean number of attempts per operation.
    #[must_use]
    pub fn mean_attempts(&self) -> f64 {
        ratio(self.attempts, self.operations)
    }
}

#[allow(clippy::cast_precision_loss)] // counters far below 2^52 in practice
fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

impl Metrics {
    /// Counters at zero.
    #[must_use]
    pub fn new() -> Self {
        Metrics::default()
    }

    /// The current values.
    #[must_use]
    pub fn snapshot(&self) -> MetricsSnapshot {
        let c = &self.0;
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        MetricsSnapshot {
            operations: get(&c.operations),
            retried: get(&c.retried),
            attempts: get(&c.attempts),
            successes_after_retry: get(&c.successes_after_retry),
            exhausted: get(&c.exhausted),
            aborted: get(&c.aborted),
            status_429: get(&c.status_429),
            status_503: get(&c.status_503),
            status_504: get(&c.status_504),
        }
    }

    pub(crate) fn record(&self, kind: &EventKind) {
        let c = &self.0;
        let inc = |a: &AtomicU64| {
            a.fetch_add(1, Ordering::Relaxed);
        };
        match *kind {
            EventKind::AttemptEnded {
                result: AttemptOutcome::Response(status),
                ..
            } => match status {
                429 => inc(&c.status_429),
                503 => inc(&c.status_503),
                504 => inc(&c.status_504),
                _ => {}
            },
            EventKind::Finished { outcome } => {
                inc(&c.operations);
                c.attempts
                    .fetch_add(u64::from(outcome.attempts), Ordering::Relaxed);
                let aborted = outcome.reason == StopReason::Aborted;
                if outcome.attempts > 1 {
                    inc(&c.retried);
                    let success = matches!(
                        outcome.last,
                        Some(AttemptOutcome::Response(s)) if (200..400).contains(&s)
                    );
                    if success && !aborted {
                        inc(&c.successes_after_retry);
                    }
                }
                if outcome.reason.is_limit() {
                    inc(&c.exhausted);
                }
                if aborted {
                    inc(&c.aborted);
                }
            }
            _ => {}
        }
    }
}
