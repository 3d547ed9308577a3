//! A 503, 503, 200 operation over one connection on every adapter, plain and over TLS: the
//! discarded 503s are read to their end (small and quick), so the client sends the next
//! attempt on the same connection, with no new TCP or TLS handshake.

use backstop::Retrier;
use backstop::StopReason;
use backstop_tests::adapters::{for_each_adapter, Clock};
use backstop_tests::certs::TestCa;
use backstop_tests::https::{run_https, Trust};
use backstop_tests::server::{Action, Reply, Server};
use backstop_tests::TestRequest;

fn script() -> [Action; 3] {
    let busy = Reply::status(503)
        .header("Retry-After", "1")
        .body(r#"{"error":"busy"}"#);
    [
        busy.clone().into(),
        busy.into(),
        Reply::status(200).body("done").into(),
    ]
}

#[test]
fn a_503_503_200_operation_uses_one_connection_in_plain_http() {
    for_each_adapter(|adapter| {
        let server = Server::start(script());
        let request = TestRequest::get(server.url("/data"));
        let run = adapter.run(&Retrier::default(), request, Clock::Virtual);
        assert_eq!(run.status(), Some(200), "{adapter:?}: {run:?}");
        assert_eq!(run.body(), Some(&b"done"[..]), "{adapter:?}");
        assert_eq!(
            (run.outcome().attempts, run.outcome().reason),
            (3, StopReason::FinalStatus),
            "{adapter:?}"
        );
        assert_eq!(server.requests(), 3, "{adapter:?}");
        assert_eq!(server.connections(), 1, "{adapter:?}");
    });
}

#[test]
fn a_503_503_200_operation_uses_one_connection_and_one_handshake_over_tls() {
    let ca = TestCa::new();
    let trust = Trust::only_ca(ca.pem());
    let cert = ca.server_cert(&["127.0.0.1"]);
    for_each_adapter(|adapter| {
        let server = Server::start_tls(script(), &cert);
        let request = TestRequest::get(server.url("/data"));
        let https = run_https(adapter, &Retrier::default(), request, &trust);
        let run = &https.run;
        assert_eq!(run.status(), Some(200), "{adapter:?}: {https:?}");
        assert_eq!(run.body(), Some(&b"done"[..]), "{adapter:?}");
        assert_eq!(server.requests(), 3, "{adapter:?}");
        assert_eq!(server.connections(), 1, "{adapter:?}");
    });
}
