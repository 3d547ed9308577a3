//! A request the builder could not make: which part was wrong, and why.
//!
//! Rule: a caller's mistake (a URL that does not parse, a header value with a newline) is an
//! error the caller can match on, returned before anything is sent, never a panic. The text
//! names the part, never its value: a header value may be a secret, a URL may carry a token.

use core::fmt;

/// The part of a request that did not convert.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Part {
    Uri,
    HeaderName,
    HeaderValue,
    #[cfg(feature = "json")]
    Json,
}

/// Why a [`RetryRequest`](crate::RetryRequest) could not be built; [`run`](crate::run) returns
/// it as [`RetryError::InvalidRequest`](crate::RetryError::InvalidRequest) without sending.
#[derive(Debug)]
pub struct RequestError {
    part: Part,
    source: Box<dyn std::error::Error + Send + Sync>,
}

impl RequestError {
    pub(crate) fn new(part: Part, source: http::Error) -> Self {
        RequestError {
            part,
            source: Box::new(source),
        }
    }

    /// A URL whose port is not a TCP port (`:99999`): `http` parses it, and clients then read
    /// no port and connect to the scheme's default one.
    pub(crate) fn port_out_of_range() -> Self {
        RequestError {
            part: Part::Uri,
            source: Box::new(PortOutOfRange),
        }
    }

    #[cfg(feature = "json")]
    pub(crate) fn json(source: serde_json::Error) -> Self {
        RequestError {
            part: Part::Json,
            source: Box::new(source),
        }
    }

    /// Whether the URL did not parse.
    #[must_use]
    pub fn is_uri(&self) -> bool {
        self.part == Part::Uri
    }

    /// Whether a header name or value was invalid.
    #[must_use]
    pub fn is_header(&self) -> bool {
        matches!(self.part, Part::HeaderName | Part::HeaderValue)
    }

    /// Whether the body could not be serialized to JSON.
    #[must_use]
    pub fn is_json(&self) -> bool {
        #[cfg(feature = "json")]
        return self.part == Part::Json;
        #[cfg(not(feature = "json"))]
        false
    }
}

impl fmt::Display for RequestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let part = match self.part {
            Part::Uri => "invalid URL",
            Part::HeaderName => "invalid header name",
            Part::HeaderValue => "invalid header value",
            #[cfg(feature = "json")]
            Part::Json => "the body could not be serialized to JSON",
        };
        // `http`'s and `serde_json`'s texts say what is wrong, not what the value was.
        write!(f, "{part}: {}", self.source)
    }
}

/// A URL's port that is not a number from 0 to 65535.
#[derive(Debug)]
struct PortOutOfRange;

impl fmt::Display for PortOutOfRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the port is not a number from 0 to 65535")
    }
}

impl std::error::Error for PortOutOfRange {}

/// Whether `uri` names a port that is not a TCP port. An empty port (`host:`) is the default
/// one (RFC 3986 §3.2.3), and an IPv6 literal's colons are not a port's.
pub(crate) fn port_out_of_range(uri: &http::Uri) -> bool {
    let Some(authority) = uri.authority() else {
        return false;
    };
    let host_port = authority.as_str().rsplit('@').next().unwrap_or("");
    let Some((_, port)) = host_port.rsplit_once(':') else {
        return false;
    };
    !port.contains(']') && !port.is_empty() && port.parse::<u16>().is_err()
}

impl std::error::Error for RequestError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&*self.source)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_port_out_of_range_is_refused_and_the_others_are_not() {
        for bad in [
            "http://127.0.0.1:99999/",
            "http://a:b@example.com:65536/",
            "http://[::1]:70000/",
        ] {
            let uri: http::Uri = bad.parse().expect("http parses it");
            assert!(port_out_of_range(&uri), "{bad}");
        }
        for good in [
            "http://127.0.0.1:65535/",
            "http://example.com/",
            "http://example.com:/",
            "http://[::1]/",
            "http://u:p@[::1]/",
            "/relative",
        ] {
            let uri: http::Uri = good.parse().expect("a URI");
            assert!(!port_out_of_range(&uri), "{good}");
        }
    }

    #[test]
    fn the_port_error_names_the_part_not_the_value() {
        let shown = RequestError::port_out_of_range().to_string();
        assert_eq!(
            shown,
            "invalid URL: the port is not a number from 0 to 65535"
        );
        assert!(RequestError::port_out_of_range().is_uri());
    }
}
