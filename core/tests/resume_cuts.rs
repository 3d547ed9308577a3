//! For any sequence of cuts and misbehaving answers, a download driven by `Resumption` hands
//! the caller either the whole representation it started on, byte for byte, or an error after
//! a true prefix of it: never two versions spliced, never a truncated body called complete.
//!
//! The server is simulated: a representation that may change between requests (a new entity
//! tag), bodies cut short (a clean end short of the length, or a reset), and resume answers that
//! are wrong on purpose (a part starting elsewhere, another complete length, a `200` that
//! ignores the range, a part that ignores `If-Range`, a `416`). The client is the loop a front
//! door runs: read, and on a cut ask `Range`/`If-Range` and check the answer.

use backstop_core::{BodyEnd, Counted, Representation, ResumeAnswer, Resumption};
use proptest::prelude::*;

/// At most this many requests per download: every answer either adds bytes or ends it.
const MAX_REQUESTS: usize = 40;

/// How the server answers one request.
#[derive(Clone, Copy, Debug)]
enum Answer {
    /// As RFC 9110 says (a `206` from the offset, or a `200` when `If-Range` fails).
    Honest,
    /// A `206` whose part starts `shift` bytes off.
    WrongStart(i8),
    /// A `206` whose complete length is one more.
    WrongLength,
    /// A `200` with the whole current version, whatever was asked.
    IgnoreRange,
    /// A `206` from the current version, whatever `If-Range` said (with its own entity tag).
    IgnoreIfRange,
    /// A `416` naming the current version's length.
    Unsatisfiable,
}

/// How the body of one answer ends.
#[derive(Clone, Copy, Debug)]
enum Cut {
    /// Every byte, then a clean end.
    None,
    /// A clean end after this share (in 1/256) of the bytes: a connection that closed early.
    CleanAt(u8),
    /// A reset after this share of the bytes.
    ResetAt(u8),
}

#[derive(Clone, Debug)]
struct Scenario {
    v1: Vec<u8>,
    v2: Vec<u8>,
    /// The representation changes to `v2` from this request on.
    change_at: usize,
    /// Whether the 200 declares its `Content-Length` (else a chunked body, whose cuts are
    /// resets: chunked framing tells an early end).
    declares_length: bool,
    answers: Vec<(Answer, Cut)>,
}

fn scenario() -> impl Strategy<Value = Scenario> {
    let answer = prop_oneof![
        6 => Just(Answer::Honest),
        1 => any::<i8>().prop_map(Answer::WrongStart),
        1 => Just(Answer::WrongLength),
        1 => Just(Answer::IgnoreRange),
        1 => Just(Answer::IgnoreIfRange),
        1 => Just(Answer::Unsatisfiable),
    ];
    let cut = prop_oneof![
        2 => Just(Cut::None),
        2 => any::<u8>().prop_map(Cut::CleanAt),
        2 => any::<u8>().prop_map(Cut::ResetAt),
    ];
    (
        proptest::collection::vec(any::<u8>(), 0..300),
        proptest::collection::vec(any::<u8>(), 0..300),
        0..MAX_REQUESTS + 1,
        any::<bool>(),
        proptest::collection::vec((answer, cut), MAX_REQUESTS),
    )
        .prop_map(|(v1, v2, change_at, declares_length, answers)| Scenario {
            v1,
            v2,
            change_at,
            declares_length,
            answers,
        })
}

/// One answer of the simulated server: its head's fields, and the body it sends.
struct Sent {
    status: u16,
    etag: &'static [u8],
    content_length: Option<String>,
    content_range: Option<String>,
    body: Vec<u8>,
    /// The body ends with a reset instead of a clean end.
    reset: bool,
}

impl Sent {
    fn head(&self) -> Representation<'_> {
        let mut head = Representation::new(self.status).etag(self.etag);
        if let Some(length) = &self.content_length {
            head = head.content_length(length.as_bytes());
        }
        if let Some(range) = &self.content_range {
            head = head.content_range(range.as_bytes());
        }
        head
    }
}

impl Scenario {
    fn version(&self, request: usize) -> (&[u8], &'static [u8]) {
        if request >= self.change_at {
            (&self.v2, b"\"v2\"")
        } else {
            (&self.v1, b"\"v1\"")
        }
    }

    /// The server's answer to request `n`, which asks `range` (the offset and `If-Range`).
    fn answer(&self, n: usize, range: Option<(u64, &[u8])>) -> Sent {
        let (current, etag) = self.version(n);
        let (answer, cut) = self.answers[n];
        let len = current.len() as u64;
        let whole = |etag| Sent {
            status: 200,
            etag,
            content_length: self.declares_length.then(|| len.to_string()),
            content_range: None,
            body: current.to_vec(),
            reset: false,
        };
        let part = |from: u64, complete: u64| {
            let from = from.min(len);
            Sent {
                status: 206,
                etag,
                content_length: Some((len - from).to_string()),
                content_range: (from < len).then(|| format!("bytes {from}-{}/{complete}", len - 1)),
                body: current[from as usize..].to_vec(),
                reset: false,
            }
        };
        let mut sent = match (range, answer) {
            (None, _) | (Some(_), Answer::IgnoreRange) => whole(etag),
            (Some((_, _)), Answer::Unsatisfiable) => Sent {
                status: 416,
                etag,
                content_length: None,
                content_range: Some(format!("bytes */{len}")),
                body: Vec::new(),
                reset: false,
            },
            (Some((from, if_range)), Answer::Honest) if if_range == etag => part(from, len),
            (Some(_), Answer::Honest) => whole(etag),
            (Some((from, _)), Answer::IgnoreIfRange) => part(from, len),
            (Some((from, _)), Answer::WrongStart(shift)) => {
                part(from.saturating_add_signed(i64::from(shift)), len)
            }
            (Some((from, _)), Answer::WrongLength) => part(from, len + 1),
        };
        let share = |at: u8| sent.body.len() * usize::from(at) / 256;
        match cut {
            Cut::None => {}
            // A chunked 200 cannot end cleanly before its last chunk: that cut is a reset.
            Cut::CleanAt(at) if sent.status == 206 || self.declares_length => {
                sent.body.truncate(share(at));
            }
            Cut::CleanAt(at) | Cut::ResetAt(at) => {
                let at = share(at);
                if at < sent.body.len() {
                    sent.body.truncate(at);
                    sent.reset = true;
                }
            }
        }
        sent
    }
}

/// How the download ended.
#[derive(Debug)]
enum Download {
    Complete(Vec<u8>),
    Failed(Vec<u8>),
}

/// The client's loop: read the first answer, then resume after every cut the rules allow. A
/// `200` before any byte was handed over starts the body afresh, on the version it carries.
fn download(s: &Scenario) -> (Download, &'static [u8]) {
    let first = s.answer(0, None);
    let mut started_on = first.etag;
    let mut body = resumable(&first);
    let mut delivered = first.body.clone();
    let mut reset = first.reset;
    for n in 1..MAX_REQUESTS {
        let at = delivered.len() as u64;
        if !reset {
            match body.ended(at) {
                BodyEnd::Complete | BodyEnd::Undeclared => {
                    return (Download::Complete(delivered), started_on)
                }
                BodyEnd::Overlong { .. } => return (Download::Failed(delivered), started_on),
                BodyEnd::Truncated { .. } => {}
            }
        }
        let if_range = body.if_range().to_vec();
        let answer = s.answer(n, Some((body.range_from(at).0, &if_range)));
        match body.answer(at, &answer.head()) {
            ResumeAnswer::Part { first, last } => {
                assert_eq!(first, at);
                // The part may be cut too: what arrived is appended, up to its last byte.
                let wanted = usize::try_from(last - first + 1).expect("a small part");
                delivered.extend(answer.body.iter().take(wanted));
                reset = answer.reset || answer.body.len() > wanted;
            }
            ResumeAnswer::Complete => return (Download::Complete(delivered), started_on),
            ResumeAnswer::Restart => {
                body = resumable(&answer);
                started_on = answer.etag;
                delivered.clone_from(&answer.body);
                reset = answer.reset;
            }
            ResumeAnswer::Changed | ResumeAnswer::Mismatch(_) => {
                return (Download::Failed(delivered), started_on)
            }
            other => panic!("the simulated server never answers {other:?}"),
        }
    }
    (Download::Failed(delivered), started_on)
}

/// The body of a 200: every one the server sends has a strong entity tag.
fn resumable(answer: &Sent) -> Resumption {
    match Resumption::of(&answer.head(), Counted::AsSent) {
        Ok(body) => body,
        Err(reason) => panic!("a 200 with a strong entity tag is resumable: {reason}"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    #[test]
    fn the_bytes_handed_over_are_the_representation_or_a_prefix_of_it(s in scenario()) {
        let (end, started_on) = download(&s);
        let version: &[u8] = if started_on == b"\"v1\"" { &s.v1 } else { &s.v2 };
        match end {
            Download::Complete(bytes) => prop_assert_eq!(&bytes[..], version),
            Download::Failed(bytes) => {
                prop_assert!(bytes.len() <= version.len(), "{} > {}", bytes.len(), version.len());
                prop_assert_eq!(&bytes[..], &version[..bytes.len()]);
            }
        }
    }
}

#[test]
fn an_honest_server_that_cuts_every_answer_still_delivers_the_whole_body() {
    let v1: Vec<u8> = (0..=255).collect();
    let s = Scenario {
        v1: v1.clone(),
        v2: Vec::new(),
        change_at: usize::MAX,
        declares_length: true,
        // Half of what is left, then a reset at a quarter, five times over; then the rest.
        answers: [
            (Answer::Honest, Cut::CleanAt(128)),
            (Answer::Honest, Cut::ResetAt(64)),
        ]
        .repeat(5)
        .into_iter()
        .chain(core::iter::repeat((Answer::Honest, Cut::None)))
        .take(MAX_REQUESTS)
        .collect(),
    };
    let (end, _) = download(&s);
    assert!(
        matches!(&end, Download::Complete(bytes) if *bytes == v1),
        "{end:?}"
    );
}

#[test]
fn a_representation_that_changes_mid_download_is_never_spliced() {
    let s = Scenario {
        v1: vec![1; 100],
        v2: vec![2; 100],
        change_at: 1,
        declares_length: true,
        answers: vec![(Answer::Honest, Cut::CleanAt(128)); MAX_REQUESTS],
    };
    let (end, _) = download(&s);
    assert!(
        matches!(&end, Download::Failed(bytes) if *bytes == vec![1; 50]),
        "{end:?}"
    );
}
