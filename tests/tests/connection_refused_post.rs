//! Connection refused: the request never left, so even a POST without an `Idempotency-Key` is
//! retried, until the attempts run out.

use backstop::classify::ErrorClass;
use backstop::Retrier;
use backstop::{ErrorKind, Policy, StopReason};
use backstop_tests::adapters::{for_each_adapter, Clock, Failure};
use backstop_tests::server::refused_url;
use backstop_tests::TestRequest;

#[test]
fn refused_connection_is_retried_even_for_post() {
    for_each_adapter(|adapter| {
        let policy = Policy::builder().max_attempts(3).build().expect("policy");
        let request = TestRequest::post(refused_url("/orders")).body("{}");
        let run = adapter.run(&Retrier::new(policy), request, Clock::Virtual);

        let Err(Failure::Failed { kind, outcome }) = run.result else {
            panic!("{adapter:?}: expected a connection error, got {run:?}");
        };
        assert_eq!(kind, ErrorKind::ConnectionRefused, "{adapter:?}");
        assert_eq!(kind.class(), ErrorClass::NotSent);
        assert_eq!(
            (outcome.attempts, outcome.reason),
            (3, StopReason::Attempts)
        );
    });
}
