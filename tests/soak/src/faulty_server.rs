//! A faulty HTTP/1.1 server on loopback, for the soak.
//!
//! Rule: the server counts a request when it has read the request's whole head, before it
//! answers, so the count is what reached the server whatever the answer; a connection that is
//! refused (nothing listens on [`refused_url`]) sends nothing and counts nothing. Each request
//! gets a [`Fault`] drawn from a seeded [`Mix`]; answers that end the connection say so or
//! reset it, and the others keep it alive, so a client's pooled connection is never closed
//! under it between two requests (which would turn into an attempt the server never read).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// What the server does with one request it has read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Fault {
    /// `200 OK` with a short body.
    Ok,
    /// `503` without `Retry-After`: the client's backoff applies.
    Unavailable,
    /// `503` with `Retry-After: 0`.
    UnavailableRetryAfter,
    /// A TCP reset before any byte of the response.
    ResetBeforeHead,
    /// A `200` head announcing a body, part of the body, then a TCP reset.
    ResetAfterHead,
    /// Nothing for longer than the stall (past the attempt timeout), then close.
    Stall,
    /// A `200` whose head arrives a few bytes at a time, a gap between each: fast or slow
    /// enough to pass the attempt timeout, at random.
    TrickleHead,
}

impl Fault {
    /// Every fault, in the order of [`Mix::weights`].
    pub const ALL: [Fault; 7] = [
        Fault::Ok,
        Fault::Unavailable,
        Fault::UnavailableRetryAfter,
        Fault::ResetBeforeHead,
        Fault::ResetAfterHead,
        Fault::Stall,
        Fault::TrickleHead,
    ];
}

/// Relative weights of the faults (index as [`Fault::ALL`]), a seed, and timings.
#[derive(Clone, Copy, Debug)]
pub struct Mix {
    /// Weight of each fault, in the order of [`Fault::ALL`].
    pub weights: [u32; 7],
    /// Seed of the draws (each connection draws from `seed` and its own number).
    pub seed: u64,
    /// How long a [`Fault::Stall`] stays silent: set it past the clients' attempt timeout.
    pub stall: Duration,
    /// The gap between two pieces of a trickled head when it is slow: set it so that the head
    /// takes longer than the attempt timeout (a fast one takes a twentieth of it per piece).
    pub slow_trickle_gap: Duration,
}

impl Mix {
    /// Only [`Fault::Ok`]: a plain, fast server.
    #[must_use]
    pub const fn healthy() -> Self {
        Mix {
            weights: [1, 0, 0, 0, 0, 0, 0],
            seed: 1,
            stall: Duration::ZERO,
            slow_trickle_gap: Duration::ZERO,
        }
    }

    /// The soak's mix: mostly answers, about 4 in 10 requests faulty, for clients whose attempt
    /// timeout is `attempt_timeout`.
    #[must_use]
    pub fn faulty(seed: u64, attempt_timeout: Duration) -> Self {
        Mix {
            // ok, 503, 503+RA, reset before, reset after, stall, trickle
            weights: [60, 12, 10, 5, 5, 3, 5],
            seed,
            stall: attempt_timeout + Duration::from_millis(50),
            slow_trickle_gap: attempt_timeout / 10,
        }
    }
}

/// The running server. Dropping it stops accepting; connections end when their clients close
/// them (see [`FaultyServer::wait_idle`]).
pub struct FaultyServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    accept: Option<JoinHandle<()>>,
}

struct Shared {
    mix: Mix,
    stop: AtomicBool,
    requests: AtomicU64,
    by_fault: [AtomicU64; 7],
    connections: AtomicU64,
    open: AtomicUsize,
}

impl FaultyServer {
    /// Starts a server on 127.0.0.1, on a port of the system's choosing.
    ///
    /// # Panics
    ///
    /// If loopback cannot be bound (no test can run then).
    #[must_use]
    pub fn start(mix: Mix) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        let addr = listener.local_addr().expect("local address");
        let shared = Arc::new(Shared {
            mix,
            stop: AtomicBool::new(false),
            requests: AtomicU64::new(0),
            by_fault: Default::default(),
            connections: AtomicU64::new(0),
            open: AtomicUsize::new(0),
        });
        let s = shared.clone();
        let accept = std::thread::spawn(move || accept_loop(&listener, &s));
        FaultyServer {
            addr,
            shared,
            accept: Some(accept),
        }
    }

    /// `http://127.0.0.1:port{path}`.
    #[must_use]
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Requests read so far (whole heads).
    #[must_use]
    pub fn requests(&self) -> u64 {
        self.shared.requests.load(Ordering::SeqCst)
    }

    /// Requests read so far, by the fault they were answered with.
    #[must_use]
    pub fn requests_by_fault(&self) -> [(Fault, u64); 7] {
        core::array::from_fn(|i| {
            (
                Fault::ALL[i],
                self.shared.by_fault[i].load(Ordering::SeqCst),
            )
        })
    }

    /// Connections accepted so far.
    #[must_use]
    pub fn connections(&self) -> u64 {
        self.shared.connections.load(Ordering::SeqCst)
    }

    /// Waits (at most `limit`) until every connection has ended; whether they all did.
    #[must_use]
    pub fn wait_idle(&self, limit: Duration) -> bool {
        let end = std::time::Instant::now() + limit;
        while self.shared.open.load(Ordering::SeqCst) > 0 {
            if std::time::Instant::now() >= end {
                return false;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        true
    }
}

impl Drop for FaultyServer {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        // Wake the blocking accept.
        let _ = TcpStream::connect(self.addr);
        if let Some(t) = self.accept.take() {
            let _ = t.join();
        }
    }
}

/// A URL on 127.0.0.1 where nothing listens: every connection is refused.
///
/// # Panics
///
/// If loopback cannot be bound.
#[must_use]
pub fn refused_url(path: &str) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
    let addr = listener.local_addr().expect("local address");
    drop(listener);
    format!("http://{addr}{path}")
}

fn accept_loop(listener: &TcpListener, shared: &Arc<Shared>) {
    for (n, stream) in listener.incoming().enumerate() {
        if shared.stop.load(Ordering::SeqCst) {
            return;
        }
        let Ok(stream) = stream else { continue };
        shared.connections.fetch_add(1, Ordering::SeqCst);
        shared.open.fetch_add(1, Ordering::SeqCst);
        let s = shared.clone();
        let spawned = std::thread::Builder::new()
            .stack_size(64 * 1024)
            .spawn(move || {
                serve(stream, &s, n as u64);
                s.open.fetch_sub(1, Ordering::SeqCst);
            });
        if spawned.is_err() {
            shared.open.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

/// xorshift64*: enough for a fault mix, seeded per connection.
struct Draw(u64);

impl Draw {
    fn new(seed: u64, connection: u64) -> Self {
        Draw((seed ^ connection.wrapping_mul(0x9E37_79B9_7F4A_7C15)) | 1)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn fault(&mut self, weights: &[u32; 7]) -> Fault {
        let total: u64 = weights.iter().map(|&w| u64::from(w)).sum();
        let mut pick = self.next() % total.max(1);
        for (i, &w) in weights.iter().enumerate() {
            if pick < u64::from(w) {
                return Fault::ALL[i];
            }
            pick -= u64::from(w);
        }
        Fault::Ok
    }
}

/// Serves one connection until the client closes it or an answer ends it.
fn serve(mut stream: TcpStream, shared: &Shared, connection: u64) {
    let _ = stream.set_nodelay(true);
    let mut draw = Draw::new(shared.mix.seed, connection);
    let mut pending = Vec::new();
    let mut buf = [0_u8; 2048];
    loop {
        // One whole head (GETs only: no body to read).
        let head_end = loop {
            if let Some(end) = pending.windows(4).position(|w| w == b"\r\n\r\n") {
                break end + 4;
            }
            match stream.read(&mut buf) {
                Ok(0) | Err(_) => return,
                Ok(n) => pending.extend_from_slice(&buf[..n]),
            }
            if pending.len() > 64 * 1024 {
                return;
            }
        };
        pending.drain(..head_end);
        let fault = draw.fault(&shared.mix.weights);
        shared.requests.fetch_add(1, Ordering::SeqCst);
        let i = Fault::ALL.iter().position(|&f| f == fault).unwrap_or(0);
        shared.by_fault[i].fetch_add(1, Ordering::SeqCst);
        if !answer(&mut stream, fault, &shared.mix, &mut draw) {
            return;
        }
    }
}

/// Answers with `fault`; whether the connection stays open.
fn answer(stream: &mut TcpStream, fault: Fault, mix: &Mix, draw: &mut Draw) -> bool {
    const OK: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
    match fault {
        Fault::Ok => stream.write_all(OK).is_ok(),
        Fault::Unavailable => stream
            .write_all(b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n")
            .is_ok(),
        Fault::UnavailableRetryAfter => stream
            .write_all(
                b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 0\r\nContent-Length: 0\r\n\r\n",
            )
            .is_ok(),
        Fault::ResetBeforeHead => {
            reset(stream);
            false
        }
        Fault::ResetAfterHead => {
            let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\npart");
            // Let the head reach the client before the reset does.
            std::thread::sleep(Duration::from_millis(2));
            reset(stream);
            false
        }
        Fault::Stall => {
            std::thread::sleep(mix.stall);
            false
        }
        Fault::TrickleHead => {
            let gap = if draw.next() % 2 == 0 {
                mix.slow_trickle_gap / 20
            } else {
                mix.slow_trickle_gap
            };
            let head = b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok";
            for piece in head.chunks(4) {
                if stream.write_all(piece).is_err() {
                    return false;
                }
                std::thread::sleep(gap);
            }
            false
        }
    }
}

/// Closes with a TCP RST: SO_LINGER with a zero timeout.
fn reset(stream: &TcpStream) {
    // The stream is dropped right after, by the caller: the close sends the reset.
    let _ = socket2::SockRef::from(stream).set_linger(Some(Duration::ZERO));
}
