//! What a resume after a reset costs on loopback, in wall time, side by side in one run: the
//! medians of (a) a clean 1 MiB GET through `backstop::ureq` with `resume_bodies`, (b) the same
//! GET whose body the server resets after 512 KiB (the client resumes), and (c) one request
//! on a new connection for a single byte (`Range: bytes=1048575-`, the last byte), by a client that has sent one
//! already (as the resuming client has): a connect and a round trip.
//! The resume's cost is (b) − (a), to compare with (c).
//!
//! ```sh
//! cargo run --release -p backstop-tests --example resume_latency
//! ```

use std::io::Read;
use std::time::{Duration, Instant};

use backstop::Retrier;
use backstop_tests::server::{Action, Fault, Representation, Served, Server};

const LEN: usize = 1 << 20;
const RUNS: usize = 41;

fn content() -> Vec<u8> {
    (0..LEN).map(|i| (i % 251) as u8).collect()
}

/// One GET of `url` through a new client, its body read whole: how long it took.
fn download(url: &str) -> Duration {
    let client = backstop::ureq::Client::new(Retrier::default().seed(7)).resume_bodies();
    // The client is made before the clock starts: only the exchange is timed.
    let started = Instant::now();
    let done = client
        .run(http::Request::get(url).body(()).expect("a request"))
        .expect("a response");
    let mut body = Vec::with_capacity(LEN);
    done.response
        .into_body()
        .into_reader()
        .read_to_end(&mut body)
        .expect("the whole body");
    let took = started.elapsed();
    assert_eq!(body.len(), LEN);
    took
}

/// One request for a single byte on a new connection, through a client that has made a
/// request already (to `warm`, another server), as the resume's client has.
fn one_byte(url: &str, warm: &str) -> Duration {
    let client = backstop::ureq::Client::new(Retrier::default().seed(7));
    let first = http::Request::get(warm).body(()).expect("a request");
    let _ = client
        .run(first)
        .expect("a response")
        .response
        .body_mut()
        .read_to_vec();
    let request = http::Request::get(url)
        .header("Range", "bytes=1048575-")
        .body(())
        .expect("a request");
    let started = Instant::now();
    let mut response = client.run(request).expect("a response").response;
    let _ = response.body_mut().read_to_vec().expect("a byte");
    started.elapsed()
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn main() {
    let served = |faults: Vec<Fault>| {
        let representation = Representation::new(content()).strong_etag("v1");
        Server::always(Action::Serve(Served::new(representation).faults(faults)))
    };
    let (mut clean, mut resumed, mut trip) = (Vec::new(), Vec::new(), Vec::new());
    // Interleaved, each on a new server and a new client: no way always runs first or warm.
    for _ in 0..RUNS {
        let server = served(Vec::new());
        clean.push(download(&server.url("/file")));
        let server = served(vec![Fault::ResetAt(LEN / 2)]);
        resumed.push(download(&server.url("/file")));
        assert_eq!(server.requests(), 2, "one resume");
        let server = served(Vec::new());
        let warm = served(Vec::new());
        trip.push(one_byte(&server.url("/file"), &warm.url("/file")));
    }
    let (a, b, c) = (median(clean), median(resumed), median(trip));
    println!("clean 1 MiB GET:                 {a:?}");
    println!("the same, reset at 512 KiB:      {b:?}");
    println!("the resume's cost (b - a):       {:?}", b.saturating_sub(a));
    println!("one byte on a new connection:    {c:?}");
}
