//! A connect that never completes is `ConnectTimeout`, not sent, on every adapter: a POST
//! without an `Idempotency-Key` is retried until the attempts run out.
//!
//! The listener's accept queue is full and it never accepts, so Linux drops every further SYN:
//! the TCP handshake of each attempt hangs until the attempt's timeout.

use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use backstop::classify::{AttemptOutcome, ErrorClass};
use backstop::Retrier;
use backstop::{ErrorKind, Policy, StopReason};
use backstop_tests::adapters::{for_each_adapter, Clock};
use backstop_tests::TestRequest;
use socket2::{Domain, Socket, Type};

/// A listener on 127.0.0.1 that accepts nothing, its accept queue filled by connections it
/// never takes: the next SYN gets no answer.
struct FullQueue {
    addr: SocketAddr,
    _listener: Socket,
    _queued: Vec<TcpStream>,
}

impl FullQueue {
    fn new() -> FullQueue {
        let listener = Socket::new(Domain::IPV4, Type::STREAM, None).expect("a socket");
        let any: SocketAddr = "127.0.0.1:0".parse().expect("an address");
        listener.bind(&any.into()).expect("bind");
        listener.listen(0).expect("listen");
        let addr = listener
            .local_addr()
            .expect("an address")
            .as_socket()
            .expect("an IP address");
        let mut queued = Vec::new();
        // Bounded: a backlog of 0 holds one connection on Linux; a few more at most.
        for _ in 0..32 {
            match TcpStream::connect_timeout(&addr, Duration::from_millis(100)) {
                Ok(stream) => queued.push(stream),
                Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {
                    return FullQueue {
                        addr,
                        _listener: listener,
                        _queued: queued,
                    }
                }
                Err(e) => panic!("filling the accept queue: {e}"),
            }
        }
        panic!("the accept queue never filled");
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }
}

#[test]
fn a_connect_that_never_completes_is_a_connect_timeout_and_a_keyless_post_is_retried() {
    let queue = FullQueue::new();
    let mut wrong = Vec::new();
    for_each_adapter(|adapter| {
        let policy = Policy::builder()
            .max_attempts(3)
            .attempt_timeout(Duration::from_millis(150))
            .build()
            .expect("policy");
        let request = TestRequest::post(queue.url("/orders")).body("{}");
        let run = adapter.run(&Retrier::new(policy), request, Clock::Virtual);

        let outcome = run.outcome();
        let last = match outcome.last {
            Some(AttemptOutcome::Error(e)) => Some((e.kind, e.class)),
            _ => None,
        };
        let expected = (
            Some((ErrorKind::ConnectTimeout, ErrorClass::NotSent)),
            3,
            StopReason::Attempts,
        );
        if (last, outcome.attempts, outcome.reason) != expected {
            wrong.push(format!("{adapter:?}: {run:?}"));
        }
        assert!(run.real < Duration::from_secs(5), "{adapter:?}: {run:?}");
    });
    assert!(wrong.is_empty(), "{wrong:#?}");
}
