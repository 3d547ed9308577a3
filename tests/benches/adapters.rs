//! Measured, not asserted: the adapters' overhead, abort latency and timer overshoot.
//!
//! `cargo bench -p backstop-tests --bench adapters` (add `-- --quick` for a short run). Prints
//! medians and 99th percentiles:
//!
//! 1. the ureq adapter against bare ureq with the same timeouts and with none, for a GET that
//!    succeeds at once on loopback, in one interleaved run (target: under 2 % at the median
//!    over ureq with the same timeouts);
//! 2. abort latency, from `Abort::abort` on another thread to the loop returning (its
//!    `Finished` event), with the request in flight and during a wait (target p99: under 1 ms async, under 5 ms blocking);
//! 3. timer overshoot: how much longer than decided a 20 ms wait actually slept (target p99:
//!    under 2 ms).

#![allow(clippy::print_stdout, clippy::unwrap_used)]

use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use backstop::Policy;
use backstop::{Abort, EventKind, Retrier};
use backstop_tests::adapters::{Adapter, Clock};
use backstop_tests::overhead::{Getters, Way};
use backstop_tests::server::{Action, Reply, Server};
use backstop_tests::TestRequest;

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let scale = if quick { 10 } else { 1 };
    overhead(20_000 / scale);
    for adapter in Adapter::ALL {
        abort_latency(adapter, 200 / scale);
    }
    for adapter in Adapter::ALL {
        timer_overshoot(adapter, 100 / scale);
    }
}

struct Stats {
    median: Duration,
    p99: Duration,
    n: usize,
}

fn stats(mut samples: Vec<Duration>) -> Stats {
    samples.sort();
    let at = |q: f64| {
        // Nearest rank; the cast cannot lose anything that matters for a few thousand samples.
        #[allow(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            clippy::cast_precision_loss
        )]
        let i = ((samples.len() as f64 * q).ceil() as usize).clamp(1, samples.len()) - 1;
        samples[i]
    };
    Stats {
        median: at(0.5),
        p99: at(0.99),
        n: samples.len(),
    }
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// A one-thread, busy-polling HTTP server for the overhead measurement.
///
/// The scripted server gives each connection its own thread; each client (bare ureq, the
/// adapter) keeps its own pooled connection, so with it each would be served by a different
/// thread, and on a small machine the two threads' placement alone moved the medians by 2-3x
/// between runs. One thread serving every connection makes the comparison fair.
struct PollServer {
    addr: std::net::SocketAddr,
    stop: Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl PollServer {
    fn start() -> Self {
        use std::io::{Read, Write};
        use std::sync::atomic::Ordering;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let answer = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
            let mut conns: Vec<(std::net::TcpStream, Vec<u8>)> = Vec::new();
            let mut buf = [0_u8; 4096];
            let mut seed = 0x9E37_79B9_7F4A_7C15_u64;
            while !flag.load(Ordering::Relaxed) {
                if let Ok((s, _)) = listener.accept() {
                    s.set_nonblocking(true).unwrap();
                    s.set_nodelay(true).unwrap();
                    conns.push((s, Vec::new()));
                }
                // Start each pass at a random connection. The clients take turns in a fixed
                // order, so with a fixed or steadily rotating order where a client's
                // connection sits relative to the previous client's decided how long its
                // request waited to be seen: that alone moved a variant's median by 1-3 us.
                if conns.len() > 1 {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    #[allow(clippy::cast_possible_truncation)] // a small index
                    let start = (seed % conns.len() as u64) as usize;
                    conns.rotate_left(start);
                }
                conns.retain_mut(|(s, pending)| match s.read(&mut buf) {
                    Ok(0) => false,
                    Ok(n) => {
                        pending.extend_from_slice(&buf[..n]);
                        while let Some(end) = pending.windows(4).position(|w| w == b"\r\n\r\n") {
                            pending.drain(..end + 4);
                            if s.write_all(answer).is_err() {
                                return false;
                            }
                        }
                        true
                    }
                    Err(e) => e.kind() == std::io::ErrorKind::WouldBlock,
                });
            }
        });
        PollServer {
            addr,
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for PollServer {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            t.join().unwrap();
        }
    }
}

/// Bare ureq and the ureq adapter, interleaved request by request against the same server.
fn overhead(n: usize) {
    let server = PollServer::start();
    let url = format!("http://{}/fast", server.addr);
    let mut samples: [Vec<Duration>; Way::ALL.len()] = Default::default();
    // Each variant keeps one pooled connection, and a connection's own TCP state moved its
    // variant's median by up to 3 us between runs (whichever got the lucky connection was
    // fastest, baseline or adapter). So the run is cut in blocks, each with new clients and
    // connections.
    const BLOCKS: usize = 20;
    for _ in 0..BLOCKS {
        let getters = Getters::new();
        // Warm every pool and the server's threads.
        for _ in 0..50 {
            for way in Way::ALL {
                getters.get(way, &url).unwrap();
            }
        }
        // The order rotates each round, so that no way always runs first.
        for round in 0..n / BLOCKS {
            for which in 0..Way::ALL.len() {
                let way = Way::ALL[(round + which) % Way::ALL.len()];
                let t = Instant::now();
                getters.get(way, &url).unwrap();
                samples[way as usize].push(t.elapsed());
            }
        }
    }
    let [t_bare, t_same, t_adapter, t_abortable, ..] = samples;
    let (b, bs) = (stats(t_bare), stats(t_same));
    println!(
        "== ureq adapter overhead, GET 200 on loopback, {} requests each, interleaved",
        b.n
    );
    println!(
        "bare ureq, no timeouts     median {:8.1} us   p99 {:8.1} us",
        us(b.median),
        us(b.p99)
    );
    println!(
        "bare ureq, same timeouts   median {:8.1} us   p99 {:8.1} us",
        us(bs.median),
        us(bs.p99)
    );
    for (name, s) in [
        ("backstop::ureq", stats(t_adapter)),
        ("backstop::ureq + Abort", stats(t_abortable)),
    ] {
        let pct = |base: &Stats| (s.median.as_secs_f64() / base.median.as_secs_f64() - 1.0) * 100.0;
        println!(
            "{name:<26} median {:8.1} us   p99 {:8.1} us   median overhead {:+.2} % over \
             the same timeouts, {:+.2} % over no timeouts",
            us(s.median),
            us(s.p99),
            pct(&bs),
            pct(&b)
        );
    }
}

/// Records when the operation finishes: the loop emits `Finished` as it returns, so the
/// measure leaves out the test harness's own teardown (dropping the client, reading bodies).
fn finish_recorder(retrier: Retrier) -> (Retrier, Arc<Mutex<Option<Instant>>>) {
    let finished = Arc::new(Mutex::new(None));
    let at = finished.clone();
    let retrier = retrier.on_event(move |e| {
        if matches!(e.kind, EventKind::Finished { .. }) {
            *at.lock().unwrap() = Some(Instant::now());
        }
    });
    (retrier, finished)
}

/// Abort from another thread, measured to the moment the loop returns.
fn abort_latency(adapter: Adapter, n: usize) {
    let policy = Policy::builder()
        .attempt_timeout(Duration::from_secs(30))
        .max_elapsed(Duration::from_secs(120))
        .build()
        .unwrap();
    let mut in_flight = Vec::new();
    let mut waiting = Vec::new();
    for round in 0..n {
        // In flight: the server hangs; abort once it has the request.
        let server = Arc::new(Server::always(Action::Hang));
        let abort = Abort::new();
        let fired = Arc::new(Mutex::new(None));
        let aborter = {
            let (server, abort, fired) = (server.clone(), abort.clone(), fired.clone());
            std::thread::spawn(move || {
                assert!(server.wait_for_requests(1, Duration::from_secs(10)));
                // Let the client settle into its read.
                std::thread::sleep(Duration::from_millis(1));
                *fired.lock().unwrap() = Some(Instant::now());
                abort.abort();
            })
        };
        let request = TestRequest::get(server.url("/")).abort_on(&abort);
        let (retrier, finished) = finish_recorder(Retrier::new(policy));
        let run = adapter.run(&retrier, request, Clock::Real);
        aborter.join().unwrap();
        assert!(run.result.is_err(), "{run:?}");
        in_flight.push(finished.lock().unwrap().unwrap() - fired.lock().unwrap().unwrap());

        // Waiting: 503 with Retry-After: 30; abort when the wait starts.
        let server = Server::always(Reply::status(503).header("Retry-After", "30"));
        let abort = Abort::new();
        let (tx, rx) = mpsc::channel();
        let retrier = Retrier::new(policy).on_event(move |e| {
            if matches!(e.kind, EventKind::WaitStarted { .. }) {
                let _ = tx.send(());
            }
        });
        let fired = Arc::new(Mutex::new(None));
        let aborter = {
            let (abort, fired) = (abort.clone(), fired.clone());
            std::thread::spawn(move || {
                rx.recv_timeout(Duration::from_secs(10)).unwrap();
                std::thread::sleep(Duration::from_millis(1));
                *fired.lock().unwrap() = Some(Instant::now());
                abort.abort();
            })
        };
        let request = TestRequest::get(server.url("/")).abort_on(&abort);
        let (retrier, finished) = finish_recorder(retrier);
        let run = adapter.run(&retrier, request, Clock::Real);
        aborter.join().unwrap();
        assert!(run.result.is_err(), "{run:?}");
        waiting.push(finished.lock().unwrap().unwrap() - fired.lock().unwrap().unwrap());
        let _ = round;
    }
    let (f, w) = (stats(in_flight), stats(waiting));
    println!(
        "== abort latency, {adapter:?}, {} aborts each (abort() to the loop returning)",
        f.n
    );
    println!(
        "request in flight          median {:8.1} us   p99 {:8.1} us",
        us(f.median),
        us(f.p99)
    );
    println!(
        "during a wait              median {:8.1} us   p99 {:8.1} us",
        us(w.median),
        us(w.p99)
    );
}

/// A decided 20 ms wait (`Retry-After: 0.02`, no spread): how much longer it really slept.
fn timer_overshoot(adapter: Adapter, n: usize) {
    let policy = Policy::builder()
        .retry_after_spread(Duration::ZERO)
        .max_attempts(n.try_into().unwrap_or(u32::MAX).saturating_add(1))
        .max_elapsed(Duration::from_secs(600))
        .build()
        .unwrap();
    let decided = Arc::new(Mutex::new(Vec::new()));
    let slept = Arc::new(Mutex::new(Vec::new()));
    let (d, s) = (decided.clone(), slept.clone());
    let retrier = Retrier::new(policy).on_event(move |e| match e.kind {
        EventKind::WaitStarted { delay, .. } => d.lock().unwrap().push(delay),
        EventKind::WaitEnded { slept, .. } => s.lock().unwrap().push(slept),
        _ => {}
    });
    let mut script: Vec<Action> = vec![Reply::status(503).header("Retry-After", "0.02").into(); n];
    script.push(Reply::status(200).into());
    let server = Server::start(script);
    let run = adapter.run(&retrier, TestRequest::get(server.url("/")), Clock::Real);
    assert_eq!(run.status(), Some(200), "{run:?}");
    let decided = decided.lock().unwrap().clone();
    let slept = slept.lock().unwrap().clone();
    let over: Vec<Duration> = decided
        .iter()
        .zip(&slept)
        .map(|(d, s)| s.saturating_sub(*d))
        .collect();
    let o = stats(over);
    println!("== timer overshoot, {adapter:?}, {} waits of 20 ms", o.n);
    println!(
        "slept beyond the decision  median {:8.1} us   p99 {:8.1} us",
        us(o.median),
        us(o.p99)
    );
}
