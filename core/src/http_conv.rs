//! Conversions from the `http` crate, so adapters do not hand-write them.
//!
//! Rule (RFC 9110 §10.2.3): `Retry-After` is a singleton field; a response with several is
//! treated as having none (malformed means absent). The rate-limit fields are read the same
//! way: several field lines of one are absent (joining them would need an allocation), a
//! remaining field included (then its reset is read as with no remaining field).

use crate::event::Response;
use crate::grpc::Pushback;
use crate::method::Method;

impl From<&http::Method> for Method {
    /// `http`'s standard methods by their variant (no text compared); any other is an
    /// extension method (`http` reads the nine standard tokens as their variants).
    fn from(m: &http::Method) -> Self {
        static STANDARD: [(http::Method, Method); 9] = [
            (http::Method::GET, Method::Get),
            (http::Method::POST, Method::Post),
            (http::Method::PUT, Method::Put),
            (http::Method::HEAD, Method::Head),
            (http::Method::DELETE, Method::Delete),
            (http::Method::PATCH, Method::Patch),
            (http::Method::OPTIONS, Method::Options),
            (http::Method::TRACE, Method::Trace),
            (http::Method::CONNECT, Method::Connect),
        ];
        STANDARD
            .iter()
            .find(|(standard, _)| standard == m)
            .map_or_else(
                || Method::from_bytes(m.as_str().as_bytes()),
                |&(_, method)| method,
            )
    }
}

impl From<http::Method> for Method {
    fn from(m: http::Method) -> Self {
        Method::from(&m)
    }
}

/// `RateLimit`, `RateLimit-Policy`, `RateLimit-Reset`, `X-RateLimit-Reset-After`,
/// `X-RateLimit-Reset` (header names are lowercase in `http`).
const RATE_LIMIT: http::HeaderName = http::HeaderName::from_static("ratelimit");
const RATE_LIMIT_POLICY: http::HeaderName = http::HeaderName::from_static("ratelimit-policy");
const RATE_LIMIT_RESET: http::HeaderName = http::HeaderName::from_static("ratelimit-reset");
const X_RATE_LIMIT_RESET_AFTER: http::HeaderName =
    http::HeaderName::from_static("x-ratelimit-reset-after");
const X_RATE_LIMIT_RESET: http::HeaderName = http::HeaderName::from_static("x-ratelimit-reset");
/// `RateLimit-Remaining`, `X-RateLimit-Remaining`: whether the reset beside them is a floor.
const RATE_LIMIT_REMAINING: http::HeaderName = http::HeaderName::from_static("ratelimit-remaining");
const X_RATE_LIMIT_REMAINING: http::HeaderName =
    http::HeaderName::from_static("x-ratelimit-remaining");

impl<'a> Response<'a> {
    /// The retry-relevant parts of a response head: its status, its single `Retry-After` (if
    /// exactly one), its rate-limit fields (each if exactly one), and its `Date` when there is
    /// a `Retry-After` or an `X-RateLimit-Reset` to measure against it (the only uses the
    /// machine has for `Date`; the lookup is skipped otherwise).
    ///
    /// ```
    /// use backstop_core::Response;
    ///
    /// let mut headers = http::HeaderMap::new();
    /// headers.insert(http::header::RETRY_AFTER, http::HeaderValue::from_static("3"));
    /// let r = Response::from_http(http::StatusCode::SERVICE_UNAVAILABLE, &headers);
    /// assert_eq!((r.status, r.retry_after), (503, Some(&b"3"[..])));
    ///
    /// headers.append(http::header::RETRY_AFTER, http::HeaderValue::from_static("4"));
    /// assert_eq!(Response::from_http(http::StatusCode::SERVICE_UNAVAILABLE, &headers).retry_after, None);
    ///
    /// headers.insert("RateLimit", http::HeaderValue::from_static(r#""default";r=0;t=10"#));
    /// let r = Response::from_http(http::StatusCode::TOO_MANY_REQUESTS, &headers);
    /// assert_eq!(r.rate_limit, Some(&br#""default";r=0;t=10"#[..]));
    /// ```
    #[must_use]
    pub fn from_http(status: http::StatusCode, headers: &'a http::HeaderMap) -> Self {
        Response::new(status.as_u16())
            .retry_after_from_http(headers)
            .rate_limit_from_http(headers)
    }

    /// With the single `Retry-After` of `headers` (if exactly one), and their `Date` when there
    /// is one.
    #[must_use]
    pub fn retry_after_from_http(mut self, headers: &'a http::HeaderMap) -> Self {
        self.retry_after = single(headers, &http::header::RETRY_AFTER);
        if self.retry_after.is_some() && self.date.is_none() {
            self.date = single(headers, &http::header::DATE);
        }
        self
    }

    /// With the gRPC pushback of `headers` (`grpc-retry-pushback-ms`: [`Pushback::from_values`],
    /// so that several values stop the retries), if they hold one.
    ///
    /// ```
    /// use backstop_core::grpc::Pushback;
    /// use backstop_core::Response;
    /// use core::time::Duration;
    ///
    /// let mut headers = http::HeaderMap::new();
    /// headers.insert("grpc-retry-pushback-ms", http::HeaderValue::from_static("250"));
    /// let r = Response::new(200).pushback_from_http(&headers);
    /// assert_eq!(r.pushback, Some(Pushback::Delay(Duration::from_millis(250))));
    /// headers.append("grpc-retry-pushback-ms", http::HeaderValue::from_static("10"));
    /// let r = Response::new(200).pushback_from_http(&headers);
    /// assert_eq!(r.pushback, Some(Pushback::Stop));
    /// ```
    #[must_use]
    pub fn pushback_from_http(mut self, headers: &'a http::HeaderMap) -> Self {
        let values = headers.get_all(crate::grpc::RETRY_PUSHBACK_MS).iter();
        self.pushback = Pushback::from_values(values.map(http::HeaderValue::as_bytes));
        self
    }

    /// With the rate-limit fields of `headers` (each if exactly one field line), and their
    /// `Date` when there is an `X-RateLimit-Reset` to measure against it. `RateLimit-Policy`
    /// is looked up only beside a `RateLimit`, and each remaining field only beside a reset it
    /// bears on (`RateLimit-Remaining` beside `RateLimit-Reset`, `X-RateLimit-Remaining`
    /// beside `X-RateLimit-Reset` or `X-RateLimit-Reset-After`): a response without any reset
    /// costs no more lookups than before.
    ///
    /// ```
    /// use backstop_core::Response;
    ///
    /// let mut headers = http::HeaderMap::new();
    /// headers.insert("x-ratelimit-remaining", http::HeaderValue::from_static("4999"));
    /// headers.insert("x-ratelimit-reset", http::HeaderValue::from_static("1700003000"));
    /// let r = Response::new(503).rate_limit_from_http(&headers);
    /// assert_eq!(r.x_rate_limit_remaining, Some(&b"4999"[..]));
    /// ```
    #[must_use]
    pub fn rate_limit_from_http(mut self, headers: &'a http::HeaderMap) -> Self {
        self.rate_limit = single(headers, &RATE_LIMIT);
        if self.rate_limit.is_some() {
            self.rate_limit_policy = single(headers, &RATE_LIMIT_POLICY);
        }
        self.rate_limit_reset = single(headers, &RATE_LIMIT_RESET);
        if self.rate_limit_reset.is_some() {
            self.rate_limit_remaining = single(headers, &RATE_LIMIT_REMAINING);
        }
        self.x_rate_limit_reset_after = single(headers, &X_RATE_LIMIT_RESET_AFTER);
        self.x_rate_limit_reset = single(headers, &X_RATE_LIMIT_RESET);
        if self.x_rate_limit_reset_after.is_some() || self.x_rate_limit_reset.is_some() {
            self.x_rate_limit_remaining = single(headers, &X_RATE_LIMIT_REMAINING);
        }
        if self.x_rate_limit_reset.is_some() && self.date.is_none() {
            self.date = single(headers, &http::header::DATE);
        }
        self
    }
}

fn single<'a>(headers: &'a http::HeaderMap, name: &http::HeaderName) -> Option<&'a [u8]> {
    let mut values = headers.get_all(name).iter();
    let first = values.next()?;
    if values.next().is_some() {
        return None;
    }
    Some(first.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_method_converts_as_its_token_reads() -> Result<(), http::method::InvalidMethod> {
        for token in [
            "GET", "POST", "PUT", "HEAD", "DELETE", "PATCH", "OPTIONS", "TRACE", "CONNECT",
            "PROPFIND", "get", "QUERY",
        ] {
            let method = http::Method::from_bytes(token.as_bytes())?;
            assert_eq!(
                Method::from(&method),
                Method::from_bytes(token.as_bytes()),
                "{token}"
            );
        }
        assert_eq!(Method::from(&http::Method::GET), Method::Get);
        assert_eq!(Method::from(&http::Method::CONNECT), Method::Connect);
        Ok(())
    }
}
