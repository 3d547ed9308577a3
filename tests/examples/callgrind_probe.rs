//! The instruction-count probe behind the ureq adapter overhead figures in docs/PERFORMANCE.md.
//!
//! Wall-clock medians on a shared machine move by microseconds; instruction counts do not.
//! This program does N GETs in one of the ways against a loopback server in another process,
//! and `tests/benches/callgrind.sh` runs it under `valgrind --tool=callgrind` at 200 and 1,200
//! GETs: the difference divided by 1,000 is the count per GET, start-up excluded.
//!
//! ```sh
//! cargo build --release -p backstop-tests --example callgrind_probe
//! tests/benches/callgrind.sh                 # bare, same, adapter, abort
//! ```
//!
//! Modes: `serve` (print the address, answer every request with 200 "ok"; `serve64k`: with a
//! 64 KiB body, for `SERVE=serve64k tests/benches/callgrind.sh same adapter read`; `serve1m`:
//! 1 MiB, for `SERVE=serve1m tests/benches/callgrind.sh "same adapter resume"`), or one of the
//! [`Way`]s of `backstop_tests::overhead` by name: `bare`, `same` (ureq with the adapter's
//! timeouts, called as the adapter calls it), `adapter`, `abort`.

use std::io::{Read, Write};

use backstop_tests::overhead::{Getters, Way};

fn serve(body_len: usize) {
    // A strong validator: a resumable body (`resume`) wraps it; the other ways ignore it.
    let mut answer =
        format!("HTTP/1.1 200 OK\r\nContent-Length: {body_len}\r\nETag: \"v1\"\r\n\r\n")
            .into_bytes();
    answer.extend((0..body_len).map(|i| b"ok"[i % 2]));
    let answer: std::sync::Arc<[u8]> = answer.into();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind loopback");
    println!("{}", listener.local_addr().expect("address"));
    std::io::stdout().flush().expect("stdout");
    for stream in listener.incoming() {
        let Ok(mut s) = stream else { continue };
        let _ = s.set_nodelay(true);
        let answer = answer.clone();
        std::thread::spawn(move || {
            let mut pending = Vec::new();
            let mut buf = [0u8; 4096];
            loop {
                match s.read(&mut buf) {
                    Ok(0) | Err(_) => return,
                    Ok(n) => {
                        pending.extend_from_slice(&buf[..n]);
                        while let Some(end) = pending.windows(4).position(|w| w == b"\r\n\r\n") {
                            pending.drain(..end + 4);
                            if s.write_all(&answer).is_err() {
                                return;
                            }
                        }
                    }
                }
            }
        });
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: callgrind_probe serve | (bare|same|adapter|abort) N ADDR";
    let mode = args.get(1).expect(usage).as_str();
    if mode == "serve" {
        return serve(2);
    }
    if mode == "serve1m" {
        return serve(1 << 20);
    }
    if mode == "serve64k" {
        return serve(64 * 1024);
    }
    let way = Way::from_name(mode).expect(usage);
    let n: usize = args.get(2).and_then(|n| n.parse().ok()).expect(usage);
    let url = format!("http://{}/fast", args.get(3).expect(usage));
    let getters = Getters::new();
    // Warm the connection pool and the code paths first.
    for _ in 0..50 + n {
        getters.get(way, &url).expect("a GET to the probe server");
    }
}
