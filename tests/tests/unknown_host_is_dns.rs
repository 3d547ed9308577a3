//! A host name that does not resolve (`.invalid` is reserved never to resolve, RFC 6761): the
//! same kind, `Dns`, on every adapter, and retried like any failure before sending.

use backstop::classify::ErrorClass;
use backstop::Retrier;
use backstop::{ErrorKind, Policy, StopReason};
use backstop_tests::adapters::{for_each_adapter, Clock, Failure};
use backstop_tests::TestRequest;

#[test]
fn an_unknown_host_is_a_dns_failure_on_every_adapter() {
    for_each_adapter(|adapter| {
        let policy = Policy::builder().max_attempts(2).build().expect("policy");
        let url = "http://backstop-test.invalid/";
        let run = adapter.run(&Retrier::new(policy), TestRequest::get(url), Clock::Virtual);
        let Err(Failure::Failed { kind, outcome }) = run.result else {
            panic!("{adapter:?}: expected a DNS failure, got {run:?}");
        };
        assert_eq!(kind, ErrorKind::Dns, "{adapter:?}");
        assert_eq!(kind.class(), ErrorClass::NotSent);
        assert_eq!(
            (outcome.attempts, outcome.reason),
            (2, StopReason::Attempts),
            "{adapter:?}"
        );
    });
}
