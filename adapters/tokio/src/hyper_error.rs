//! hyper's own errors, found in a `source()` chain.

use backstop::ErrorKind;

/// The kind of the first `hyper::Error` in the chain, if any.
pub(crate) fn kind(error: &(dyn std::error::Error + 'static)) -> Option<ErrorKind> {
    let mut current = Some(error);
    // Bounded: chains are short; a deeper one is treated as unknown.
    for _ in 0..32 {
        let e = current?;
        if let Some(h) = e.downcast_ref::<hyper::Error>() {
            return Some(if h.is_incomplete_message() {
                ErrorKind::UnexpectedEof
            } else if h.is_parse() || h.is_parse_status() {
                ErrorKind::Protocol
            } else if h.is_timeout() {
                ErrorKind::Timeout
            } else {
                ErrorKind::Other
            });
        }
        current = e.source();
    }
    None
}
