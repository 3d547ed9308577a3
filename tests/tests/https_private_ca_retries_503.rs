//! A server behind a private CA, trusted by the client: 503, 503, 200 over https, the body
//! intact, on every adapter.

use backstop::Retrier;
use backstop::StopReason;
use backstop_tests::certs::TestCa;
use backstop_tests::https::{for_each_https_adapter, run_https, Trust, TERMINATES_WITHIN};
use backstop_tests::server::{Reply, Server};
use backstop_tests::TestRequest;

#[test]
fn https_with_a_trusted_private_ca_retries_503_then_returns_the_200() {
    let ca = TestCa::new();
    let tls = Trust::only_ca(ca.pem());
    let busy = Reply::status(503).header("Retry-After", "1");
    for_each_https_adapter(|adapter| {
        let server = Server::start_tls(
            [
                busy.clone().into(),
                busy.clone().into(),
                Reply::status(200).body("over tls").into(),
            ],
            &ca.server_cert(&["127.0.0.1"]),
        );
        let request = TestRequest::get(server.url("/data"));
        let https = run_https(adapter, &Retrier::default(), request, &tls);
        let run = &https.run;
        assert_eq!(run.status(), Some(200), "{adapter:?}: {https:?}");
        assert_eq!(run.body(), Some(&b"over tls"[..]), "{adapter:?}");
        let outcome = run.outcome();
        assert_eq!(
            (outcome.attempts, outcome.reason),
            (3, StopReason::FinalStatus),
            "{adapter:?}"
        );
        assert_eq!(server.requests(), 3, "{adapter:?}");
        // A new connection per attempt, or one kept across them: never more than the attempts.
        assert!(
            (1..=3).contains(&server.connections()),
            "{adapter:?}: {} connections",
            server.connections()
        );
        assert!(run.real < TERMINATES_WITHIN, "{adapter:?}: {:?}", run.real);
    });
}
