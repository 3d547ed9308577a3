//! Virtual time for tests and simulations.
//!
//! Rule: timing decisions are tested on virtual time, not with sleeps (fast and exact).
//! [`VirtualTime`] wraps a real runtime and adds an offset to its clock: a wait between
//! attempts moves the offset forward at once instead of sleeping, while an attempt's timeout
//! still runs on the real timer (the HTTP traffic it bounds is real).
//!
//! One `VirtualTime` is one clock: a skip moves it for everything that reads it. So one
//! `VirtualTime` (and its clones, which share the clock) drives one operation at a time; give
//! each operation that runs at the same time its own (see [`VirtualTime`]).

use core::time::Duration;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use backstop_core::Instant;

use crate::runtime::{Runtime, Sleep};

/// A runtime whose waits between attempts take no real time.
///
/// ```
/// use backstop::runtime::{Runtime, StdRuntime, VirtualTime};
/// use std::time::Duration;
///
/// let rt = VirtualTime::new(StdRuntime::new());
/// let t0 = rt.now();
/// let target = t0.saturating_add(Duration::from_secs(3600));
/// futures_lite::future::block_on(rt.sleep_until(target));
/// assert!(rt.now() >= target); // an hour passed, virtually
/// assert!(rt.skipped() >= Duration::from_secs(3599));
/// ```
///
/// # Testing your own retrying code
///
/// A test of code that retries should not sleep through its waits. `VirtualTime` wraps an
/// adapter's runtime and skips each wait between attempts, while the attempts stay real HTTP
/// with real timeouts; [`Retrier::seed`](crate::Retrier::seed) makes the jitter the same on
/// every run, so a failure replays exactly. The server asks for 30 s before each retry, twice
/// (the policy allows two minutes: with the default 15 s a 30 s wait could not lead to a
/// retry, and the 503 would come back at once):
///
/// ```
/// # #[cfg(feature = "ureq")] {
/// # use std::io::{Read, Write};
/// # let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
/// # let url = format!("http://{}/data", listener.local_addr()?);
/// # std::thread::spawn(move || {
/// #     let busy = "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 30\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
/// #     let ok = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
/// #     for (stream, answer) in listener.incoming().zip([busy, ok, busy, ok]) {
/// #         let mut stream = stream.unwrap();
/// #         let _ = stream.read(&mut [0; 4096]);
/// #         let _ = stream.write_all(answer.as_bytes());
/// #     }
/// # });
/// use std::sync::{Arc, Mutex};
/// use std::time::{Duration, Instant};
/// use backstop::EventKind;
/// use backstop::ureq::{Client, Retrier, StdRuntime, VirtualTime};
///
/// let policy = backstop::Policy::builder().max_elapsed(Duration::from_secs(120)).build()?;
/// let waits = Arc::new(Mutex::new(Vec::new()));
/// let started = Instant::now();
/// for _run in 0..2 {
///     let log = waits.clone();
///     let retrier = Retrier::new(policy).seed(7).on_event(move |e| {
///         if let EventKind::WaitStarted { delay, .. } = e.kind {
///             log.lock().unwrap().push(delay);
///         }
///     });
///     let client = Client::new(retrier).with_runtime(VirtualTime::new(StdRuntime::new()));
///     let done = client.run(http::Request::get(url.as_str()).body(())?)?;
///     assert_eq!((done.response.status().as_u16(), done.outcome.attempts), (200, 2));
///     assert!(client.runtime().skipped() >= Duration::from_secs(30)); // the wait, skipped
/// }
/// assert!(started.elapsed() < Duration::from_secs(20)); // a minute of waits, not slept
/// let waits = waits.lock().unwrap();
/// assert_eq!(waits[0], waits[1]); // the same seed, the same jitter
/// assert!(waits[0] >= Duration::from_secs(30) && waits[0] <= Duration::from_secs(31));
/// # }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// The reqwest middleware and the tower layer take the same clock over theirs:
/// `RetryMiddleware::new(retrier).with_runtime(VirtualTime::new(TokioRuntime::new()))`,
/// `RetryLayer::new(retrier, VirtualTime::new(TokioRuntime::new()))` (or `SmolRuntime`).
/// `tokio::time::pause()` moves `TokioRuntime`'s clock too, but only for attempts that answer
/// without a socket (`backstop::run` with a closure that returns canned responses): paused
/// time jumps to the next timer whenever the runtime is idle, so while a real server is still
/// answering, the attempt's timeout can fire first.
///
/// The wall clock for an HTTP-date `Retry-After` is an input too
/// ([`Retrier::wall_clock`](crate::Retrier::wall_clock),
/// [`SkewedClock`](crate::runtime::SkewedClock)).
///
/// # One operation at a time
///
/// A skip moves this clock, which its clones share, for every operation that reads it: while
/// one operation skips a 30 s wait, another one in flight on the same `VirtualTime` ages by
/// 30 s too, and may end past its `max_elapsed` or give up on its deadline. Operations that
/// run at the same time each need their own `VirtualTime` (each its own client, middleware or
/// layer, given its own `VirtualTime::new(..)` as its runtime); operations one after another
/// may share one.
///
/// ```
/// use backstop::runtime::{StdRuntime, VirtualTime};
/// use backstop::{run, Retrier};
/// use futures_lite::future;
/// use std::time::Duration;
///
/// let retrier = Retrier::default();
/// // Two operations at the same time: one clock each.
/// let (a, b) = (VirtualTime::new(StdRuntime::new()), VirtualTime::new(StdRuntime::new()));
/// let one = |rt| {
///     let request = http::Request::get("http://127.0.0.1:1/").body(()).expect("a request");
///     run(&retrier, rt, request, |_attempt| async {
///         Ok::<_, std::io::Error>(http::Response::new(()))
///     })
/// };
/// let (x, y) = future::block_on(future::zip(one(&a), one(&b)));
/// assert!(x.is_ok() && y.is_ok());
/// ```
#[derive(Clone, Debug)]
pub struct VirtualTime<R> {
    inner: R,
    offset_nanos: Arc<AtomicU64>,
}

impl<R: Runtime> VirtualTime<R> {
    /// Virtual time on top of `inner`'s clock and timers.
    pub fn new(inner: R) -> Self {
        VirtualTime {
            inner,
            offset_nanos: Arc::new(AtomicU64::new(0)),
        }
    }

    /// The total time skipped so far.
    #[must_use]
    pub fn skipped(&self) -> Duration {
        Duration::from_nanos(self.offset_nanos.load(Ordering::SeqCst))
    }

    /// Moves the clock forward by `d` without sleeping.
    pub fn advance(&self, d: Duration) {
        let nanos = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        let _ = self
            .offset_nanos
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |o| {
                Some(o.saturating_add(nanos))
            });
    }
}

impl<R: Runtime> Runtime for VirtualTime<R> {
    fn now(&self) -> Instant {
        self.inner.now().saturating_add(self.skipped())
    }

    /// A wait between attempts: skipped at once.
    fn sleep_until(&self, until: Instant) -> Sleep {
        self.advance(until.saturating_duration_since(self.now()));
        Box::pin(core::future::ready(()))
    }

    /// An attempt's timeout (or a drain's): on the real timer, at the same distance.
    fn timeout_at(&self, until: Instant) -> Sleep {
        let real = Instant::from_duration(until.as_duration().saturating_sub(self.skipped()));
        self.inner.timeout_at(real)
    }
}
