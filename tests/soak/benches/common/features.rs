//! The retriers of the per-GET probes' `backstop*` ways: backstop as shipped, and with each
//! feature on that a GET answered 200 at once should not pay for (its anchor is `backstop`).

use std::sync::Arc;
use std::time::Duration;

use backstop::{Hedging, Policy, RatioBudget, Retrier};

/// The retrier of the way `name`, if it is a `backstop*` way with a retrier of its own:
///
/// - `backstop`: `Retrier::default()`;
/// - `backstop-hedging`: a policy that hedges after a fixed second (two copies at most): a GET
///   answered at once never sends its backup, but takes the hedged path;
/// - `backstop-gates`: an `OriginGates` (default `GateConfig`) and an `AdaptiveRateLimiter`,
///   neither acting;
/// - `backstop-events`: one observer (`Retrier::on_event`) that reads each event;
/// - `backstop-budget`: a shared `RatioBudget` (20 % of operations, 20 retries a second, 10 s);
/// - `backstop-subscriber`, `backstop-recorder` (built with `--features observe`: backstop's
///   `tracing` and `metrics` on): `Retrier::default()` with a `tracing` subscriber installed
///   whose filter keeps everything but backstop at `INFO` (`info,backstop=off`, as a service
///   sets it; the clients' own `DEBUG` and `TRACE` events stay off), or with a `metrics`
///   recorder installed ([`Lean`]: one counter and one histogram for every series, so that what
///   it costs is backstop's, not a registry's). Both are the process's global ones, installed
///   at the way's first retrier: measure these ways alone (`--only`, as the callgrind scripts
///   do), not interleaved with the others.
pub fn retrier(name: &str) -> Option<Retrier> {
    Some(match name {
        #[cfg(feature = "observe")]
        "backstop-subscriber" => {
            use tracing_subscriber::layer::SubscriberExt;
            let keep = tracing_subscriber::filter::Targets::new()
                .with_default(tracing::Level::INFO)
                .with_target("backstop", tracing_subscriber::filter::LevelFilter::OFF);
            let subscriber = tracing_subscriber::registry().with(keep);
            // Another way's subscriber may be installed already: then this one is not.
            let _ = tracing::subscriber::set_global_default(subscriber);
            Retrier::default()
        }
        #[cfg(feature = "observe")]
        "backstop-recorder" => {
            let _ = metrics::set_global_recorder(Lean::default());
            Retrier::default()
        }
        "backstop" => Retrier::default(),
        "backstop-hedging" => Retrier::new(
            Policy::builder()
                .hedging(Hedging::fixed(Duration::from_secs(1)))
                .build()
                .unwrap(),
        ),
        "backstop-gates" => {
            let gates = backstop::OriginGates::new(backstop::GateConfig::new()).unwrap();
            Retrier::default()
                .origin_gates(Arc::new(gates))
                .rate_limiter(Arc::new(backstop::AdaptiveRateLimiter::new()))
        }
        "backstop-events" => Retrier::default().on_event(|event| {
            std::hint::black_box(event);
        }),
        "backstop-budget" => Retrier::default().budget(Arc::new(
            RatioBudget::new(20, 20, Duration::from_secs(10)).unwrap(),
        )),
        _ => return None,
    })
}

/// A recorder that hands every series the same two handles (a counter, a histogram), made
/// once: registering allocates nothing, so the allocations a GET makes under it are backstop's.
#[cfg(feature = "observe")]
#[derive(Default)]
struct Lean {
    counter: Arc<LeanHandle>,
    histogram: Arc<LeanHandle>,
}

/// A count: of increments (a counter's), or of values recorded (a histogram's).
#[cfg(feature = "observe")]
#[derive(Default)]
struct LeanHandle(std::sync::atomic::AtomicU64);

#[cfg(feature = "observe")]
impl metrics::CounterFn for LeanHandle {
    fn increment(&self, value: u64) {
        self.0
            .fetch_add(value, std::sync::atomic::Ordering::Relaxed);
    }
    fn absolute(&self, value: u64) {
        self.0.store(value, std::sync::atomic::Ordering::Relaxed);
    }
}

#[cfg(feature = "observe")]
impl metrics::HistogramFn for LeanHandle {
    fn record(&self, _: f64) {
        self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
}

#[cfg(feature = "observe")]
impl metrics::Recorder for Lean {
    fn describe_counter(
        &self,
        _: metrics::KeyName,
        _: Option<metrics::Unit>,
        _: metrics::SharedString,
    ) {
    }
    fn describe_gauge(
        &self,
        _: metrics::KeyName,
        _: Option<metrics::Unit>,
        _: metrics::SharedString,
    ) {
    }
    fn describe_histogram(
        &self,
        _: metrics::KeyName,
        _: Option<metrics::Unit>,
        _: metrics::SharedString,
    ) {
    }
    fn register_counter(&self, _: &metrics::Key, _: &metrics::Metadata<'_>) -> metrics::Counter {
        metrics::Counter::from_arc(Arc::clone(&self.counter))
    }
    fn register_gauge(&self, _: &metrics::Key, _: &metrics::Metadata<'_>) -> metrics::Gauge {
        metrics::Gauge::noop()
    }
    fn register_histogram(
        &self,
        _: &metrics::Key,
        _: &metrics::Metadata<'_>,
    ) -> metrics::Histogram {
        metrics::Histogram::from_arc(Arc::clone(&self.histogram))
    }
}
