//! Helpers for adapters that map their client's errors to [`ErrorKind`]s.
//!
//! Rule: classify by whether the request can have reached the
//! server, not by the error's type name.

use std::error::Error;
use std::io;

use backstop::ErrorKind;

/// The kind of an I/O error from a socket.
///
/// ```
/// use backstop::ErrorKind;
/// let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
/// assert_eq!(backstop_driver::io_error_kind(&refused), ErrorKind::ConnectionRefused);
/// ```
#[must_use]
pub fn io_error_kind(e: &io::Error) -> ErrorKind {
    match e.kind() {
        io::ErrorKind::ConnectionRefused => ErrorKind::ConnectionRefused,
        io::ErrorKind::ConnectionReset | io::ErrorKind::ConnectionAborted => {
            ErrorKind::ConnectionReset
        }
        io::ErrorKind::BrokenPipe => ErrorKind::BrokenPipe,
        io::ErrorKind::UnexpectedEof => ErrorKind::UnexpectedEof,
        io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock => ErrorKind::Timeout,
        _ => ErrorKind::Other,
    }
}

/// The first [`io::Error`] in an error's `source()` chain (the error itself included).
#[must_use]
pub fn find_io_error<'a>(error: &'a (dyn Error + 'static)) -> Option<&'a io::Error> {
    let mut current = Some(error);
    // Bounded: a chain deeper than this is treated as having no I/O error.
    for _ in 0..32 {
        let e = current?;
        if let Some(io) = e.downcast_ref::<io::Error>() {
            return Some(io);
        }
        current = e.source();
    }
    None
}
