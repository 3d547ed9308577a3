//! A scripted HTTP/1 server on loopback for the smol service's tests: it answers each request
//! it reads with the next answer of its script, on whichever connection the request came, and
//! counts the connections it accepted and the requests it read.
//!
//! Bounded: it accepts at most one connection per answer, and a connection thread waits at
//! most five seconds for its next request; no external network.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The server's address and what it has seen.
pub struct Loopback {
    /// `http://127.0.0.1:PORT`.
    pub origin: String,
    connections: Arc<AtomicUsize>,
    heads: Arc<Mutex<Vec<String>>>,
}

impl Loopback {
    /// A server that answers with `answers` (whole HTTP/1 responses), in order.
    pub fn start(answers: &'static [&'static str]) -> Loopback {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
        let origin = format!("http://{}", listener.local_addr().expect("an address"));
        let script = Arc::new(Mutex::new(answers.iter()));
        let connections = Arc::new(AtomicUsize::new(0));
        let heads = Arc::new(Mutex::new(Vec::new()));
        let (count, seen, most) = (connections.clone(), heads.clone(), answers.len());
        std::thread::spawn(move || {
            for stream in listener.incoming().take(most) {
                let Ok(stream) = stream else { return };
                count.fetch_add(1, Ordering::SeqCst);
                let (script, seen) = (script.clone(), seen.clone());
                std::thread::spawn(move || serve(stream, &script, &seen));
            }
        });
        Loopback {
            origin,
            connections,
            heads,
        }
    }

    /// The connections accepted so far.
    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }

    /// The request heads read so far, in order.
    pub fn heads(&self) -> Vec<String> {
        self.heads.lock().expect("not poisoned").clone()
    }
}

/// Answers the requests of one connection until the script ends, the client closes, or no
/// request comes for five seconds.
fn serve(
    mut stream: TcpStream,
    script: &Mutex<core::slice::Iter<'static, &'static str>>,
    seen: &Mutex<Vec<String>>,
) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    while let Some(head) = read_head(&mut stream) {
        seen.lock().expect("not poisoned").push(head);
        let Some(answer) = script.lock().expect("not poisoned").next().copied() else {
            return;
        };
        if stream.write_all(answer.as_bytes()).is_err() {
            return;
        }
    }
}

/// One request head (the tests' requests have no body), or `None` when the connection ends.
fn read_head(stream: &mut TcpStream) -> Option<String> {
    let mut head = Vec::new();
    let mut byte = [0_u8; 1];
    // Bounded: a head longer than 16 KiB ends the connection.
    while !head.ends_with(b"\r\n\r\n") && head.len() < 16 * 1024 {
        match stream.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            _ => return None,
        }
    }
    String::from_utf8(head).ok()
}
