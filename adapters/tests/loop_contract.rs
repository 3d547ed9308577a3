//! The shared loop's own promises, on a scripted runtime and attempt function (no network):
//! a discarded response is released before the next attempt; an early timer is never trusted
//! (neither for an attempt's timeout nor for a wait).

#[path = "common/request.rs"]
mod request;
use request::*;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use backstop::runtime::{Instant, Runtime, Sleep};
use backstop::StopReason;
use backstop::{run, Retrier};
use futures_lite::future;

/// A body that records when it is dropped.
struct Body(Arc<AtomicBool>);

impl Drop for Body {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// A clock moved by hand, whose timers fire early: a sleep moves the clock only halfway to
/// its target (at least 1 ms), then resolves.
#[derive(Clone, Default)]
struct EarlyTimers {
    nanos: Arc<AtomicU64>,
}

impl EarlyTimers {
    fn set(&self, t: Instant) {
        let n = u64::try_from(t.as_duration().as_nanos()).unwrap_or(u64::MAX);
        self.nanos.fetch_max(n, Ordering::SeqCst);
    }
}

impl Runtime for EarlyTimers {
    fn now(&self) -> Instant {
        Instant::from_duration(Duration::from_nanos(self.nanos.load(Ordering::SeqCst)))
    }

    fn sleep_until(&self, until: Instant) -> Sleep {
        let now = self.now();
        let half = until.saturating_duration_since(now) / 2;
        self.set(now.saturating_add(half.max(Duration::from_millis(1))));
        Box::pin(future::ready(()))
    }

    /// An attempt-timeout timer fires at once, long before its time.
    fn timeout_at(&self, _: Instant) -> Sleep {
        Box::pin(future::ready(()))
    }
}

fn response(status: u16, body: Body) -> http::Response<Body> {
    let mut r = http::Response::new(body);
    *r.status_mut() = http::StatusCode::from_u16(status).expect("status");
    r
}

#[test]
fn discarded_response_is_released_before_the_next_attempt() {
    let released = Arc::new(AtomicBool::new(false));
    let mut attempts = 0;
    let rt = EarlyTimers::default();
    let done = future::block_on(run(
        &Retrier::default(),
        &rt,
        get("http://example.invalid/"),
        |attempt: backstop::Attempt<()>| {
            attempts += 1;
            let first = attempt.number == 1;
            // The second attempt may only start once the first response is gone.
            let ok = first || released.load(Ordering::SeqCst);
            let flag = if first {
                released.clone()
            } else {
                Arc::new(AtomicBool::new(false))
            };
            async move {
                assert!(ok, "attempt 2 started while attempt 1's response was held");
                Ok::<_, std::io::Error>(response(if first { 503 } else { 200 }, Body(flag)))
            }
        },
    ))
    .expect("a response");
    assert_eq!((done.response.status().as_u16(), attempts), (200, 2));
    assert!(released.load(Ordering::SeqCst));
}

#[test]
fn early_timers_neither_time_out_an_attempt_nor_shorten_a_wait() {
    let rt = EarlyTimers::default();
    let sent_at = Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = sent_at.clone();
    let clock = rt.clone();
    let done = future::block_on(run(
        &Retrier::default(),
        &rt,
        get("http://example.invalid/"),
        |attempt: backstop::Attempt<()>| {
            log.lock().expect("log").push(clock.now());
            let status = if attempt.number == 1 { 503 } else { 200 };
            async move {
                // The attempt takes a few polls; each time the (early) timeout timer fires.
                for _ in 0..3 {
                    future::yield_now().await;
                }
                let mut r = http::Response::new(());
                *r.status_mut() = http::StatusCode::from_u16(status).expect("status");
                if status == 503 {
                    r.headers_mut()
                        .insert("retry-after", http::HeaderValue::from_static("2"));
                }
                Ok::<_, std::io::Error>(r)
            }
        },
    ))
    .expect("a response");
    assert_eq!(done.response.status(), 200);
    assert_eq!(
        (done.outcome.attempts, done.outcome.reason),
        (2, StopReason::FinalStatus)
    );
    let sent_at = sent_at.lock().expect("log").clone();
    // The retry went out only once the full 2 s had passed on the clock.
    assert!(sent_at[1] >= Instant::from_secs(2), "{sent_at:?}");
}
