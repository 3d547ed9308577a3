//! A server that accepts the connection and never answers, through every adapter: whether it
//! reads the request or not even that, every attempt times out, and the operation ends within
//! `max_elapsed` plus one attempt timeout as a time-out, the last error intact, without hanging.

use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use backstop::classify::AttemptOutcome;
use backstop::Retrier;
use backstop::{ErrorKind, Policy, StopReason};
use backstop_tests::adapters::{for_each_adapter, Clock, Failure, Run};
use backstop_tests::server::{Action, Server};
use backstop_tests::TestRequest;

fn policy() -> Policy {
    Policy::builder()
        .max_elapsed(Duration::from_millis(1_200))
        .attempt_timeout(Duration::from_millis(300))
        .build()
        .expect("policy")
}

#[test]
fn a_server_that_reads_and_never_answers_times_out_within_bounds() {
    let policy = policy();
    for_each_adapter(|adapter| {
        let server = Server::always(Action::Hang);
        let request = TestRequest::get(server.url("/silent"));
        let run = adapter.run(&Retrier::new(policy).seed(6), request, Clock::Real);
        assert_timed_out(&run, &policy);
        // The server counts a request once it has read its head, on its own thread: give it
        // a bounded moment to catch up with what the client already wrote.
        let attempts = run.outcome().attempts as usize;
        let settled = std::time::Instant::now() + Duration::from_secs(2);
        while server.requests() < attempts && std::time::Instant::now() < settled {
            std::thread::sleep(Duration::from_millis(10));
        }
        // Nothing arrives that was not counted. The last attempt may have been started with
        // only the milliseconds left before the deadline and cut off before its request was
        // written (started, so counted, yet never received): at most that one is missing.
        let received = server.requests();
        assert!(
            received <= attempts && received + 1 >= attempts,
            "{received} requests received for {run:?}"
        );
    });
}

#[test]
fn a_server_that_never_even_reads_times_out_within_bounds() {
    let policy = policy();
    for_each_adapter(|adapter| {
        let server = Mute::start();
        let request = TestRequest::get(&server.url);
        let run = adapter.run(&Retrier::new(policy).seed(7), request, Clock::Real);
        assert_timed_out(&run, &policy);
    });
}

fn assert_timed_out(run: &Run, policy: &Policy) {
    // Scheduling slack for a loaded 2-core CI machine (one run failed with 500 ms). A hang, the
    // failure this guards against, would overshoot it by far.
    let slack = Duration::from_secs(2);
    assert!(
        run.real <= policy.max_elapsed() + policy.attempt_timeout() + slack,
        "took too long: {run:?}"
    );
    let Err(Failure::TimedOut(outcome)) = run.result else {
        panic!("expected a time-out: {run:?}");
    };
    assert!(
        (2..=policy.max_attempts()).contains(&outcome.attempts),
        "retried, within max_attempts: {run:?}"
    );
    assert!(
        matches!(outcome.reason, StopReason::Attempts | StopReason::Deadline),
        "{run:?}"
    );
    assert!(
        matches!(outcome.last, Some(AttemptOutcome::Error(e)) if e.kind == ErrorKind::Timeout),
        "{run:?}"
    );
    assert!(
        outcome.elapsed <= policy.max_elapsed() + policy.attempt_timeout(),
        "{run:?}"
    );
}

/// A loopback listener that accepts connections and never reads or writes a byte. Dropping it
/// closes them and joins its thread.
struct Mute {
    url: String,
    stop: Arc<AtomicBool>,
    held: Arc<Mutex<Vec<TcpStream>>>,
    accept: Option<JoinHandle<()>>,
}

impl Mute {
    fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        listener.set_nonblocking(true).expect("nonblocking");
        let url = format!("http://{}/mute", listener.local_addr().expect("addr"));
        let stop = Arc::new(AtomicBool::new(false));
        let held = Arc::new(Mutex::new(Vec::new()));
        let accept = {
            let (stop, held) = (stop.clone(), held.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::SeqCst) {
                    match listener.accept() {
                        Ok((stream, _)) => held.lock().expect("lock").push(stream),
                        Err(_) => std::thread::sleep(Duration::from_millis(5)),
                    }
                }
            })
        };
        Mute {
            url,
            stop,
            held,
            accept: Some(accept),
        }
    }
}

impl Drop for Mute {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(accept) = self.accept.take() {
            let _ = accept.join();
        }
        self.held.lock().expect("lock").clear();
    }
}
