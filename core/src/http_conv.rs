//! Conversions from the `http` crate, so adapters do not hand-write them.
//!
//! Rule (RFC 9110 §10.2.3): `Retry-After` is a singleton field; a response with several is
//! treated as having none (malformed means absent).

use crate::event::Response;
use crate::method::Method;

impl From<&http::Method> for Method {
    fn from(m: &http::Method) -> Self {
        Method::from_bytes(m.as_str().as_bytes())
    }
}

impl From<http::Method> for Method {
    fn from(m: http::Method) -> Self {
        Method::from(&m)
    }
}

impl<'a> Response<'a> {
    /// The retry-relevant parts of a response head: its status, its single `Retry-After` (if
    /// exactly one), and its `Date` when there is a `Retry-After` to measure against it (the
    /// only use the machine has for `Date`; the lookup is skipped otherwise).
    ///
    /// ```
    /// use backstop::Response;
    ///
    /// let mut headers = http::HeaderMap::new();
    /// headers.insert(http::header::RETRY_AFTER, http::HeaderValue::from_static("3"));
    /// let r = Response::from_http(http::StatusCode::SERVICE_UNAVAILABLE, &headers);
    /// assert_eq!((r.status, r.retry_after), (503, Some(&b"3"[..])));
    ///
    /// headers.append(http::header::RETRY_AFTER, http::HeaderValue::from_static("4"));
    /// assert_eq!(Response::from_http(http::StatusCode::SERVICE_UNAVAILABLE, &headers).retry_after, None);
    /// ```
    #[must_use]
    pub fn from_http(status: http::StatusCode, headers: &'a http::HeaderMap) -> Self {
        let retry_after = single(headers, &http::header::RETRY_AFTER);
        Response {
            status: status.as_u16(),
            retry_after,
            date: retry_after.and_then(|_| single(headers, &http::header::DATE)),
            wall_clock: None,
        }
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
