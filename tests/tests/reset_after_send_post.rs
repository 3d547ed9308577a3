//! The connection is reset after the server read the request: a POST without an
//! `Idempotency-Key` may have taken effect, so it is not retried.

use backstop::classify::ErrorClass;
use backstop::Retrier;
use backstop::StopReason;
use backstop_tests::adapters::{for_each_adapter, Clock, Failure};
use backstop_tests::server::{Action, Server};
use backstop_tests::TestRequest;

#[test]
fn reset_after_the_request_was_sent_is_not_retried_for_post_without_key() {
    for_each_adapter(|adapter| {
        let server = Server::always(Action::Reset);
        let request = TestRequest::post(server.url("/orders")).body("{}");
        let run = adapter.run(&Retrier::default(), request, Clock::Virtual);

        let Err(Failure::Failed { kind, outcome }) = run.result else {
            panic!("{adapter:?}: expected a connection error, got {run:?}");
        };
        assert_eq!(kind.class(), ErrorClass::MaybeSent, "{adapter:?}: {kind:?}");
        assert_eq!(
            (outcome.attempts, outcome.reason),
            (1, StopReason::NoIdempotencyKey)
        );
        assert_eq!(server.requests(), 1);
    });
}
