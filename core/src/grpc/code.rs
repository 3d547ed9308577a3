//! gRPC's status codes and the sets of them a policy names.
//!
//! Rule (gRPC's `doc/statuscodes.md`): a call ends with one of seventeen codes, 0 to 16, sent
//! as the decimal `grpc-status` field; a value a client does not know is `UNKNOWN`. A response
//! that is not gRPC at all (a proxy's error page) gets its code from its HTTP status
//! (`doc/http-grpc-status-mapping.md`).

/// A gRPC status code, by its name in the gRPC specification.
///
/// ```
/// use backstop_core::grpc::Code;
///
/// assert_eq!(Code::from_bytes(b"14"), Code::Unavailable);
/// assert_eq!(Code::from_bytes(b"99"), Code::Unknown);
/// assert_eq!(Code::from_name("RESOURCE_EXHAUSTED"), Some(Code::ResourceExhausted));
/// assert_eq!(Code::Unavailable.as_str(), "UNAVAILABLE");
/// assert_eq!(Code::Unavailable as u8, 14);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum Code {
    /// Not an error: the call succeeded.
    Ok = 0,
    /// The call was cancelled, typically by the caller.
    Cancelled = 1,
    /// An unknown error, or a status this client does not know.
    Unknown = 2,
    /// The client specified an invalid argument.
    InvalidArgument = 3,
    /// The deadline expired before the call completed.
    DeadlineExceeded = 4,
    /// A requested entity was not found.
    NotFound = 5,
    /// The entity the client tried to create already exists.
    AlreadyExists = 6,
    /// The caller may not perform the call.
    PermissionDenied = 7,
    /// A resource (a quota, the server's capacity) is exhausted.
    ResourceExhausted = 8,
    /// The system is not in the state the call requires.
    FailedPrecondition = 9,
    /// The call was aborted, typically by a concurrency conflict.
    Aborted = 10,
    /// The call went past the valid range.
    OutOfRange = 11,
    /// The call is not implemented or supported by the server.
    Unimplemented = 12,
    /// An internal error.
    Internal = 13,
    /// The service is unavailable for now: the usual retryable code.
    Unavailable = 14,
    /// Unrecoverable data loss or corruption.
    DataLoss = 15,
    /// The call has no valid authentication credentials.
    Unauthenticated = 16,
}

/// Every code, in numeric order.
const ALL: [Code; 17] = [
    Code::Ok,
    Code::Cancelled,
    Code::Unknown,
    Code::InvalidArgument,
    Code::DeadlineExceeded,
    Code::NotFound,
    Code::AlreadyExists,
    Code::PermissionDenied,
    Code::ResourceExhausted,
    Code::FailedPrecondition,
    Code::Aborted,
    Code::OutOfRange,
    Code::Unimplemented,
    Code::Internal,
    Code::Unavailable,
    Code::DataLoss,
    Code::Unauthenticated,
];

impl Code {
    /// Every code, in numeric order.
    pub const ALL: &'static [Code] = &ALL;

    /// The code numbered `n`; `UNKNOWN` for a number gRPC does not define.
    #[must_use]
    pub const fn from_i32(n: i32) -> Code {
        match n {
            0 => Code::Ok,
            1 => Code::Cancelled,
            2 => Code::Unknown,
            3 => Code::InvalidArgument,
            4 => Code::DeadlineExceeded,
            5 => Code::NotFound,
            6 => Code::AlreadyExists,
            7 => Code::PermissionDenied,
            8 => Code::ResourceExhausted,
            9 => Code::FailedPrecondition,
            10 => Code::Aborted,
            11 => Code::OutOfRange,
            12 => Code::Unimplemented,
            13 => Code::Internal,
            14 => Code::Unavailable,
            15 => Code::DataLoss,
            16 => Code::Unauthenticated,
            _ => Code::Unknown,
        }
    }

    /// The code of a raw `grpc-status` value (decimal digits): `UNKNOWN` for anything else or a
    /// number gRPC does not define, as gRPC's clients read it.
    #[must_use]
    pub const fn from_bytes(value: &[u8]) -> Code {
        let mut n: i32 = 0;
        let mut rest = value;
        if rest.is_empty() {
            return Code::Unknown;
        }
        while let [b, tail @ ..] = rest {
            if !b.is_ascii_digit() || n > 16 {
                return Code::Unknown;
            }
            n = n * 10 + (*b - b'0') as i32;
            rest = tail;
        }
        Code::from_i32(n)
    }

    /// The code named `name` in gRPC's upper-case spelling (`"UNAVAILABLE"`), as a service
    /// config names it.
    #[must_use]
    pub fn from_name(name: &str) -> Option<Code> {
        ALL.iter().copied().find(|c| c.as_str() == name)
    }

    /// The code of a response that is not gRPC (no `grpc-status`), from its HTTP status, by
    /// gRPC's mapping: 400 `INTERNAL`, 401 `UNAUTHENTICATED`, 403 `PERMISSION_DENIED`, 404
    /// `UNIMPLEMENTED`, 429, 502, 503 and 504 `UNAVAILABLE`, anything else `UNKNOWN`.
    ///
    /// ```
    /// use backstop_core::grpc::Code;
    ///
    /// assert_eq!(Code::from_http_status(503), Code::Unavailable);
    /// assert_eq!(Code::from_http_status(500), Code::Unknown);
    /// ```
    #[must_use]
    pub const fn from_http_status(status: u16) -> Code {
        match status {
            400 => Code::Internal,
            401 => Code::Unauthenticated,
            403 => Code::PermissionDenied,
            404 => Code::Unimplemented,
            429 | 502 | 503 | 504 => Code::Unavailable,
            _ => Code::Unknown,
        }
    }

    /// The code's name in gRPC's upper-case spelling.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Code::Ok => "OK",
            Code::Cancelled => "CANCELLED",
            Code::Unknown => "UNKNOWN",
            Code::InvalidArgument => "INVALID_ARGUMENT",
            Code::DeadlineExceeded => "DEADLINE_EXCEEDED",
            Code::NotFound => "NOT_FOUND",
            Code::AlreadyExists => "ALREADY_EXISTS",
            Code::PermissionDenied => "PERMISSION_DENIED",
            Code::ResourceExhausted => "RESOURCE_EXHAUSTED",
            Code::FailedPrecondition => "FAILED_PRECONDITION",
            Code::Aborted => "ABORTED",
            Code::OutOfRange => "OUT_OF_RANGE",
            Code::Unimplemented => "UNIMPLEMENTED",
            Code::Internal => "INTERNAL",
            Code::Unavailable => "UNAVAILABLE",
            Code::DataLoss => "DATA_LOSS",
            Code::Unauthenticated => "UNAUTHENTICATED",
        }
    }
}

impl core::fmt::Display for Code {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A set of gRPC status codes, such as A6's `retryableStatusCodes`: one bit per code.
///
/// ```
/// use backstop_core::grpc::{Code, CodeSet};
///
/// let set = CodeSet::EMPTY.with(Code::Unavailable).with(Code::ResourceExhausted);
/// assert!(set.contains(Code::Unavailable));
/// assert!(!set.contains(Code::Internal));
/// assert_eq!(CodeSet::from_codes(&[Code::Unavailable, Code::ResourceExhausted]), set);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct CodeSet {
    bits: u32,
}

impl CodeSet {
    /// No code.
    pub const EMPTY: CodeSet = CodeSet { bits: 0 };

    /// The set of `codes`.
    #[must_use]
    pub const fn from_codes(codes: &[Code]) -> CodeSet {
        let mut set = CodeSet::EMPTY;
        let mut rest = codes;
        while let [code, tail @ ..] = rest {
            set = set.with(*code);
            rest = tail;
        }
        set
    }

    /// The same set with `code`.
    #[must_use]
    pub const fn with(self, code: Code) -> CodeSet {
        CodeSet {
            bits: self.bits | 1 << code as u8,
        }
    }

    /// Whether the set holds `code`.
    #[must_use]
    pub const fn contains(self, code: Code) -> bool {
        self.bits & 1 << code as u8 != 0
    }

    /// Whether the set holds no code.
    #[must_use]
    pub const fn is_empty(self) -> bool {
        self.bits == 0
    }

    /// The codes of the set, in numeric order.
    pub fn iter(self) -> impl Iterator<Item = Code> {
        ALL.into_iter().filter(move |c| self.contains(*c))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_reads_back_from_its_number_and_its_name() {
        for (n, code) in Code::ALL.iter().enumerate() {
            assert_eq!(*code as usize, n);
            assert_eq!(Code::from_i32(n as i32), *code);
            assert_eq!(Code::from_name(code.as_str()), Some(*code));
        }
        assert_eq!(Code::from_name("unavailable"), None);
    }

    #[test]
    fn a_grpc_status_that_is_not_a_known_code_is_unknown() {
        assert_eq!(Code::from_bytes(b"0"), Code::Ok);
        assert_eq!(Code::from_bytes(b"16"), Code::Unauthenticated);
        assert_eq!(Code::from_bytes(b"014"), Code::Unavailable);
        for junk in [
            &b""[..],
            b"17",
            b"-1",
            b"+1",
            b" 1",
            b"1 ",
            b"x",
            b"99999999999999999999",
        ] {
            assert_eq!(Code::from_bytes(junk), Code::Unknown, "{junk:?}");
        }
        assert_eq!(Code::from_i32(-1), Code::Unknown);
        assert_eq!(Code::from_i32(i32::MAX), Code::Unknown);
    }

    #[test]
    fn a_code_set_holds_what_was_put_in() {
        let set = CodeSet::from_codes(&[Code::Ok, Code::Unauthenticated]);
        assert!(set.contains(Code::Ok) && set.contains(Code::Unauthenticated));
        assert_eq!(set.iter().count(), 2);
        assert!(CodeSet::EMPTY.is_empty());
    }
}
