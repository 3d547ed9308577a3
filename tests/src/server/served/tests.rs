//! The served representation against a raw client on loopback (and ureq where a real client's
//! view matters): status, range fields, validators, and how each fault ends the body.

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, SystemTime};

use super::super::{Action, Server};
use super::*;

/// A hundred distinct bytes, so a slice's offset shows in its content.
fn hundred() -> Vec<u8> {
    (0..100).collect()
}

/// How a body read ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum End {
    /// All `Content-Length` bytes arrived.
    Whole,
    /// The connection closed first.
    Eof,
    /// A read failed first.
    Error(ErrorKind),
}

/// One answer as the raw client read it.
#[derive(Debug)]
struct Got {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    end: End,
}

impl Got {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    fn content_length(&self) -> usize {
        self.header("content-length")
            .and_then(|v| v.parse().ok())
            .expect("a Content-Length")
    }
}

/// A raw HTTP/1.1 client connection.
struct Client {
    stream: TcpStream,
    /// Bytes read past the last answer.
    unread: Vec<u8>,
}

impl Client {
    fn connect(server: &Server) -> Self {
        let stream = TcpStream::connect(server.addr()).expect("connect");
        // A guard against a hang, not an assertion: no test waits this long when it passes.
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .expect("a read timeout");
        Client {
            stream,
            unread: Vec::new(),
        }
    }

    /// Sends `method /r` with `headers`, and reads the answer's head and its body (up to its
    /// `Content-Length`, none for a HEAD).
    fn send(&mut self, method: &str, headers: &[(&str, &str)]) -> Got {
        self.send_reading(method, headers, usize::MAX)
    }

    /// [`Self::send`], reading at most `limit` bytes of the body.
    fn send_reading(&mut self, method: &str, headers: &[(&str, &str)], limit: usize) -> Got {
        let mut request = format!("{method} /r HTTP/1.1\r\nHost: a\r\n");
        for (name, value) in headers {
            request.push_str(&format!("{name}: {value}\r\n"));
        }
        request.push_str("\r\n");
        self.stream
            .write_all(request.as_bytes())
            .expect("write the request");
        let head = self.read_head();
        let text = String::from_utf8(head).expect("a UTF-8 head");
        let mut lines = text.split("\r\n");
        let status = lines
            .next()
            .and_then(|l| l.split(' ').nth(1))
            .and_then(|s| s.parse().ok())
            .expect("a status line");
        let headers = lines
            .filter_map(|l| l.split_once(": "))
            .map(|(n, v)| (n.to_owned(), v.to_owned()))
            .collect();
        let mut got = Got {
            status,
            headers,
            body: Vec::new(),
            end: End::Whole,
        };
        let want = if method == "HEAD" {
            0
        } else {
            got.content_length().min(limit)
        };
        (got.body, got.end) = self.read_body(want);
        got
    }

    fn read_head(&mut self) -> Vec<u8> {
        // Bounded: each pass reads at least a byte, and a head is far shorter than this.
        for _ in 0..10_000 {
            if let Some(end) = self.unread.windows(4).position(|w| w == b"\r\n\r\n") {
                let rest = self.unread.split_off(end + 4);
                return core::mem::replace(&mut self.unread, rest);
            }
            let mut buf = [0; 4096];
            match self.stream.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => self.unread.extend_from_slice(&buf[..n]),
            }
        }
        panic!(
            "no answer head in {:?}",
            String::from_utf8_lossy(&self.unread)
        );
    }

    fn read_body(&mut self, want: usize) -> (Vec<u8>, End) {
        let mut body = core::mem::take(&mut self.unread);
        if body.len() > want {
            self.unread = body.split_off(want);
        }
        // Bounded: each pass reads at least a byte of at most `want`.
        while body.len() < want {
            let mut buf = vec![0; want - body.len()];
            match self.stream.read(&mut buf) {
                Ok(0) => return (body, End::Eof),
                Ok(n) => body.extend_from_slice(&buf[..n]),
                Err(e) => return (body, End::Error(e.kind())),
            }
        }
        (body, End::Whole)
    }

    /// What follows the last answer: `Ok(0)` for a close.
    fn read_more(&mut self) -> std::io::Result<usize> {
        self.stream.read(&mut [0; 64])
    }
}

fn serve(served: Served) -> Server {
    Server::always(Action::Serve(served))
}

fn get(server: &Server, headers: &[(&str, &str)]) -> Got {
    Client::connect(server).send("GET", headers)
}

#[test]
fn a_plain_get_gets_200_and_the_whole_representation_with_its_validators() {
    let modified = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    let server = serve(
        Served::new(
            Representation::new(hundred())
                .strong_etag("v1")
                .last_modified(modified),
        )
        .date(modified + Duration::from_secs(60))
        .header("Cache-Control", "no-cache"),
    );
    let mut client = Client::connect(&server);
    for _ in 0..2 {
        let got = client.send("GET", &[]);
        assert_eq!((got.status, got.end), (200, End::Whole));
        assert_eq!(got.body, hundred());
        assert_eq!(got.header("content-length"), Some("100"));
        assert_eq!(got.header("etag"), Some("\"v1\""));
        assert_eq!(
            got.header("last-modified"),
            Some("Tue, 14 Nov 2023 22:13:20 GMT")
        );
        assert_eq!(got.header("date"), Some("Tue, 14 Nov 2023 22:14:20 GMT"));
        assert_eq!(got.header("accept-ranges"), Some("bytes"));
        assert_eq!(got.header("cache-control"), Some("no-cache"));
        assert_eq!(got.header("content-range"), None);
    }
    assert_eq!((server.requests(), server.connections()), (2, 1));
}

#[test]
fn a_range_with_a_matching_if_range_gets_206_from_the_offset() {
    let modified = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    let representation = Representation::new(hundred())
        .strong_etag("v1")
        .last_modified(modified);
    let server = serve(Served::new(representation));
    let date = httpdate::fmt_http_date(modified);
    for if_range in [Some("\"v1\""), Some(date.as_str()), None] {
        let mut headers = vec![("Range", "bytes=10-")];
        headers.extend(if_range.map(|v| ("If-Range", v)));
        let got = get(&server, &headers);
        assert_eq!((got.status, &got.end), (206, &End::Whole), "{if_range:?}");
        assert_eq!(got.header("content-range"), Some("bytes 10-99/100"));
        assert_eq!(got.header("content-length"), Some("90"));
        assert_eq!(got.body, hundred()[10..]);
    }
    let first = &server.recorded()[0];
    assert_eq!(first.header("range"), Some(&b"bytes=10-"[..]));
    assert_eq!(first.header("if-range"), Some(&b"\"v1\""[..]));
}

#[test]
fn an_if_range_that_does_not_match_gets_200_and_the_whole_representation() {
    let modified = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    let strong = serve(Served::new(
        Representation::new(hundred())
            .strong_etag("v1")
            .last_modified(modified),
    ));
    let other_date = httpdate::fmt_http_date(modified + Duration::from_secs(1));
    // Another tag, a weak one (strong comparison fails), another date, not a validator.
    for if_range in ["\"v0\"", "W/\"v1\"", other_date.as_str(), "v1"] {
        let got = get(&strong, &[("Range", "bytes=10-"), ("If-Range", if_range)]);
        assert_eq!((got.status, &got.body), (200, &hundred()), "{if_range}");
        assert_eq!(got.header("content-range"), None);
    }
    let weak = serve(Served::new(Representation::new(hundred()).weak_etag("v1")));
    let got = get(&weak, &[("Range", "bytes=10-"), ("If-Range", "W/\"v1\"")]);
    assert_eq!((got.status, got.header("etag")), (200, Some("W/\"v1\"")));
}

#[test]
fn a_range_from_the_end_or_past_it_gets_416_with_the_length() {
    let server = serve(Served::new(
        Representation::new(hundred()).strong_etag("v1"),
    ));
    for range in ["bytes=100-", "bytes=5000-"] {
        let got = get(&server, &[("Range", range), ("If-Range", "\"v1\"")]);
        assert_eq!((got.status, got.end), (416, End::Whole), "{range}");
        assert_eq!(got.header("content-range"), Some("bytes */100"));
        assert_eq!(got.content_length(), 0);
    }
}

#[test]
fn range_forms_other_than_bytes_from_n_get_200() {
    let server = serve(Served::new(Representation::new(hundred())));
    for range in [
        "bytes=0-9",
        "bytes=-5",
        "bytes=1-,5-",
        "items=3-",
        "bytes=x-",
    ] {
        let got = get(&server, &[("Range", range)]);
        assert_eq!((got.status, &got.body), (200, &hundred()), "{range}");
    }
    let got = get(&server, &[("Range", "Bytes=3-")]);
    assert_eq!((got.status, got.body.len()), (206, 97));
}

#[test]
fn a_reset_at_n_sends_n_body_bytes_then_an_error() {
    let body = vec![b'r'; 64 * 1024];
    let server =
        serve(Served::new(Representation::new(body.clone())).faults([Fault::ResetAt(1000)]));
    let got = get(&server, &[]);
    assert_eq!((got.status, got.content_length()), (200, body.len()));
    assert_eq!(got.body, body[..1000]);
    assert_eq!(got.end, End::Error(ErrorKind::ConnectionReset));
    // Past the script, the same representation is served whole.
    assert_eq!(get(&server, &[]).body, body);
}

#[test]
fn a_real_client_reading_a_reset_body_gets_n_bytes_then_an_error() {
    let server = serve(Served::new(Representation::new(hundred())).faults([Fault::ResetAt(40)]));
    let mut response = ureq::get(server.url("/r")).call().expect("a head");
    let mut reader = response.body_mut().as_reader();
    let mut got = Vec::new();
    let mut buf = [0; 16];
    // Bounded: each pass reads at least a byte of at most a hundred, or ends.
    let error = loop {
        match reader.read(&mut buf) {
            Ok(0) => break None,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) => break Some(e),
        }
    };
    assert_eq!(got, hundred()[..40]);
    assert!(
        error.is_some(),
        "the body ended cleanly at {} bytes",
        got.len()
    );
}

#[test]
fn a_close_at_n_ends_the_body_short_of_its_content_length() {
    let server = serve(Served::new(Representation::new(hundred())).faults([Fault::CloseAt(30)]));
    let mut client = Client::connect(&server);
    let got = client.send("GET", &[]);
    assert_eq!((got.content_length(), got.end), (100, End::Eof));
    assert_eq!(got.body, hundred()[..30]);
}

#[test]
fn a_stall_sends_n_bytes_then_nothing_then_closes() {
    let served = Served::new(Representation::new(hundred())).faults([
        Fault::StallAt(25, Duration::from_millis(50)),
        Fault::StallAt(25, Duration::from_secs(2)),
    ]);
    let server = serve(served.clone());
    let got = get(&server, &[]);
    assert_eq!((got.body.as_slice(), got.end), (&hundred()[..25], End::Eof));
    // A stall ends when the server is dropped: the close follows the drop, not the 2 s.
    let mut client = Client::connect(&server);
    let got = client.send_reading("GET", &[], 25);
    assert_eq!(got.body, hundred()[..25]);
    drop(server);
    assert!(matches!(client.read_more(), Ok(0) | Err(_)));
    assert_eq!(served.answered(), 2);
}

#[test]
fn a_resumed_request_after_a_new_version_gets_200_and_the_new_representation() {
    let v2: Vec<u8> = (100..=255).collect();
    let served = Served::new(Representation::new(hundred()).strong_etag("v1"))
        .faults([Fault::ResetAt(50)])
        .new_version_from(2, Representation::new(v2.clone()).strong_etag("v2"));
    let server = serve(served);
    let first = get(&server, &[]);
    assert_eq!(
        (first.body.len(), first.header("etag")),
        (50, Some("\"v1\""))
    );
    let resumed = get(&server, &[("Range", "bytes=50-"), ("If-Range", "\"v1\"")]);
    assert_eq!(
        (resumed.status, resumed.header("etag")),
        (200, Some("\"v2\""))
    );
    assert_eq!(resumed.body, v2);
    let ranged = get(&server, &[("Range", "bytes=50-"), ("If-Range", "\"v2\"")]);
    assert_eq!((ranged.status, ranged.body), (206, v2[50..].to_vec()));
}

#[test]
fn range_faults_answer_a_range_request_wrongly() {
    let served = Served::new(Representation::new(hundred()).strong_etag("v1")).faults([
        Fault::WrongContentRange,
        Fault::IgnoreRange,
        Fault::Always416,
        Fault::None,
    ]);
    let server = serve(served);
    let range = [("Range", "bytes=10-"), ("If-Range", "\"v1\"")];
    let wrong = get(&server, &range);
    assert_eq!(
        (wrong.status, wrong.header("content-range")),
        (206, Some("bytes 9-99/100"))
    );
    assert_eq!(wrong.body, hundred()[9..]);
    let ignored = get(&server, &range);
    assert_eq!((ignored.status, ignored.body), (200, hundred()));
    let refused = get(&server, &[]);
    assert_eq!(
        (refused.status, refused.header("content-range")),
        (416, Some("bytes */100"))
    );
    assert_eq!(get(&server, &range).status, 206);
}

#[test]
fn accept_ranges_none_ignores_ranges_and_absent_still_honours_them() {
    let none = serve(Served::new(Representation::new(hundred())).accept_ranges(AcceptRanges::None));
    let got = get(&none, &[("Range", "bytes=10-")]);
    assert_eq!(
        (got.status, got.header("accept-ranges")),
        (200, Some("none"))
    );
    let absent =
        serve(Served::new(Representation::new(hundred())).accept_ranges(AcceptRanges::Absent));
    let got = get(&absent, &[("Range", "bytes=10-")]);
    assert_eq!((got.status, got.header("accept-ranges")), (206, None));
}

#[test]
fn a_gzip_representation_decodes_to_the_original_whole_or_resumed() {
    let text = "a line of text that repeats\n".repeat(200).into_bytes();
    let representation = Representation::new(text.clone()).gzip().strong_etag("gz");
    let encoded = representation.body().clone();
    assert_ne!(encoded.as_ref(), text.as_slice());
    let server = serve(Served::new(representation));
    let whole = get(&server, &[("Accept-Encoding", "gzip")]);
    assert_eq!(whole.header("content-encoding"), Some("gzip"));
    assert_eq!(whole.content_length(), encoded.len());
    assert_eq!(gunzip(&whole.body), text);
    // The range counts encoded bytes: the first 20 and the rest decode together.
    let rest = get(&server, &[("Range", "bytes=20-"), ("If-Range", "\"gz\"")]);
    assert_eq!(
        (rest.status, rest.header("content-encoding")),
        (206, Some("gzip"))
    );
    let resumed = [&whole.body[..20], rest.body.as_slice()].concat();
    assert_eq!(gunzip(&resumed), text);
}

fn gunzip(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(bytes)
        .read_to_end(&mut out)
        .expect("valid gzip");
    out
}

#[test]
fn a_throttled_body_arrives_whole() {
    let body = vec![b't'; 300];
    let server = serve(
        Served::new(Representation::new(body.clone())).throttle(64, Duration::from_millis(1)),
    );
    let got = get(&server, &[]);
    assert_eq!((got.body, got.end), (body, End::Whole));
}

#[test]
fn a_head_request_gets_the_fields_without_the_body() {
    let server = serve(Served::new(
        Representation::new(hundred()).strong_etag("v1"),
    ));
    let mut client = Client::connect(&server);
    let head = client.send("HEAD", &[]);
    assert_eq!((head.status, head.content_length()), (200, 100));
    // Nothing followed the head: the next answer on the connection parses from its start.
    let got = client.send("GET", &[("Range", "bytes=90-")]);
    assert_eq!((got.status, got.body), (206, hundred()[90..].to_vec()));
}

#[test]
fn clones_share_the_fault_script_and_compare_equal() {
    let served = Served::new(Representation::new(hundred())).faults([Fault::CloseAt(1)]);
    let server = Server::start([Action::Serve(served.clone()), Action::Serve(served.clone())]);
    assert_eq!(get(&server, &[]).body.len(), 1);
    assert_eq!(get(&server, &[]).body.len(), 100);
    assert_eq!(served.answered(), 2);
    assert_eq!(served, served.clone());
    assert_ne!(served, served.clone().header("X", "y"));
}

#[test]
fn over_tls_a_reset_at_n_sends_n_bytes_then_an_error_and_a_range_resumes() {
    let ca = crate::certs::TestCa::new();
    let served =
        Served::new(Representation::new(hundred()).strong_etag("v1")).faults([Fault::ResetAt(40)]);
    let server = Server::start_tls([Action::Serve(served)], &ca.server_cert(&["127.0.0.1"]));
    let agent = ureq::Agent::config_builder()
        .tls_config(crate::https::Trust::only_ca(ca.pem()).ureq())
        .build()
        .new_agent();
    let mut first = agent.get(server.url("/r")).call().expect("a head");
    let mut got = Vec::new();
    let read = first.body_mut().as_reader().read_to_end(&mut got);
    assert!(
        read.is_err(),
        "the body ended cleanly at {} bytes",
        got.len()
    );
    assert_eq!(got, hundred()[..40]);
    let mut rest = agent
        .get(server.url("/r"))
        .header("Range", "bytes=40-")
        .header("If-Range", "\"v1\"")
        .call()
        .expect("a 206");
    assert_eq!(rest.status(), 206);
    assert_eq!(
        rest.body_mut().read_to_vec().expect("the rest"),
        hundred()[40..]
    );
}
