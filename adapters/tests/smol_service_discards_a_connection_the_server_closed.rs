//! A pooled connection the server closed while it was idle (its keep-alive time-out, say) is
//! discarded, not used: the next request goes on a new connection and gets its answer.

#![cfg(feature = "smol")]

use std::io::{Read, Write};
use std::time::Duration;

use backstop::smol::HttpService;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use tower::ServiceExt;

/// A server that answers one request per connection, then closes it without saying so in the
/// response (no `Connection: close`): the client keeps the connection as idle. Two
/// connections at most.
fn closing_server() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a loopback port");
    let url = format!("http://{}/", listener.local_addr().expect("an address"));
    std::thread::spawn(move || {
        for stream in listener.incoming().take(2) {
            let Ok(mut stream) = stream else { return };
            let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
            let _ = stream.read(&mut [0; 4096]);
            let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
        }
    });
    url
}

#[test]
fn a_connection_closed_while_idle_is_replaced_by_a_new_one() {
    let url = closing_server();
    let http = HttpService::new();
    let get = || {
        http::Request::get(&url)
            .body(Full::new(Bytes::new()))
            .expect("a valid request")
    };
    smol::block_on(async {
        for _ in 0..2 {
            let response = http.clone().oneshot(get()).await.expect("a response");
            let body = response.into_body().collect().await.expect("a body");
            assert_eq!(&body.to_bytes()[..], b"ok");
            // Time for hyper's connection task to read the server's close.
            smol::Timer::after(Duration::from_millis(100)).await;
        }
    });
}
