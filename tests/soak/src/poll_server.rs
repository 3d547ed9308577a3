//! The server of the per-request benches (`benches/per_request.rs`, `benches/reqwest_probe.rs`).

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// A one-thread, busy-polling HTTP/1.1 server: every connection is served by the same thread,
/// so neither side of a comparison gets a luckier server thread. `/seq/...` paths answer 503
/// (`Retry-After: 0`), 503, 200 in turn; `/64k` 200 with a 64 KiB body; `/1m` 200 with 1 MiB and a strong `ETag`; every other path 200
/// ("ok").
pub struct PollServer {
    /// Where it listens.
    pub addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl PollServer {
    /// Starts the server thread on a free loopback port.
    ///
    /// # Panics
    ///
    /// When no port can be bound.
    #[must_use]
    pub fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        // Named, so that a profile tells its samples from the client's.
        let thread = std::thread::Builder::new()
            .name("poll-server".into())
            .spawn(move || serve(&listener, &flag))
            .unwrap();
        PollServer {
            addr,
            stop,
            thread: Some(thread),
        }
    }
}

fn serve(listener: &TcpListener, stop: &AtomicBool) {
    const OK: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
    const UNAVAILABLE: &[u8] =
        b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 0\r\nContent-Length: 0\r\n\r\n";
    let mut ok_64k = b"HTTP/1.1 200 OK\r\nContent-Length: 65536\r\n\r\n".to_vec();
    ok_64k.extend((0..65_536).map(|i| b"ok"[i % 2]));
    // A body a resumable client wraps: a strong validator and a length.
    let mut ok_1m = b"HTTP/1.1 200 OK\r\nContent-Length: 1048576\r\nETag: \"v1\"\r\n\r\n".to_vec();
    ok_1m.extend((0..1 << 20).map(|i| b"ok"[i % 2]));
    let mut conns: Vec<(TcpStream, Vec<u8>)> = Vec::new();
    let mut sequences: HashMap<Vec<u8>, u64> = HashMap::new();
    let mut buf = [0_u8; 4096];
    while !stop.load(Ordering::Relaxed) {
        while let Ok((s, _)) = listener.accept() {
            s.set_nonblocking(true).unwrap();
            s.set_nodelay(true).unwrap();
            conns.push((s, Vec::new()));
        }
        conns.retain_mut(|(s, pending)| match s.read(&mut buf) {
            Ok(0) => false,
            Ok(n) => {
                pending.extend_from_slice(&buf[..n]);
                while let Some(end) = pending.windows(4).position(|w| w == b"\r\n\r\n") {
                    let path: Vec<u8> = pending
                        .split(|&b| b == b' ')
                        .nth(1)
                        .unwrap_or_default()
                        .to_vec();
                    pending.drain(..end + 4);
                    let answer = if path.starts_with(b"/seq/") {
                        let n = sequences.entry(path).or_default();
                        *n += 1;
                        if *n % 3 == 0 {
                            OK
                        } else {
                            UNAVAILABLE
                        }
                    } else if path == b"/64k" {
                        ok_64k.as_slice()
                    } else if path == b"/1m" {
                        ok_1m.as_slice()
                    } else {
                        OK
                    };
                    // A 64 KiB answer can outgrow the socket's buffer: written blocking.
                    let large = answer.len() > buf.len();
                    if large && s.set_nonblocking(false).is_err() {
                        return false;
                    }
                    if s.write_all(answer).is_err() {
                        return false;
                    }
                    if large && s.set_nonblocking(true).is_err() {
                        return false;
                    }
                }
                true
            }
            Err(e) => e.kind() == std::io::ErrorKind::WouldBlock,
        });
    }
}

impl Drop for PollServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            t.join().unwrap();
        }
    }
}
