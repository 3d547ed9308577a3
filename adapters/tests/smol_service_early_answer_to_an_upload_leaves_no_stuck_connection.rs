//! A server may answer an upload before it has read the body (a 413, say) and keep the
//! connection open. hyper then goes on writing the body, which that server never reads: the
//! connection cannot carry another request. The next request to the same origin goes out on a
//! new connection and gets its answer, instead of waiting for the stuck one to become ready.
//! An upload the server reads in full still leaves its connection for the next request.

#![cfg(feature = "smol")]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use backstop::smol::HttpService;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use tower::ServiceExt;

/// The largest upload the server reads.
const READ_AT_MOST: usize = 1 << 20;

/// An upload far larger than what loopback's socket buffers hold unread, so that hyper is still
/// writing it when the early answer comes.
const TOO_LARGE: usize = 64 << 20;

/// How long the request after the upload may take; it takes milliseconds unless it waits on the
/// stuck connection, which never becomes ready.
const BOUND: Duration = Duration::from_secs(10);

/// A server that reads uploads of at most [`READ_AT_MOST`] bytes in full and answers them, and
/// answers a larger one at once with a 413 that keeps the connection open, reading no more of
/// it. Each request head it reads is kept with the number of its connection.
struct Server {
    origin: String,
    connections: Arc<AtomicUsize>,
    heads: Arc<Mutex<Vec<(usize, String)>>>,
    /// Refused uploads' connections stay open until this is dropped (or 30 s at most).
    _hold: mpsc::Sender<()>,
}

impl Server {
    fn start() -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
        let origin = format!("http://{}", listener.local_addr().expect("an address"));
        let connections = Arc::new(AtomicUsize::new(0));
        let heads = Arc::new(Mutex::new(Vec::new()));
        let (hold, held) = mpsc::channel::<()>();
        let held = Arc::new(Mutex::new(held));
        let (count, seen) = (connections.clone(), heads.clone());
        std::thread::spawn(move || {
            // Bounded: the tests need two connections at most.
            for stream in listener.incoming().take(2) {
                let Ok(stream) = stream else { return };
                let number = count.fetch_add(1, Ordering::SeqCst) + 1;
                let (seen, held) = (seen.clone(), held.clone());
                std::thread::spawn(move || serve(stream, number, &seen, &held));
            }
        });
        Server {
            origin,
            connections,
            heads,
            _hold: hold,
        }
    }

    fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }

    fn heads(&self) -> Vec<(usize, String)> {
        self.heads.lock().expect("not poisoned").clone()
    }
}

fn serve(
    mut stream: TcpStream,
    number: usize,
    seen: &Mutex<Vec<(usize, String)>>,
    held: &Mutex<mpsc::Receiver<()>>,
) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    while let Some(head) = read_head(&mut stream) {
        seen.lock()
            .expect("not poisoned")
            .push((number, head.clone()));
        let length = content_length(&head);
        if length > READ_AT_MOST {
            let refused = "HTTP/1.1 413 Content Too Large\r\nConnection: keep-alive\r\n\
                           Content-Length: 0\r\n\r\n";
            let _ = stream.write_all(refused.as_bytes());
            // The rest of the upload stays unread, the connection open.
            let _ = held
                .lock()
                .map(|held| held.recv_timeout(Duration::from_secs(30)));
            return;
        }
        let mut body = vec![0_u8; length];
        if stream.read_exact(&mut body).is_err() {
            return;
        }
        let ok = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
        if stream.write_all(ok.as_bytes()).is_err() {
            return;
        }
    }
}

/// One request head, or `None` when the connection ends.
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

fn content_length(head: &str) -> usize {
    head.lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse().ok())?
        })
        .unwrap_or(0)
}

fn post(url: &str, size: usize) -> http::Request<Full<Bytes>> {
    http::Request::post(url)
        .body(Full::new(Bytes::from(vec![b'x'; size])))
        .expect("a valid request")
}

fn get(url: &str) -> http::Request<Full<Bytes>> {
    http::Request::get(url)
        .body(Full::new(Bytes::new()))
        .expect("a valid request")
}

/// The status and body of `request`'s answer, or `None` if none came within [`BOUND`].
async fn answer(http: &HttpService, request: http::Request<Full<Bytes>>) -> Option<(u16, Bytes)> {
    let exchange = async {
        let response = http.clone().oneshot(request).await.expect("a response");
        let status = response.status().as_u16();
        let body = response.into_body().collect().await.expect("a body");
        Some((status, body.to_bytes()))
    };
    let bound = async {
        smol::Timer::after(BOUND).await;
        None
    };
    smol::future::or(exchange, bound).await
}

#[test]
fn the_request_after_an_upload_answered_early_goes_on_a_new_connection() {
    let server = Server::start();
    let http = HttpService::new();
    smol::block_on(async {
        let refused = answer(&http, post(&server.origin, TOO_LARGE)).await;
        assert_eq!(refused, Some((413, Bytes::new())));
        let next = answer(&http, get(&format!("{}/next", server.origin))).await;
        assert_eq!(
            next,
            Some((200, Bytes::from_static(b"ok"))),
            "the request after the refused upload had no answer within {BOUND:?}"
        );
    });
    assert_eq!(server.connections(), 2);
    let heads = server.heads();
    assert!(
        matches!(&heads[..], [(1, post), (2, get)]
            if post.starts_with("POST / ") && get.starts_with("GET /next ")),
        "{heads:?}"
    );
}

#[test]
fn the_request_after_an_upload_read_in_full_goes_on_its_connection() {
    let server = Server::start();
    let http = HttpService::new();
    smol::block_on(async {
        let uploaded = answer(&http, post(&server.origin, READ_AT_MOST)).await;
        assert_eq!(uploaded, Some((200, Bytes::from_static(b"ok"))));
        let next = answer(&http, get(&format!("{}/next", server.origin))).await;
        assert_eq!(next, Some((200, Bytes::from_static(b"ok"))));
    });
    assert_eq!(server.connections(), 1);
    assert_eq!(server.heads().len(), 2);
}
