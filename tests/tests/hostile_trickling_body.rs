//! A body that trickles one byte a second, through every adapter. A discarded 503 whose body
//! trickles must not hold the retry up: it is dropped, not drained, and the retry gets the 200
//! at once. A 200 whose body trickles is handed to the caller as soon as its head arrives:
//! reading the body is the caller's business, not the retry loop's.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use backstop::{AttemptOutcome, Policy, StopReason};
use backstop_driver::{Retrier, RetryRequest};
use backstop_tests::adapters::{for_each_adapter, Clock};

#[test]
fn a_discarded_trickling_body_does_not_hold_up_the_retry() {
    let policy = policy();
    for_each_adapter(|adapter| {
        let server = Trickler::start(
            b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 0\r\nContent-Length: 600\r\n\r\n",
            600,
        );
        let request = RetryRequest::get(server.url().parse().expect("url"));
        let run = adapter.run(&Retrier::new(policy).seed(4), request, Clock::Real);

        let context = format!("{adapter:?}: {run:?}");
        assert_eq!(run.status(), Some(200), "{context}");
        assert_eq!(run.body(), Some(&b"ok"[..]), "{context}");
        let outcome = run.outcome();
        assert_eq!(
            (outcome.attempts, outcome.reason),
            (2, StopReason::FinalStatus),
            "{context}"
        );
        assert_eq!(
            outcome.last,
            Some(AttemptOutcome::Response(200)),
            "{context}"
        );
        // Well under the one byte a second it would take to drain the 503's body.
        assert!(run.real < Duration::from_secs(2), "{context}");
        assert_eq!(server.requests(), 2, "{context}");
    });
}

#[test]
fn a_trickling_final_body_is_the_callers_to_read() {
    let policy = policy();
    for_each_adapter(|adapter| {
        let server = Trickler::start(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n", 2);
        let request = RetryRequest::get(server.url().parse().expect("url"));
        let run = adapter.run(&Retrier::new(policy).seed(5), request, Clock::Real);

        let context = format!("{adapter:?}: {run:?}");
        assert_eq!(run.status(), Some(200), "{context}");
        assert_eq!(run.body(), Some(&b"xx"[..]), "{context}");
        let outcome = run.outcome();
        assert_eq!(
            (outcome.attempts, outcome.reason),
            (1, StopReason::FinalStatus),
            "{context}"
        );
        // The operation ended when the head arrived; the test then read the body (2 s).
        assert!(outcome.elapsed < Duration::from_secs(1), "{context}");
        assert!(run.real >= Duration::from_millis(1_500), "{context}");
        assert!(
            run.real < policy.max_elapsed() + policy.attempt_timeout(),
            "{context}"
        );
    });
}

fn policy() -> Policy {
    Policy::builder()
        .max_elapsed(Duration::from_secs(5))
        .attempt_timeout(Duration::from_secs(2))
        .build()
        .expect("policy")
}

/// A loopback server whose first connection gets `head` and then `len` bytes of `x`, one a
/// second; every later connection gets `200 ok`. Dropping it stops it and joins its threads.
struct Trickler {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    requests: Arc<AtomicUsize>,
    threads: Arc<Mutex<Vec<JoinHandle<()>>>>,
    accept: Option<JoinHandle<()>>,
}

impl Trickler {
    fn start(head: &'static [u8], len: usize) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        listener.set_nonblocking(true).expect("nonblocking");
        let addr = listener.local_addr().expect("addr");
        let stop = Arc::new(AtomicBool::new(false));
        let requests = Arc::new(AtomicUsize::new(0));
        let threads = Arc::new(Mutex::new(Vec::new()));
        let accept = {
            let (stop, requests, threads) = (stop.clone(), requests.clone(), threads.clone());
            std::thread::spawn(move || {
                let mut connections = 0;
                while !stop.load(Ordering::SeqCst) {
                    let Ok((stream, _)) = listener.accept() else {
                        std::thread::sleep(Duration::from_millis(5));
                        continue;
                    };
                    let first = connections == 0;
                    connections += 1;
                    let (stop, requests) = (stop.clone(), requests.clone());
                    let handle = std::thread::spawn(move || {
                        serve(stream, first, head, len, &stop, &requests);
                    });
                    threads.lock().expect("lock").push(handle);
                }
            })
        };
        Trickler {
            addr,
            stop,
            requests,
            threads,
            accept: Some(accept),
        }
    }

    fn url(&self) -> String {
        format!("http://{}/trickle", self.addr)
    }

    fn requests(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }
}

impl Drop for Trickler {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(accept) = self.accept.take() {
            let _ = accept.join();
        }
        let threads = std::mem::take(&mut *self.threads.lock().expect("lock"));
        for t in threads {
            let _ = t.join();
        }
    }
}

fn serve(
    mut stream: TcpStream,
    first: bool,
    head: &[u8],
    len: usize,
    stop: &AtomicBool,
    requests: &AtomicUsize,
) {
    let _ = stream.set_nonblocking(false);
    let _ = stream.set_read_timeout(Some(Duration::from_millis(100)));
    loop {
        if !read_head(&mut stream, stop) {
            return;
        }
        requests.fetch_add(1, Ordering::SeqCst);
        if !first {
            if stream
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                .is_err()
            {
                return;
            }
            continue;
        }
        if stream.write_all(head).is_err() {
            return;
        }
        for _ in 0..len {
            // One byte a second, stopping early when the server stops or the client left.
            for _ in 0..20 {
                if stop.load(Ordering::SeqCst) {
                    return;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            if stream.write_all(b"x").is_err() {
                return;
            }
        }
    }
}

/// Reads one request head (no body: GET). `false` when the client left or the server stops.
fn read_head(stream: &mut TcpStream, stop: &AtomicBool) -> bool {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if stop.load(Ordering::SeqCst) || head.len() > 64 * 1024 {
            return false;
        }
        match stream.read(&mut byte) {
            Ok(0) => return false,
            Ok(_) => head.push(byte[0]),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => return false,
        }
    }
    true
}
