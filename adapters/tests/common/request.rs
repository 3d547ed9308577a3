//! Requests for the loop's tests: `http`'s own, with what backstop reads in the extensions.

#![allow(dead_code)]

use backstop::Abort;

/// A bodiless GET of `uri`.
pub fn get(uri: &str) -> http::Request<()> {
    http::Request::get(uri).body(()).expect("a valid request")
}

/// A bodiless POST of `uri` (retried only with an `Idempotency-Key`).
pub fn post(uri: &str) -> http::Request<()> {
    http::Request::post(uri).body(()).expect("a valid request")
}

/// `request`, ended by `abort`.
pub fn aborted_by<B>(mut request: http::Request<B>, abort: &Abort) -> http::Request<B> {
    request.extensions_mut().insert(abort.clone());
    request
}
