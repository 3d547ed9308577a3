//! With the `metrics` feature, one GET answered 503 then 200 reaches the `metrics` recorder as
//! OpenTelemetry's HTTP client series (one `http.client.request.duration` per attempt, the
//! second with `http.request.resend_count`) and backstop's per-operation series: the exact
//! names, labels, units and values, through every front door.

use std::collections::BTreeMap;

use backstop::{Policy, Retrier};
use backstop_tests::adapters::{for_each_adapter, Clock};
use backstop_tests::series;
use backstop_tests::server::{Reply, Server};
use backstop_tests::TestRequest;
use metrics::Unit;
use metrics_util::debugging::{DebugValue, DebuggingRecorder};

/// Each series as `name{label=value,…}` (labels in the order given), its unit and value.
fn series(recorder: &DebuggingRecorder) -> BTreeMap<String, (Option<Unit>, DebugValue)> {
    recorder
        .snapshotter()
        .snapshot()
        .into_vec()
        .into_iter()
        .map(|(key, unit, _description, value)| (series::name(key.key()), (unit, value)))
        .collect()
}

fn histogram(value: &DebugValue) -> Vec<f64> {
    match value {
        DebugValue::Histogram(values) => values.iter().map(|v| v.0).collect(),
        other => panic!("not a histogram: {other:?}"),
    }
}

#[test]
fn metrics_speak_opentelemetrys_names() {
    for_each_adapter(|adapter| {
        let server = Server::start([Reply::status(503).into(), Reply::status(200).into()]);
        let recorder = DebuggingRecorder::new();
        let run = metrics::with_local_recorder(&recorder, || {
            let policy = Policy::builder().max_attempts(3).build().expect("policy");
            let retrier = Retrier::new(policy);
            adapter.run(
                &retrier,
                TestRequest::get(server.url("/items?token=secret")),
                Clock::Virtual,
            )
        });
        assert_eq!(run.status(), Some(200), "{adapter:?}");
        let series = series(&recorder);

        let at = format!(
            "http.request.method=GET,server.address=127.0.0.1,server.port={}",
            server.addr().port()
        );
        let names: Vec<&str> = series.keys().map(String::as_str).collect();
        assert_eq!(
            names,
            [
                format!("backstop.operation.attempts{{{at}}}"),
                format!("backstop.operation.wait.duration{{{at}}}"),
                format!(
                    "backstop.operations{{{at},backstop.stop_reason=final_status,\
                     backstop.retried=true,http.response.status_code=200}}"
                ),
                format!("backstop.waits{{{at},backstop.wait.source=backoff}}"),
                format!(
                    "http.client.request.duration{{{at},http.response.status_code=200,\
                     http.request.resend_count=1}}"
                ),
                // A 4xx or 5xx attempt is an error: its status is its `error.type`.
                format!(
                    "http.client.request.duration{{{at},http.response.status_code=503,\
                     error.type=503}}"
                ),
            ],
            "{adapter:?}: {series:#?}"
        );
        let get = |i: usize| &series[names[i]];

        assert_eq!(histogram(&get(0).1), [2.0], "{adapter:?}: attempts");
        let waited = histogram(&get(1).1);
        assert_eq!(get(1).0, Some(Unit::Seconds), "{adapter:?}");
        // The default backoff's first wait, on the virtual clock: above zero, below a second.
        assert!(
            waited.len() == 1 && waited[0] > 0.0 && waited[0] < 1.0,
            "{adapter:?}: waited {waited:?}"
        );
        assert_eq!(get(2).1, DebugValue::Counter(1), "{adapter:?}: operations");
        assert_eq!(get(3).1, DebugValue::Counter(1), "{adapter:?}: waits");
        for i in [4, 5] {
            assert_eq!(get(i).0, Some(Unit::Seconds), "{adapter:?}");
            let took = histogram(&get(i).1);
            assert!(
                took.len() == 1 && took[0] > 0.0 && took[0] < 10.0,
                "{adapter:?}: {} took {took:?}",
                names[i]
            );
        }
    });
}
