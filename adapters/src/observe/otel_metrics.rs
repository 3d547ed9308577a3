//! The `metrics` sink (feature `metrics`): every attempt and operation as series of the
//! [`metrics`](::metrics) facade, for the recorder the service installed (Prometheus,
//! OpenTelemetry, StatsD, …).
//!
//! Rule: a dashboard reads retries in the names it already knows. Each attempt is an
//! OpenTelemetry HTTP client request (`http.client.request.duration`, with the HTTP semantic
//! conventions' attributes); what those conventions have no name for is under `backstop.`.
//! Labels hold nothing secret (the host and port, never the userinfo, path or query) and take
//! few values: the method is one of RFC 9110's or `_OTHER`, a status, an error kind's or a stop
//! reason's name, a resend count below `max_attempts`; no operation name, no URL.
//!
//! The series, their labels and what to read from them are in [`Metrics`](crate::Metrics)'s docs.

use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use core::time::Duration;
use std::sync::Arc;

use ::metrics::{Label, SharedString, Unit};

use crate::last_origin;
use crate::observe::events::EventKind;
use crate::observe::handles::{self, Which};
use crate::observe::known_method;
use crate::observe::redact::{self, Target};
use backstop_core::AttemptOutcome;
use backstop_core::StopReason;

const REQUEST_DURATION: &str = "http.client.request.duration";
const OPERATIONS: &str = "backstop.operations";
const ATTEMPTS: &str = "backstop.operation.attempts";
const WAIT_DURATION: &str = "backstop.operation.wait.duration";
const WAITS: &str = "backstop.waits";
const BUDGET_DENIALS: &str = "backstop.budget.denials";
const ORIGIN_PAUSES: &str = "backstop.origin.pauses";
const RATE_LIMITER_ENABLED: &str = "backstop.rate_limiter.enabled";

/// Gives the recorder installed now each series' unit and description.
pub(crate) fn describe() {
    ::metrics::describe_histogram!(
        REQUEST_DURATION,
        Unit::Seconds,
        "Duration of each HTTP attempt (a retry or hedge copy included)."
    );
    ::metrics::describe_counter!(
        OPERATIONS,
        Unit::Count,
        "Operations finished, by why they stopped and whether they retried."
    );
    ::metrics::describe_histogram!(
        ATTEMPTS,
        Unit::Count,
        "Attempts per operation, the first included."
    );
    ::metrics::describe_histogram!(
        WAIT_DURATION,
        Unit::Seconds,
        "Time an operation slept between its attempts."
    );
    ::metrics::describe_counter!(
        WAITS,
        Unit::Count,
        "Waits before an attempt, by what set their length."
    );
    ::metrics::describe_counter!(
        BUDGET_DENIALS,
        Unit::Count,
        "Operations whose retry budget refused a retry or a hedge copy."
    );
    ::metrics::describe_counter!(
        ORIGIN_PAUSES,
        Unit::Count,
        "Closings of an origin's gate: every operation to it waits."
    );
    ::metrics::describe_counter!(
        RATE_LIMITER_ENABLED,
        Unit::Count,
        "Switchings on of the send-rate limiter after a throttled attempt."
    );
}

/// Whether a recorder listens: a local or global one other than the `metrics` facade's own
/// no-op, which it falls back to when none is installed. An operation that starts with nobody
/// listening makes no series at all (no labels built, no key hashed), so turning the feature
/// on in a library costs nothing until the service installs a recorder.
///
/// The facade has no call that says whether a recorder is installed; the one in force is
/// compared with [`NoopRecorder`](::metrics::NoopRecorder) by its vtable. Where the compiler
/// made two copies of that vtable the comparison says "listening": the series are then built
/// and handed to the no-op, as before, never lost.
// Not inlined: the facade's fallback to its no-op (in `with_recorder`, inlined here) and the
// no-op compared with it are made into `dyn Recorder` in this one function, so the compiler
// puts the two in one codegen unit, where they share one vtable.
#[inline(never)]
pub(crate) fn listening() -> bool {
    static NOOP: ::metrics::NoopRecorder = ::metrics::NoopRecorder;
    ::metrics::with_recorder(|recorder| {
        let noop: *const dyn ::metrics::Recorder = &NOOP;
        let current: *const dyn ::metrics::Recorder = recorder;
        // The same address on both sides: `ptr::eq` compares their vtables.
        !core::ptr::eq(noop.with_addr(current.addr()), current)
    })
}

/// One operation's series: its labels, and what it sums until it finishes.
pub(crate) struct Series {
    /// `http.request.method`, `server.address`, `server.port`.
    labels: [Label; 3],
    /// Nanoseconds slept between attempts so far.
    waited: AtomicU64,
    /// Whether a budget refused a hedge copy (the operation may still end otherwise).
    denied: AtomicBool,
    /// Whether the recorder in force when the operation started is the global one, whose
    /// handles this thread keeps ([`handles`]).
    kept: bool,
}

impl Series {
    pub(crate) fn new(method: &http::Method, target: Target<'_>) -> Self {
        let (address, port) = server(target);
        Series {
            labels: [
                Label::new(
                    "http.request.method",
                    known_method(method).unwrap_or("_OTHER"),
                ),
                Label::new("server.address", address),
                Label::new("server.port", port),
            ],
            waited: AtomicU64::new(0),
            denied: AtomicBool::new(false),
            kept: handles::in_force_is_global(),
        }
    }

    /// The operation's labels and `more`.
    fn with<const N: usize>(&self, more: [Option<Label>; N]) -> Vec<Label> {
        let mut labels = Vec::with_capacity(3 + N);
        labels.extend_from_slice(&self.labels);
        labels.extend(more.into_iter().flatten());
        labels
    }

    fn count(&self, name: &'static str) {
        ::metrics::counter!(name, self.labels.iter()).increment(1);
    }

    pub(crate) fn record(&self, kind: &EventKind) {
        match *kind {
            EventKind::AttemptEnded {
                attempt,
                result,
                took,
                ..
            } => {
                let resend = attempt.saturating_sub(1);
                let register = || {
                    let [result, error] = result_labels(result);
                    let labels = self.with([
                        result,
                        error,
                        (resend > 0)
                            .then(|| Label::new("http.request.resend_count", number(resend))),
                    ]);
                    ::metrics::histogram!(REQUEST_DURATION, labels)
                };
                let took = took.as_secs_f64();
                let which = Which::Duration(result, resend);
                let kept = self.kept
                    && handles::kept(&self.labels, |mut kept| kept.record(which, took, register))
                        .unwrap_or(false);
                if !kept {
                    register().record(took);
                }
            }
            EventKind::WaitStarted { source, .. } => {
                let labels = self.with([Some(Label::new("backstop.wait.source", source.as_str()))]);
                ::metrics::counter!(WAITS, labels).increment(1);
            }
            EventKind::WaitEnded { slept, .. } => {
                let nanos = u64::try_from(slept.as_nanos()).unwrap_or(u64::MAX);
                self.waited.fetch_add(nanos, Ordering::Relaxed);
            }
            EventKind::Hedged {
                suppressed_by: Some(StopReason::Budget),
                ..
            } => self.denied.store(true, Ordering::Relaxed),
            EventKind::GateClosed { .. } => self.count(ORIGIN_PAUSES),
            EventKind::RateLimiterEnabled { .. } => self.count(RATE_LIMITER_ENABLED),
            EventKind::Finished { outcome } => {
                let retried = if outcome.attempts > 1 {
                    "true"
                } else {
                    "false"
                };
                // Nothing sent: the reason is the error.
                let nothing_sent = || {
                    [
                        None,
                        Some(Label::new("error.type", outcome.reason.as_str())),
                    ]
                };
                let register = || {
                    let [result, error] = outcome.last.map_or_else(nothing_sent, result_labels);
                    let labels = self.with([
                        Some(Label::new("backstop.stop_reason", outcome.reason.as_str())),
                        Some(Label::new("backstop.retried", retried)),
                        result,
                        error,
                    ]);
                    ::metrics::counter!(OPERATIONS, labels)
                };
                let key = (outcome.reason, outcome.attempts > 1, outcome.last);
                let attempts = f64::from(outcome.attempts);
                let attempts_of = || ::metrics::histogram!(ATTEMPTS, self.labels.iter());
                let waited = Duration::from_nanos(self.waited.load(Ordering::Relaxed));
                let waited = waited.as_secs_f64();
                let waited_of = || ::metrics::histogram!(WAIT_DURATION, self.labels.iter());
                // One look for the three series of the group, when this thread keeps them.
                let kept = self.kept.then(|| {
                    handles::kept(&self.labels, |mut kept| {
                        [
                            kept.count_operation(key, register),
                            kept.record(Which::Attempts, attempts, attempts_of),
                            kept.record(Which::Waited, waited, waited_of),
                        ]
                    })
                });
                let [operation, attempts_kept, waited_kept] = kept.flatten().unwrap_or([false; 3]);
                if !operation {
                    register().increment(1);
                }
                if !attempts_kept {
                    attempts_of().record(attempts);
                }
                if !waited_kept {
                    waited_of().record(waited);
                }
                if outcome.reason == StopReason::Budget || self.denied.load(Ordering::Relaxed) {
                    self.count(BUDGET_DENIALS);
                }
            }
            _ => {}
        }
    }
}

/// `http.response.status_code` of a response, with `error.type` (the status) when it is 400 or
/// more, as the HTTP client conventions mark an error; `error.type` (the kind) of an error.
fn result_labels(result: AttemptOutcome) -> [Option<Label>; 2] {
    match result {
        AttemptOutcome::Response(status) => {
            let code = number(u32::from(status));
            let error = (status >= 400).then(|| Label::new("error.type", code.clone()));
            [Some(Label::new("http.response.status_code", code)), error]
        }
        AttemptOutcome::Error(error) => [Some(Label::new("error.type", error.kind.as_str())), None],
    }
}

/// The decimal digits of 0 to 999, for labels that are numbers (statuses, resend counts):
/// a label made of one of them borrows it, without a `String`.
static DIGITS: [[u8; 3]; 1000] = {
    let mut digits = [[0u8; 3]; 1000];
    let mut n = 0;
    while n < 1000 {
        digits[n] = [
            b'0' + (n / 100) as u8,
            b'0' + (n / 10 % 10) as u8,
            b'0' + (n % 10) as u8,
        ];
        n += 1;
    }
    digits
};

/// `n` in decimal, as a label's value (one above 999 shared: a clone of it, as the server
/// labels a thread keeps are cloned for each operation, allocates nothing).
fn number(n: u32) -> SharedString {
    let Some(digits) = DIGITS.get(n as usize) else {
        return SharedString::from_shared(Arc::from(n.to_string()));
    };
    let skip = match n {
        0..=9 => 2,
        10..=99 => 1,
        _ => 0,
    };
    match core::str::from_utf8(&digits[skip..]) {
        Ok(text) => SharedString::const_str(text),
        Err(_) => SharedString::from_shared(Arc::from(n.to_string())),
    }
}

/// `server.address` and `server.port` of `target` as labels (see [`redact::server`]): this
/// thread's last ones when its last operation had the same scheme and authority (compared as
/// written), else made and remembered (a client that talks to one origin formats them once).
fn server(target: Target<'_>) -> (SharedString, SharedString) {
    thread_local! {
        static LAST: last_origin::Slot<(SharedString, SharedString)> =
            const { core::cell::RefCell::new(None) };
    }
    let (scheme, authority) = (
        target.scheme().unwrap_or_default(),
        target.authority().unwrap_or_default(),
    );
    last_origin::find_or_make(&LAST, scheme, authority, || {
        let (host, port) = redact::server(target);
        let port = port.map_or(SharedString::const_str(""), |p| number(u32::from(p)));
        (SharedString::from_shared(Arc::from(host)), port)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_server_labels_never_hold_the_userinfo() {
        for (uri, address, port) in [
            (
                "https://user:secret@api.example.com/v1?token=abc",
                "api.example.com",
                "443",
            ),
            ("http://127.0.0.1:8080/a", "127.0.0.1", "8080"),
            ("http://[::1]/x", "::1", "80"),
            ("/relative", "", ""),
        ] {
            let uri: http::Uri = uri.parse().expect("a URI");
            let (a, p) = server(Target::Uri(&uri));
            assert_eq!((&*a, &*p), (address, port), "{uri}");
        }
    }

    #[test]
    fn numbers_are_written_in_decimal_without_leading_zeros() {
        for n in [0, 7, 42, 100, 200, 503, 999, 1000, 8080, 65535] {
            assert_eq!(&*number(n), n.to_string(), "{n}");
        }
        // The same origin twice, then another spelled alike: each thread's cache keeps the
        // labels of the URI it last saw.
        for uri in [
            "http://a.example:8080/x",
            "http://a.example:8080/y",
            "https://b.example/",
        ] {
            let uri: http::Uri = uri.parse().expect("a URI");
            let (a, p) = server(Target::Uri(&uri));
            let (host, port) = redact::server(Target::Uri(&uri));
            assert_eq!(
                (&*a, &*p),
                (host, &*port.map(|p| p.to_string()).unwrap_or_default())
            );
        }
    }

    /// Counts each counter's increments by name; ignores the rest.
    #[derive(Default)]
    struct Counters(std::sync::Mutex<Vec<(String, Arc<AtomicU64>)>>);

    impl Counters {
        fn get(&self, name: &str) -> u64 {
            let counters = self.0.lock().expect("not poisoned");
            let of_name = counters.iter().filter(|(n, _)| n == name);
            of_name.map(|(_, c)| c.load(Ordering::Relaxed)).sum()
        }
    }

    impl ::metrics::Recorder for Counters {
        fn describe_counter(&self, _: ::metrics::KeyName, _: Option<Unit>, _: SharedString) {}
        fn describe_gauge(&self, _: ::metrics::KeyName, _: Option<Unit>, _: SharedString) {}
        fn describe_histogram(&self, _: ::metrics::KeyName, _: Option<Unit>, _: SharedString) {}
        fn register_counter(
            &self,
            key: &::metrics::Key,
            _: &::metrics::Metadata<'_>,
        ) -> ::metrics::Counter {
            let counter = Arc::new(AtomicU64::new(0));
            let mut counters = self.0.lock().expect("not poisoned");
            counters.push((key.name().to_owned(), Arc::clone(&counter)));
            ::metrics::Counter::from_arc(counter)
        }
        fn register_gauge(
            &self,
            _: &::metrics::Key,
            _: &::metrics::Metadata<'_>,
        ) -> ::metrics::Gauge {
            ::metrics::Gauge::noop()
        }
        fn register_histogram(
            &self,
            _: &::metrics::Key,
            _: &::metrics::Metadata<'_>,
        ) -> ::metrics::Histogram {
            ::metrics::Histogram::noop()
        }
    }

    fn finished(reason: StopReason) -> EventKind {
        EventKind::Finished {
            outcome: backstop_core::Outcome {
                attempts: 2,
                elapsed: Duration::ZERO,
                reason,
                last: Some(AttemptOutcome::Response(503)),
                retry_after: None,
            },
        }
    }

    #[test]
    fn a_budget_denial_counts_once_per_operation_and_pauses_and_throttles_each_time() {
        let counters = Counters::default();
        ::metrics::with_local_recorder(&counters, || {
            let uri = http::Uri::from_static("http://example.com/");
            // A plain operation the budget stopped; a hedged one whose copy the budget refused
            // and that then ran out of copies, for the budget too.
            let plain = Series::new(&http::Method::GET, Target::Uri(&uri));
            plain.record(&EventKind::GateClosed {
                attempt: 1,
                reopens_in: Duration::from_secs(1),
                elapsed: Duration::ZERO,
            });
            plain.record(&EventKind::RateLimiterEnabled {
                attempt: 2,
                elapsed: Duration::ZERO,
            });
            plain.record(&finished(StopReason::Budget));
            let hedged = Series::new(&http::Method::GET, Target::Uri(&uri));
            hedged.record(&EventKind::Hedged {
                winner: None,
                cancelled: 0,
                suppressed: 1,
                suppressed_by: Some(StopReason::Budget),
            });
            hedged.record(&finished(StopReason::Budget));
            // An operation that ran out of attempts was not denied.
            Series::new(&http::Method::GET, Target::Uri(&uri))
                .record(&finished(StopReason::Attempts));
        });
        assert_eq!(counters.get(BUDGET_DENIALS), 2);
        assert_eq!(counters.get(ORIGIN_PAUSES), 1);
        assert_eq!(counters.get(RATE_LIMITER_ENABLED), 1);
        assert_eq!(counters.get(OPERATIONS), 3);
    }

    /// A local recorder (the counting one of these tests) listens: its series are never
    /// skipped. (That nothing installed is told from a recorder is measured, not asserted:
    /// it holds where the compiler made one copy of the no-op's vtable, as in the release
    /// builds the callgrind probes measure, and an unoptimised test build may have two.)
    #[test]
    fn a_recorder_in_force_listens() {
        let counters = Counters::default();
        ::metrics::with_local_recorder(&counters, || assert!(listening()));
        let uri = http::Uri::from_static("http://example.com/");
        ::metrics::with_local_recorder(&counters, || {
            let finished = finished(StopReason::FinalStatus);
            let plan = crate::request::Plan::from_head(
                http::Method::GET,
                uri.clone(),
                &http::HeaderMap::new(),
                &http::Extensions::new(),
            );
            let observers = Vec::new();
            crate::observe::Emitter::new(&observers, None, &plan).emit(finished);
        });
        assert_eq!(
            counters.get(OPERATIONS),
            1,
            "the emitter made the operation's series"
        );
    }

    #[test]
    fn an_invented_method_is_other() {
        let method = http::Method::from_bytes(b"PURGE").expect("a method");
        let uri = http::Uri::from_static("http://example.com/");
        let labels = &Series::new(&method, Target::Uri(&uri)).labels;
        assert_eq!(labels[0].value(), "_OTHER");
        let labels = &Series::new(&http::Method::PATCH, Target::Uri(&uri)).labels;
        assert_eq!(labels[0].value(), "PATCH");
    }

    #[test]
    fn an_error_status_is_the_error_type_and_a_success_has_none() {
        let labels = |status| -> Vec<(String, String)> {
            let labels = result_labels(AttemptOutcome::Response(status));
            let labels = labels.into_iter().flatten();
            labels
                .map(|l| (l.key().to_owned(), l.value().to_owned()))
                .collect()
        };
        let pair = |k: &str, v: &str| (k.to_owned(), v.to_owned());
        assert_eq!(labels(200), [pair("http.response.status_code", "200")]);
        assert_eq!(labels(304), [pair("http.response.status_code", "304")]);
        for status in [400, 404, 429, 503] {
            let code = status.to_string();
            assert_eq!(
                labels(status),
                [
                    pair("http.response.status_code", &code),
                    pair("error.type", &code)
                ]
            );
        }
    }
}
