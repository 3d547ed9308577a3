//! The blocking resumable body: a GET's body that resumes by itself, read on the caller's
//! thread (see [`crate::body`] for the rules, written once in the body's `Resumer`).
//!
//! Rule: every read waits at most the body idle timeout for a byte (the connection's
//! transport cuts its waits for input to it, as for a drain); a read that fails, stalls or
//! ends short of the declared length hands the failure to the operation, which resumes it as
//! its next attempt through the same client (its pool, its timeouts, its abort) or ends the
//! body with a [`BodyError`](crate::body::BodyError) inside an `io::Error`.

use std::io::{self, Read};
use std::time::Duration;

use backstop_core::ErrorKind;
use ureq::http::{Request, Response};
use ureq::{Body, BodyReader};

use crate::abort::Abort;
use crate::body::{Carried, Resumer, Step};
use crate::runtime::Runtime;
use crate::ureq::abort::interruptible;
use crate::ureq::drain::ReadBy;
use crate::ureq::Client;

/// A body that resumes itself, for ureq's `Body::builder().reader(..)`.
pub(crate) struct ResumableReader<RT> {
    client: Client<RT>,
    /// The operation's request head (a GET: no body), sent again with a range.
    head: http::request::Parts,
    named_host: bool,
    resumer: Resumer,
    reader: Option<BodyReader<'static>>,
    abort: Option<Abort>,
    idle: Duration,
}

impl<RT: Runtime + Clone> ResumableReader<RT> {
    /// The body `body` of the operation `carried`'s `200`, resumable as `resumption` says.
    pub(crate) fn new(
        client: &Client<RT>,
        head: http::request::Parts,
        named_host: bool,
        (body, resumption): (Body, backstop_core::Resumption),
        carried: Carried,
        idle: Duration,
    ) -> Self {
        let now = client.runtime.now();
        let abort = carried.abort.clone();
        ResumableReader {
            client: client.clone(),
            head,
            named_host,
            resumer: Resumer::new(carried, resumption, 200, now),
            reader: Some(body.into_reader()),
            abort,
            idle,
        }
    }

    /// Acts on `step` until the body streams again or ends: `Ok(true)` to read on, `Ok(false)`
    /// at the body's end.
    fn act(&mut self, mut step: Step) -> io::Result<bool> {
        // Bounded: the machine bounds the attempts and the waits.
        loop {
            step = match step {
                Step::Stream => return Ok(self.reader.is_some()),
                Step::Complete => return Ok(false),
                Step::Fail(e) => return Err(io::Error::other(e)),
                Step::Wait(until) => {
                    let sleep = self.client.runtime.sleep_until(until);
                    match &self.abort {
                        Some(a) => futures_lite::future::block_on(futures_lite::future::or(
                            a.aborted(),
                            sleep,
                        )),
                        None => futures_lite::future::block_on(sleep),
                    }
                    let now = self.client.runtime.now();
                    if self.abort.as_ref().is_some_and(Abort::is_aborted) {
                        return Err(io::Error::other(self.resumer.aborted(now)));
                    }
                    self.resumer.woke(now)
                }
                Step::Send {
                    timeout,
                    range,
                    if_range,
                    ..
                } => {
                    let mut head = self.head.clone();
                    head.headers.insert(http::header::RANGE, range);
                    head.headers.insert(http::header::IF_RANGE, if_range);
                    let request = Request::from_parts(head, ());
                    let answer = self.client.exchange(
                        request,
                        timeout,
                        self.named_host,
                        self.abort.as_ref(),
                    );
                    let now = self.client.runtime.now();
                    match answer {
                        Ok(response) => {
                            let (parts, body): (_, Body) = Response::into_parts(response);
                            let step = self.resumer.answered(now, parts.status, &parts.headers);
                            if matches!(step, Step::Stream) {
                                self.reader = Some(body.into_reader());
                            }
                            step
                        }
                        Err(e) if self.abort.as_ref().is_some_and(Abort::is_aborted) => {
                            let _ = e;
                            return Err(io::Error::other(self.resumer.aborted(now)));
                        }
                        Err(e) => {
                            let kind = crate::ureq::error_kind(&e);
                            self.resumer.error(now, kind, Box::new(e))
                        }
                    }
                }
            };
        }
    }
}

impl<RT: Runtime + Clone> Read for ResumableReader<RT> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        // Bounded: each pass reads, or resumes (bounded by the operation's attempts).
        loop {
            let Some(reader) = self.reader.as_mut() else {
                return Ok(0);
            };
            let by = std::time::Instant::now().checked_add(self.idle);
            let read = {
                let _by = ReadBy::set(by);
                interruptible(self.abort.as_ref(), || reader.read(buf))
            };
            let now = self.client.runtime.now();
            let step = match read {
                Ok(0) => self.resumer.ended(now),
                Ok(n) => {
                    self.resumer.handed_over(n);
                    return Ok(n);
                }
                Err(_) if self.abort.as_ref().is_some_and(Abort::is_aborted) => {
                    self.reader = None;
                    return Err(io::Error::other(self.resumer.aborted(now)));
                }
                Err(e) => {
                    let kind = if crate::ureq::read::is_timeout(&e) {
                        ErrorKind::BodyStalled
                    } else {
                        ErrorKind::BodyCut
                    };
                    self.resumer.failed(now, kind, Some(Box::new(e)))
                }
            };
            self.reader = None;
            if !self.act(step)? {
                return Ok(0);
            }
        }
    }
}

/// The head of `request` to send again (a GET's: no body), after giving it
/// `Accept-Encoding: identity` when it has none (so that the bytes counted are the bytes sent).
pub(crate) fn head_of<B>(request: &mut Request<B>) -> http::request::Parts {
    if !request
        .headers()
        .contains_key(http::header::ACCEPT_ENCODING)
    {
        let identity = http::HeaderValue::from_static("identity");
        request
            .headers_mut()
            .insert(http::header::ACCEPT_ENCODING, identity);
    }
    let mut head = Request::new(());
    *head.method_mut() = request.method().clone();
    *head.uri_mut() = request.uri().clone();
    *head.version_mut() = request.version();
    *head.headers_mut() = request.headers().clone();
    head.into_parts().0
}

/// `done`, the operation's result, its `200`'s body resumable when it may be.
pub(crate) fn resumable<RT: Runtime + Clone + Send + Sync + 'static>(
    client: &Client<RT>,
    head: http::request::Parts,
    named_host: bool,
    abort: Option<Abort>,
    done: crate::Retried<Body>,
) -> crate::Retried<Body> {
    let status = done.response.status();
    let resumption = crate::body::resumption_of(status, done.response.headers(), false);
    let (200, Some(resumption)) = (status.as_u16(), resumption) else {
        return done;
    };
    let outcome = done.outcome;
    let retrier = &client.retrier;
    let policy = head
        .extensions
        .get::<crate::Policy>()
        .copied()
        .unwrap_or(*retrier.policy());
    let plan = crate::request::Plan::from_head(
        head.method.clone(),
        head.uri.clone(),
        &head.headers,
        &head.extensions,
    );
    let now = client.runtime.now();
    let carried = Carried {
        retrier: retrier.clone(),
        policy,
        request: plan.facts(),
        uri: head.uri.clone(),
        started: backstop_core::Instant::from_duration(
            now.as_duration().saturating_sub(outcome.elapsed),
        ),
        attempts: outcome.attempts,
        abort,
        plan,
    };
    let (parts, body) = done.response.into_parts();
    let mut builder = Body::builder();
    if let Some(mime) = body.mime_type() {
        builder = builder.mime_type(mime);
    }
    if let Some(charset) = body.charset() {
        builder = builder.charset(charset);
    }
    if let Some(length) = resumption.length() {
        builder = builder.limit(length);
    }
    let idle = policy.body_idle_timeout();
    let reader = ResumableReader::new(client, head, named_host, (body, resumption), carried, idle);
    crate::Retried {
        response: Response::from_parts(parts, builder.reader(reader)),
        outcome,
    }
}
