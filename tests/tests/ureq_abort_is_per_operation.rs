//! ureq adapter: aborting one operation shuts down only its own connection. Another operation
//! on the same client (the same agent and pool), in flight at the same time, completes.

use std::sync::Arc;
use std::time::Duration;

use backstop::{Abort, Retrier, RetryError};
use backstop::{Policy, StopReason};
use backstop_tests::server::{Action, Reply, Server};
use backstop_tests::TestRequest;

#[test]
fn aborting_one_ureq_operation_leaves_the_others_running() {
    let hanging = Arc::new(Server::always(Action::Hang));
    let slow = Arc::new(Server::always(
        Reply::status(200)
            .body("slow")
            .delay(Duration::from_millis(300)),
    ));
    let policy = Policy::builder()
        .attempt_timeout(Duration::from_secs(10))
        .build()
        .expect("policy");
    let client = Arc::new(backstop::ureq::Client::new(Retrier::new(policy)));

    let other = {
        let (client, slow) = (client.clone(), slow.clone());
        std::thread::spawn(move || {
            let mut done = client
                .run(TestRequest::get(slow.url("/")).to_http().map(Vec::from))
                .expect("the other operation completes");
            done.response.body_mut().read_to_vec().expect("body")
        })
    };
    let abort = Abort::new();
    let aborter = {
        let (abort, hanging, slow) = (abort.clone(), hanging.clone(), slow.clone());
        std::thread::spawn(move || {
            let both = hanging.wait_for_requests(1, Duration::from_secs(10))
                && slow.wait_for_requests(1, Duration::from_secs(10));
            abort.abort();
            both
        })
    };
    let request = TestRequest::get(hanging.url("/")).abort_on(&abort);
    let result = client.run(request.to_http().map(Vec::from));

    assert!(
        aborter.join().expect("aborter"),
        "both requests were in flight"
    );
    assert!(
        matches!(&result, Err(RetryError::Aborted(o)) if o.reason == StopReason::Aborted),
        "{result:?}"
    );
    assert_eq!(other.join().expect("other operation"), b"slow");
    assert_eq!((hanging.requests(), slow.requests()), (1, 1));
}
