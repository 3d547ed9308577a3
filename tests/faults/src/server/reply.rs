//! What the server answers, and how it answers a `Range` request for a resumable body.

use std::sync::Arc;
use std::time::Duration;

use crate::body::strong_etag;

/// The body's bytes per `write`, when the reply does not choose.
const DEFAULT_CHUNK: usize = 64 * 1024;

/// A response in the server's script, and how to send it.
#[derive(Clone, Debug)]
pub struct Reply {
    pub(super) status: u16,
    pub(super) headers: Vec<(String, String)>,
    pub(super) body: Arc<[u8]>,
    pub(super) resumable: bool,
    pub(super) hold: bool,
    pub(super) head_gap: Option<Duration>,
    pub(super) pause_at: Option<usize>,
    pub(super) chunk: usize,
}

impl Reply {
    /// A response with `status`, an empty body and its `Content-Length`.
    #[must_use]
    pub fn status(status: u16) -> Self {
        Reply {
            status,
            headers: Vec::new(),
            body: Arc::from(Vec::new()),
            resumable: false,
            hold: false,
            head_gap: None,
            pause_at: None,
            chunk: DEFAULT_CHUNK,
        }
    }

    /// Adds a header.
    #[must_use]
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    /// Sets the body.
    #[must_use]
    pub fn body(mut self, body: impl Into<Arc<[u8]>>) -> Self {
        self.body = body.into();
        self
    }

    /// Serves the body as a resumable representation: a strong `ETag`, `Accept-Ranges:
    /// bytes`, and a `Range: bytes=N-` (or `N-M`) request answered 206 with its
    /// `Content-Range` (416 past the end), unless an `If-Range` names another tag.
    #[must_use]
    pub fn resumable(mut self) -> Self {
        self.resumable = true;
        self
    }

    /// Waits for [`super::Server::release`] before sending anything (a request in flight that
    /// a test can fault).
    #[must_use]
    pub fn hold(mut self) -> Self {
        self.hold = true;
        self
    }

    /// Sends the status line alone, then the rest of the head `gap` later (a head cut in two
    /// segments: a fault can land between them).
    #[must_use]
    pub fn split_head(mut self, gap: Duration) -> Self {
        self.head_gap = Some(gap);
        self
    }

    /// After `n` bytes of the body (of what this response sends), waits for
    /// [`super::Server::release`] before the rest: [`super::Server::wait_for_body_bytes`]
    /// tells a test when it stands there.
    #[must_use]
    pub fn pause_body_at(mut self, n: usize) -> Self {
        self.pause_at = Some(n);
        self
    }

    /// Writes the body `size` bytes at a time (at least 1).
    #[must_use]
    pub fn chunk(mut self, size: usize) -> Self {
        self.chunk = size.max(1);
        self
    }

    /// The status, the head's fields and the part of the body to send for a request with
    /// these `Range` and `If-Range` fields.
    pub(super) fn answer(&self, range: Option<&str>, if_range: Option<&str>) -> Answer {
        let len = self.body.len();
        let mut fields = self.headers.clone();
        if !self.resumable {
            fields.push(("Content-Length".into(), len.to_string()));
            return Answer::whole(self.status, fields, len);
        }
        let etag = strong_etag(&self.body);
        fields.push(("ETag".into(), etag.clone()));
        fields.push(("Accept-Ranges".into(), "bytes".into()));
        let wanted = range
            .filter(|_| if_range.is_none_or(|tag| tag == etag))
            .and_then(parse_range);
        match wanted {
            None => {
                fields.push(("Content-Length".into(), len.to_string()));
                Answer::whole(self.status, fields, len)
            }
            Some((first, _)) if first >= len => {
                fields.push(("Content-Range".into(), format!("bytes */{len}")));
                fields.push(("Content-Length".into(), "0".into()));
                Answer {
                    status: 416,
                    fields,
                    from: 0,
                    to: 0,
                }
            }
            Some((first, last)) => {
                let to = last.map_or(len, |last| last.saturating_add(1).min(len));
                fields.push((
                    "Content-Range".into(),
                    format!("bytes {first}-{}/{len}", to - 1),
                ));
                fields.push(("Content-Length".into(), (to - first).to_string()));
                Answer {
                    status: 206,
                    fields,
                    from: first,
                    to,
                }
            }
        }
    }
}

/// What one request gets: the status, the head's fields, the body's bytes `from..to`.
#[derive(Debug)]
pub(super) struct Answer {
    pub(super) status: u16,
    pub(super) fields: Vec<(String, String)>,
    pub(super) from: usize,
    pub(super) to: usize,
}

impl Answer {
    fn whole(status: u16, fields: Vec<(String, String)>, len: usize) -> Answer {
        Answer {
            status,
            fields,
            from: 0,
            to: len,
        }
    }

    /// The head: status line, fields, blank line.
    pub(super) fn head(&self) -> (String, String) {
        let line = format!("HTTP/1.1 {} {}\r\n", self.status, reason(self.status));
        let mut rest: String = self
            .fields
            .iter()
            .map(|(name, value)| format!("{name}: {value}\r\n"))
            .collect();
        rest.push_str("\r\n");
        (line, rest)
    }
}

/// `bytes=FIRST-` or `bytes=FIRST-LAST` (one range; RFC 9110 §14.1.2).
fn parse_range(value: &str) -> Option<(usize, Option<usize>)> {
    let (first, last) = value.trim().strip_prefix("bytes=")?.split_once('-')?;
    let first = first.trim().parse().ok()?;
    let last = match last.trim() {
        "" => None,
        last => Some(last.parse().ok()?),
    };
    Some((first, last))
}

/// The reason phrase of the statuses the scripts use.
fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        206 => "Partial Content",
        404 => "Not Found",
        416 => "Range Not Satisfiable",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "Other",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resumable(len: usize) -> Reply {
        Reply::status(200).body(vec![7; len]).resumable()
    }

    fn field<'a>(answer: &'a Answer, name: &str) -> Option<&'a str> {
        answer
            .fields
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    #[test]
    fn a_range_from_an_offset_is_a_206_with_its_content_range() {
        let answer = resumable(10).answer(Some("bytes=4-"), None);
        assert_eq!((answer.status, answer.from, answer.to), (206, 4, 10));
        assert_eq!(field(&answer, "Content-Range"), Some("bytes 4-9/10"));
        assert_eq!(field(&answer, "Content-Length"), Some("6"));
    }

    #[test]
    fn a_range_past_the_end_is_a_416() {
        let answer = resumable(10).answer(Some("bytes=10-"), None);
        assert_eq!(answer.status, 416);
        assert_eq!(field(&answer, "Content-Range"), Some("bytes */10"));
    }

    #[test]
    fn an_if_range_naming_another_tag_gets_the_whole_body() {
        let answer = resumable(10).answer(Some("bytes=4-"), Some("\"other\""));
        assert_eq!((answer.status, answer.from, answer.to), (200, 0, 10));
    }

    #[test]
    fn a_reply_that_is_not_resumable_ignores_range() {
        let answer = Reply::status(200)
            .body(vec![1; 5])
            .answer(Some("bytes=1-"), None);
        assert_eq!((answer.status, answer.from, answer.to), (200, 0, 5));
        assert_eq!(field(&answer, "ETag"), None);
    }
}
