//! A scripted HTTP/1.1 server on 127.0.0.1 for tests, benchmarks and the demo.
//!
//! Each request takes the next [`Action`] of the script (the last one repeats once the script
//! runs out): answer with any status, headers and body after an optional delay; hang until the
//! server is dropped; reset the connection after reading the request; close mid-body; or send
//! raw bytes (broken status lines, invalid UTF-8 in headers); or serve a representation with
//! byte ranges and faults at body offsets ([`Served`]). Every request is counted and its
//! head recorded, and every connection accepted is counted. Dropping the server stops it: its
//! threads end and are joined.
//!
//! [`Server::start_tls`] serves the same script over TLS (rustls, a certificate made at test
//! time: [`crate::certs`]); a connection whose handshake fails is counted, its request never
//! arrives. Over TLS, `Reset` closes the connection without answering (the client's bytes are
//! already read from the socket, so no RST).

mod conn;
mod served;

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use conn::Conn;
pub use served::{AcceptRanges, Fault, Representation, Served};

use crate::certs::ServerCert;

/// A response to send.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reply {
    status: u16,
    reason: String,
    headers: Vec<(String, Vec<u8>)>,
    body: Vec<u8>,
    delay: Duration,
}

impl Reply {
    /// A response with `status`, an empty body and a `Content-Length`.
    #[must_use]
    pub fn status(status: u16) -> Self {
        Reply {
            status,
            reason: reason(status).to_owned(),
            headers: Vec::new(),
            body: Vec::new(),
            delay: Duration::ZERO,
        }
    }

    /// Adds a header (any bytes as value).
    #[must_use]
    pub fn header(mut self, name: &str, value: impl AsRef<[u8]>) -> Self {
        self.headers
            .push((name.to_owned(), value.as_ref().to_vec()));
        self
    }

    /// Sets the body.
    #[must_use]
    pub fn body(mut self, body: impl AsRef<[u8]>) -> Self {
        self.body = body.as_ref().to_vec();
        self
    }

    /// Waits `delay` (real time) before answering.
    #[must_use]
    pub fn delay(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }

    fn head(&self) -> Vec<u8> {
        let mut out = format!("HTTP/1.1 {} {}\r\n", self.status, self.reason).into_bytes();
        for (name, value) in &self.headers {
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(b": ");
            out.extend_from_slice(value);
            out.extend_from_slice(b"\r\n");
        }
        if !self
            .headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case("content-length"))
        {
            out.extend_from_slice(format!("Content-Length: {}\r\n", self.body.len()).as_bytes());
        }
        out.extend_from_slice(b"\r\n");
        out
    }
}

/// What the server does with one request.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Action {
    /// Answer, keeping the connection open for the next request.
    Respond(Reply),
    /// Read the request and never answer; the connection stays open until the server drops.
    Hang,
    /// Read the request and never answer, until the client closes the connection (counted by
    /// [`Server::closed_by_client`]) or the server drops.
    HangUntilClosed,
    /// Read the request, then reset the connection (RST, not FIN).
    Reset,
    /// Send the head of `reply` with its full `Content-Length`, half of its body, and close.
    CloseMidBody(Reply),
    /// Send these bytes as they are, then close.
    Raw(Vec<u8>),
    /// Send `reply` one byte at a time, `gap` apart (a slow-loris server), then keep the
    /// connection for the next request.
    Trickle {
        /// The response.
        reply: Reply,
        /// The pause before each byte.
        gap: Duration,
    },
    /// Send the head of `reply` at once, then its body one byte at a time, `gap` before each
    /// (a body that trickles), then keep the connection for the next request.
    TrickleBody {
        /// The response.
        reply: Reply,
        /// The pause before each byte of the body.
        gap: Duration,
    },
    /// Close the connection without answering.
    Close,
    /// Answer from a representation: `200`, or `206`/`416` for `Range: bytes=N-`, with the
    /// request's scripted [`Fault`]; the connection is kept unless the fault ends it.
    Serve(Served),
}

impl From<Reply> for Action {
    fn from(reply: Reply) -> Self {
        Action::Respond(reply)
    }
}

/// A recorded request head (and body).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Recorded {
    /// The method.
    pub method: String,
    /// The request target (path and query).
    pub target: String,
    /// The headers, names in lower case.
    pub headers: Vec<(String, Vec<u8>)>,
    /// The body (per `Content-Length`).
    pub body: Vec<u8>,
}

impl Recorded {
    /// The first value of header `name` (case-insensitive).
    #[must_use]
    pub fn header(&self, name: &str) -> Option<&[u8]> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_slice())
    }
}

#[derive(Default)]
struct State {
    script: Mutex<Vec<Action>>,
    next: Mutex<usize>,
    recorded: Mutex<Vec<Recorded>>,
    /// Signalled (under `recorded`'s lock) when a request is recorded or a client closes a
    /// connection the server hung on.
    arrived: Condvar,
    stopped: AtomicBool,
    stop_lock: Mutex<()>,
    stop_signal: Condvar,
    streams: Mutex<Vec<(u64, TcpStream)>>,
    next_stream: std::sync::atomic::AtomicU64,
    threads: Mutex<Vec<JoinHandle<()>>>,
    connections: AtomicUsize,
    /// Connections of `HangUntilClosed` requests the client closed.
    closed_by_client: AtomicUsize,
    tls: Option<Arc<rustls::ServerConfig>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl State {
    fn next_action(&self) -> Action {
        let script = lock(&self.script);
        let mut next = lock(&self.next);
        let i = (*next).min(script.len().saturating_sub(1));
        *next += 1;
        script.get(i).cloned().unwrap_or(Action::Close)
    }

    /// Sleeps `d` unless the server stops first. Returns whether it stopped.
    fn sleep(&self, d: Duration) -> bool {
        // An unrepresentable deadline (Duration::MAX) waits for the stop alone.
        let deadline = Instant::now().checked_add(d);
        let mut guard = lock(&self.stop_lock);
        while !self.stopped.load(Ordering::SeqCst) {
            let left = deadline.map_or(Duration::from_secs(3600), |d| {
                d.saturating_duration_since(Instant::now())
            });
            if left.is_zero() {
                return false;
            }
            guard = self
                .stop_signal
                .wait_timeout(guard, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        true
    }
}

/// The server. Dropping it stops it.
pub struct Server {
    addr: SocketAddr,
    state: Arc<State>,
    accept: Option<JoinHandle<()>>,
}

impl core::fmt::Debug for Server {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Server")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl Server {
    /// Starts a server on 127.0.0.1 (a free port) that follows `script`.
    ///
    /// # Panics
    ///
    /// If no loopback port can be bound (a broken test machine).
    #[must_use]
    pub fn start(script: impl IntoIterator<Item = Action>) -> Self {
        Server::start_with(script, None)
    }

    /// Starts a server that follows `script` over TLS, presenting `cert`: its URLs are
    /// `https://127.0.0.1:PORT` (make `cert` for the name `127.0.0.1` to be trusted there).
    ///
    /// # Panics
    ///
    /// If no loopback port can be bound (a broken test machine).
    #[must_use]
    pub fn start_tls(script: impl IntoIterator<Item = Action>, cert: &ServerCert) -> Self {
        Server::start_with(script, Some(cert.server_config()))
    }

    fn start_with(
        script: impl IntoIterator<Item = Action>,
        tls: Option<Arc<rustls::ServerConfig>>,
    ) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
        let addr = listener
            .local_addr()
            .expect("a bound listener has an address");
        let state = Arc::new(State {
            tls,
            ..State::default()
        });
        *lock(&state.script) = script.into_iter().collect();
        let s = state.clone();
        let accept = std::thread::spawn(move || accept_loop(&listener, &s));
        Server {
            addr,
            state,
            accept: Some(accept),
        }
    }

    /// A server that answers every request with `action`.
    #[must_use]
    pub fn always(action: impl Into<Action>) -> Self {
        Server::start([action.into()])
    }

    /// The server's address.
    #[must_use]
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT` (`https://` for a TLS server) followed by `path_and_query`.
    #[must_use]
    pub fn url(&self, path_and_query: &str) -> String {
        let scheme = if self.state.tls.is_some() {
            "https"
        } else {
            "http"
        };
        format!("{scheme}://{}{}", self.addr, path_and_query)
    }

    /// Connections accepted so far, whether or not a request (or a TLS handshake) completed
    /// on them: requests over fewer connections were sent on reused ones.
    #[must_use]
    pub fn connections(&self) -> usize {
        self.state.connections.load(Ordering::SeqCst)
    }

    /// Connections the client closed while the server hung on their request
    /// ([`Action::HangUntilClosed`]).
    #[must_use]
    pub fn closed_by_client(&self) -> usize {
        self.state.closed_by_client.load(Ordering::SeqCst)
    }

    /// Blocks until `n` connections were closed by the client ([`Self::closed_by_client`]) or
    /// `timeout` passed; returns whether they were.
    #[must_use]
    pub fn wait_for_closed_by_client(&self, n: usize, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut recorded = lock(&self.state.recorded);
        // Bounded by `timeout`; a close is counted before the lock is taken to announce it.
        while self.closed_by_client() < n {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            recorded = self
                .state
                .arrived
                .wait_timeout(recorded, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        true
    }

    /// Requests received so far (each counted once its head arrived).
    #[must_use]
    pub fn requests(&self) -> usize {
        lock(&self.state.recorded).len()
    }

    /// The recorded requests.
    #[must_use]
    pub fn recorded(&self) -> Vec<Recorded> {
        lock(&self.state.recorded).clone()
    }

    /// Aborts `abort` from another thread as soon as `n` requests arrived (or after 10 s
    /// without them); the thread's result says whether they did.
    #[must_use]
    pub fn abort_once_requests_arrive(
        self: &Arc<Self>,
        n: usize,
        abort: &backstop::Abort,
    ) -> JoinHandle<bool> {
        let (server, abort) = (self.clone(), abort.clone());
        std::thread::spawn(move || {
            let arrived = server.wait_for_requests(n, Duration::from_secs(10));
            abort.abort();
            arrived
        })
    }

    /// Blocks until `n` requests arrived or `timeout` passed; returns whether they did.
    #[must_use]
    pub fn wait_for_requests(&self, n: usize, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut recorded = lock(&self.state.recorded);
        while recorded.len() < n {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            recorded = self
                .state
                .arrived
                .wait_timeout(recorded, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        true
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        {
            let _guard = lock(&self.state.stop_lock);
            self.state.stopped.store(true, Ordering::SeqCst);
            self.state.stop_signal.notify_all();
        }
        // Wake the accept loop, then every connection blocked in a read.
        let _ = TcpStream::connect(self.addr);
        for (_, stream) in lock(&self.state.streams).drain(..) {
            let _ = stream.shutdown(Shutdown::Both);
        }
        if let Some(accept) = self.accept.take() {
            let _ = accept.join();
        }
        let threads = core::mem::take(&mut *lock(&self.state.threads));
        for t in threads {
            let _ = t.join();
        }
    }
}

fn accept_loop(listener: &TcpListener, state: &Arc<State>) {
    for stream in listener.incoming() {
        if state.stopped.load(Ordering::SeqCst) {
            return;
        }
        let Ok(stream) = stream else { continue };
        state.connections.fetch_add(1, Ordering::SeqCst);
        let _ = stream.set_nodelay(true);
        let id = state.next_stream.fetch_add(1, Ordering::Relaxed);
        if let Ok(clone) = stream.try_clone() {
            lock(&state.streams).push((id, clone));
        }
        let s = state.clone();
        let handle = std::thread::spawn(move || {
            let conn = match &s.tls {
                None => Some(Conn::Plain(stream)),
                Some(config) => Conn::tls(stream, config.clone()),
            };
            if let Some(conn) = conn {
                serve(conn, &s);
            }
            // Drop the server's clone too, so the socket really closes (a RST when a request
            // was left unread).
            lock(&s.streams).retain(|(i, _)| *i != id);
        });
        lock(&state.threads).push(handle);
    }
}

/// The most bytes a request head may have.
const MAX_HEAD: usize = 64 * 1024;

fn serve(mut stream: Conn, state: &State) {
    // Bounded: each pass handles one request; the client or the server's drop ends it.
    loop {
        let Some((head_len, recorded, body_len)) = peek_request(&mut stream, state) else {
            return;
        };
        let action = state.next_action();
        if action == Action::Reset {
            // The request stays unread in the socket: closing now sends a RST.
            record(state, recorded);
            return;
        }
        let mut buf = vec![0; head_len + body_len];
        if stream.read_exact(&mut buf).is_err() {
            return;
        }
        let mut recorded = recorded;
        recorded.body = buf[head_len..].to_vec();
        // A served representation answers from the request's head, after it is recorded.
        record(state, recorded.clone());
        match action {
            Action::Respond(reply) => {
                if state.sleep(reply.delay) {
                    return;
                }
                let mut out = reply.head();
                out.extend_from_slice(&reply.body);
                if stream.write_all(&out).is_err() {
                    return;
                }
            }
            Action::Hang => {
                state.sleep(Duration::MAX);
                return;
            }
            Action::HangUntilClosed => {
                // Blocks until the client closes (0 bytes, or a reset) or the server's drop
                // shuts the stream down; more bytes would be a pipelined request, not a close.
                let mut byte = [0; 1];
                let closed = matches!(stream.read(&mut byte), Ok(0) | Err(_));
                if closed && !state.stopped.load(Ordering::SeqCst) {
                    state.closed_by_client.fetch_add(1, Ordering::SeqCst);
                    // Wakes `wait_for_closed_by_client`, which waits on the requests' lock.
                    let _recorded = lock(&state.recorded);
                    state.arrived.notify_all();
                }
                return;
            }
            Action::Trickle { reply, gap } => {
                let mut out = reply.head();
                out.extend_from_slice(&reply.body);
                for byte in out {
                    if state.sleep(gap) || stream.write_all(&[byte]).is_err() {
                        return;
                    }
                }
            }
            Action::TrickleBody { reply, gap } => {
                if stream.write_all(&reply.head()).is_err() {
                    return;
                }
                for &byte in &reply.body {
                    if state.sleep(gap) || stream.write_all(&[byte]).is_err() {
                        return;
                    }
                }
            }
            Action::CloseMidBody(reply) => {
                let mut out = reply.head();
                out.extend_from_slice(&reply.body[..reply.body.len() / 2]);
                let _ = stream.write_all(&out);
                stream.shutdown();
                return;
            }
            Action::Serve(served) => {
                if !served.respond(&recorded, &mut stream, state) {
                    return;
                }
            }
            Action::Raw(bytes) => {
                let _ = stream.write_all(&bytes);
                stream.shutdown();
                return;
            }
            Action::Close | Action::Reset => {
                stream.shutdown();
                return;
            }
        }
    }
}

fn record(state: &State, recorded: Recorded) {
    lock(&state.recorded).push(recorded);
    state.arrived.notify_all();
}

/// Peeks at the next request head without consuming it: its length, its parsed head, and its
/// body length. `None` when the connection closed or the server stopped.
fn peek_request(stream: &mut Conn, state: &State) -> Option<(usize, Recorded, usize)> {
    let mut buf = vec![0; MAX_HEAD];
    // Bounded: a partial head is peeked again at most this many times (1 ms apart).
    for _ in 0..5_000 {
        if state.stopped.load(Ordering::SeqCst) {
            return None;
        }
        let n = stream.peek(&mut buf).ok()?;
        if n == 0 {
            return None;
        }
        if let Some(end) = find(&buf[..n], b"\r\n\r\n") {
            let head_len = end + 4;
            let recorded = parse_head(&buf[..end])?;
            let body_len = recorded
                .header("content-length")
                .and_then(|v| std::str::from_utf8(v).ok())
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0);
            return Some((head_len, recorded, body_len));
        }
        if n == buf.len() {
            return None;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    None
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn parse_head(head: &[u8]) -> Option<Recorded> {
    let mut lines = head
        .split(|&b| b == b'\n')
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l));
    let request_line = String::from_utf8_lossy(lines.next()?).into_owned();
    let mut parts = request_line.split(' ');
    let method = parts.next()?.to_owned();
    let target = parts.next()?.to_owned();
    let headers = lines
        .filter_map(|line| {
            let colon = line.iter().position(|&b| b == b':')?;
            let name = String::from_utf8_lossy(&line[..colon]).to_ascii_lowercase();
            let value = line[colon + 1..].trim_ascii().to_vec();
            Some((name, value))
        })
        .collect();
    Some(Recorded {
        method,
        target,
        headers,
        body: Vec::new(),
    })
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        201 => "Created",
        204 => "No Content",
        206 => "Partial Content",
        400 => "Bad Request",
        404 => "Not Found",
        408 => "Request Timeout",
        416 => "Range Not Satisfiable",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Status",
    }
}

/// A port on 127.0.0.1 where nothing listens (bound, then released): connecting is refused.
///
/// # Panics
///
/// If no loopback port can be bound.
#[must_use]
pub fn refused_url(path: &str) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
    let addr = listener
        .local_addr()
        .expect("a bound listener has an address");
    drop(listener);
    format!("http://{addr}{path}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(addr: SocketAddr) -> Vec<u8> {
        let mut s = TcpStream::connect(addr).expect("connect");
        s.write_all(b"GET /x?y=1 HTTP/1.1\r\nHost: a\r\nAuthorization: secret\r\n\r\n")
            .expect("write");
        let _ = s.shutdown(Shutdown::Write);
        let mut out = Vec::new();
        let _ = s.read_to_end(&mut out);
        out
    }

    #[test]
    fn server_answers_the_script_in_order_then_repeats_the_last_action() {
        let server = Server::start([
            Reply::status(503).header("Retry-After", "1").into(),
            Reply::status(200).body("ok").into(),
        ]);
        assert!(String::from_utf8_lossy(&get(server.addr())).starts_with("HTTP/1.1 503"));
        for _ in 0..2 {
            let answer = String::from_utf8_lossy(&get(server.addr())).into_owned();
            assert!(
                answer.starts_with("HTTP/1.1 200") && answer.ends_with("ok"),
                "{answer}"
            );
        }
        assert_eq!(server.requests(), 3);
        let first = &server.recorded()[0];
        assert_eq!(
            (first.method.as_str(), first.target.as_str()),
            ("GET", "/x?y=1")
        );
        assert_eq!(first.header("authorization"), Some(&b"secret"[..]));
    }

    #[test]
    fn reset_closes_with_an_error_not_an_answer() {
        let server = Server::always(Action::Reset);
        let mut s = TcpStream::connect(server.addr()).expect("connect");
        s.write_all(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n")
            .expect("write");
        let mut out = Vec::new();
        let result = s.read_to_end(&mut out);
        assert!(out.is_empty());
        assert_eq!(
            result.map_err(|e| e.kind()).err(),
            Some(std::io::ErrorKind::ConnectionReset)
        );
        assert_eq!(server.requests(), 1);
    }

    #[test]
    fn trickled_and_raw_answers_arrive_whole() {
        let server = Server::start([
            Action::Trickle {
                reply: Reply::status(200).body("slow"),
                gap: Duration::from_micros(100),
            },
            Action::Raw(b"HTTP/1.1 2OO \xff\r\n\r\n".to_vec()),
        ]);
        let answer = String::from_utf8_lossy(&get(server.addr())).into_owned();
        assert!(
            answer.starts_with("HTTP/1.1 200") && answer.ends_with("slow"),
            "{answer}"
        );
        assert_eq!(get(server.addr()), b"HTTP/1.1 2OO \xff\r\n\r\n");
    }

    #[test]
    fn connections_are_counted_apart_from_requests() {
        let server = Server::always(Reply::status(204));
        let mut kept = TcpStream::connect(server.addr()).expect("connect");
        for _ in 0..2 {
            kept.write_all(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n")
                .expect("write");
            let mut answer = [0; 64];
            let n = kept.read(&mut answer).expect("read");
            assert!(answer[..n].starts_with(b"HTTP/1.1 204"));
        }
        let _ = get(server.addr());
        assert!(server.wait_for_requests(3, Duration::from_secs(5)));
        assert_eq!((server.requests(), server.connections()), (3, 2));
    }

    #[test]
    fn dropping_a_server_with_a_hanging_request_returns() {
        let server = Server::always(Action::Hang);
        let addr = server.addr();
        let client = std::thread::spawn(move || get(addr));
        assert!(server.wait_for_requests(1, Duration::from_secs(5)));
        drop(server);
        assert!(client.join().expect("client thread").is_empty());
    }
}
