//! URLs without secrets.
//!
//! Rule (the seed's requirement 9): a URL in a log or metric never shows its userinfo, its
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

/// [`redact_uri`] for a URL in text; text that does not parse as a URI is cut at the first
/// `?` or `#` and stripped of anything up to an `@` in its authority.
///
/// ```
/// assert_eq!(backstop_driver::redact_url("http://u:p@h/a?q=1#f"), "http://h/a");
/// assert_eq!(backstop_driver::redact_url("not a uri?secret"), "not a uri");
/// ```
#[must_use]
pub fn redact_url(url: &str) -> String {
    if let Ok(uri) = url.parse::<http::Uri>() {
        return redact_uri(&uri);
    }
    let cut = url.find(['?', '#']).map_or(url, |i| &url[..i]);
    let (scheme, rest) = match cut.find("://") {
        Some(i) => (&cut[..i + 3], &cut[i + 3..]),
        None => ("", cut),
    };
    let authority_end = rest.find('/').unwrap_or(rest.len());
    let rest = match rest[..authority_end].rfind('@') {
        Some(at) => &rest[at + 1..],
        None => rest,
    };
    format!("{scheme}{rest}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn userinfo_query_and_fragment_are_removed() {
        for (input, expected) in [
            ("http://127.0.0.1:8080/a/b?x=1", "http://127.0.0.1:8080/a/b"),
            (
                "https://alice:pw@example.com/p#frag",
                "https://example.com/p",
            ),
            ("https://tok@example.com", "https://example.com/"),
            ("http://[::1]:80/x?y", "http://[::1]:80/x"),
            ("broken url with space?token=1", "broken url with space"),
            ("weird://user:pw@host/pa th?q", "weird://host/pa th"),
        ] {
            assert_eq!(redact_url(input), expected, "{input}");
        }
    }
}
