//! URLs without secrets.
//!
//! Rule: a URL in a log or metric never shows its userinfo, its
//! query or its fragment, where tokens and passwords live.

/// The URI as `scheme://host[:port]/path`: no userinfo, no query, no fragment.
///
/// ```
/// let uri: http::Uri = "https://user:secret@api.example.com:8443/v1/items?token=abc".parse()?;
/// assert_eq!(backstop_driver::redact_uri(&uri), "https://api.example.com:8443/v1/items");
/// # Ok::<(), http::uri::InvalidUri>(())
/// ```
#[must_use]
pub fn redact_uri(uri: &http::Uri) -> String {
    let mut out = String::new();
    if let Some(scheme) = uri.scheme_str() {
        out.push_str(scheme);
        out.push_str("://");
    }
    if let Some(authority) = uri.authority() {
        out.push_str(authority.host());
        if let Some(port) = authority.port() {
            out.push(':');
            out.push_str(port.as_str());
        }
    }
    out.push_str(uri.path());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn userinfo_query_and_fragment_are_removed() {
        for (input, expected) in [
            ("http://127.0.0.1:8080/a/b?x=1", "http://127.0.0.1:8080/a/b"),
            (
                "https://alice:pw@example.com/p?token=1",
                "https://example.com/p",
            ),
            ("https://tok@example.com", "https://example.com/"),
            ("http://[::1]:80/x?y", "http://[::1]:80/x"),
        ] {
            let uri: http::Uri = input.parse().expect("uri");
            assert_eq!(redact_uri(&uri), expected, "{input}");
        }
    }
}
