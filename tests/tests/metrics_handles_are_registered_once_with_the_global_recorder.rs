//! With a global `metrics` recorder installed, a plain request's series are registered with it
//! once per thread and their handles kept: six GETs through each front door register each of
//! their series once, and count six. A seventh, the same GET under a local recorder, is heard
//! by the local one alone: its series are registered with it, never the kept handles of the
//! global one.
//!
//! One test in its own binary: the global recorder is set once per process.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use backstop::{Policy, Retrier};
use backstop_tests::adapters::{for_each_adapter, Clock};
use backstop_tests::series;
use backstop_tests::server::{Reply, Server};
use backstop_tests::TestRequest;
use metrics::{Counter, Gauge, Histogram, Key, KeyName, Metadata, Recorder, SharedString, Unit};
use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};

/// A `DebuggingRecorder` that counts how often a series is registered with it.
struct Registering {
    inner: DebuggingRecorder,
    registered: Arc<AtomicUsize>,
}

impl Recorder for Registering {
    fn describe_counter(&self, key: KeyName, unit: Option<Unit>, description: SharedString) {
        self.inner.describe_counter(key, unit, description);
    }
    fn describe_gauge(&self, key: KeyName, unit: Option<Unit>, description: SharedString) {
        self.inner.describe_gauge(key, unit, description);
    }
    fn describe_histogram(&self, key: KeyName, unit: Option<Unit>, description: SharedString) {
        self.inner.describe_histogram(key, unit, description);
    }
    fn register_counter(&self, key: &Key, metadata: &Metadata<'_>) -> Counter {
        self.registered.fetch_add(1, Ordering::SeqCst);
        self.inner.register_counter(key, metadata)
    }
    fn register_gauge(&self, key: &Key, metadata: &Metadata<'_>) -> Gauge {
        self.registered.fetch_add(1, Ordering::SeqCst);
        self.inner.register_gauge(key, metadata)
    }
    fn register_histogram(&self, key: &Key, metadata: &Metadata<'_>) -> Histogram {
        self.registered.fetch_add(1, Ordering::SeqCst);
        self.inner.register_histogram(key, metadata)
    }
}

/// Each series of the server on `port` as `name{label=value,…}`, with its value: a counter's
/// count, a histogram's number of values.
fn series(snapshotter: &Snapshotter, port: u16) -> BTreeMap<String, u64> {
    // The port's label whole: followed by the next label or the end of the labels.
    let (then_more, at_the_end) = (
        format!("server.port={port},"),
        format!("server.port={port}}}"),
    );
    snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .filter_map(|(key, _, _, value)| {
            let name = series::name(key.key());
            if !(name.contains(&then_more) || name.contains(&at_the_end)) {
                return None;
            }
            let value = match value {
                DebugValue::Counter(n) => n,
                DebugValue::Histogram(values) => values.len() as u64,
                DebugValue::Gauge(_) => return None,
            };
            Some((name, value))
        })
        .collect()
}

#[test]
fn metrics_handles_are_registered_once_with_the_global_recorder() {
    let inner = DebuggingRecorder::new();
    let global = inner.snapshotter();
    let registered = Arc::new(AtomicUsize::new(0));
    metrics::set_global_recorder(Registering {
        inner,
        registered: Arc::clone(&registered),
    })
    .expect("the only recorder of this process");
    let retrier = Retrier::new(Policy::default());

    for_each_adapter(|adapter| {
        // Six GETs under the global recorder; then one under a local one, to the same origin
        // with the same answer: the series this thread keeps the global one's handles of.
        let server = Server::start((0..7).map(|_| Reply::status(200).into()));
        let get = || {
            let run = adapter.run(&retrier, TestRequest::get(server.url("/a")), Clock::Virtual);
            assert_eq!(run.status(), Some(200), "{adapter:?}");
        };
        get();
        let after_the_first = registered.load(Ordering::SeqCst);
        for _ in 0..5 {
            get();
        }
        assert_eq!(
            registered.load(Ordering::SeqCst),
            after_the_first,
            "{adapter:?}: the GETs after the first registered a series again"
        );
        let port = server.addr().port();
        let series_before = series(&global, port);
        let at = format!("http.request.method=GET,server.address=127.0.0.1,server.port={port}");
        let six = |name: String| (name, 6);
        assert_eq!(
            series_before,
            BTreeMap::from([
                six(format!("backstop.operation.attempts{{{at}}}")),
                six(format!("backstop.operation.wait.duration{{{at}}}")),
                six(format!(
                    "backstop.operations{{{at},backstop.stop_reason=final_status,\
                     backstop.retried=false,http.response.status_code=200}}"
                )),
                six(format!(
                    "http.client.request.duration{{{at},http.response.status_code=200}}"
                )),
            ]),
            "{adapter:?}"
        );

        let local = DebuggingRecorder::new();
        let run = metrics::with_local_recorder(&local, || {
            adapter.run(&retrier, TestRequest::get(server.url("/b")), Clock::Virtual)
        });
        assert_eq!(run.status(), Some(200), "{adapter:?}");
        let once: BTreeMap<String, u64> = series_before.keys().map(|k| (k.clone(), 1)).collect();
        assert_eq!(
            series(&local.snapshotter(), port),
            once,
            "{adapter:?}: the local recorder missed a series"
        );
        // A snapshot takes what it reads: the global recorder's series now read 0.
        let none: BTreeMap<String, u64> = series_before.keys().map(|k| (k.clone(), 0)).collect();
        assert_eq!(
            series(&global, port),
            none,
            "{adapter:?}: the global recorder heard a request made under a local one"
        );
    });
}
