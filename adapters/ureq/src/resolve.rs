//! Resolution: an IP-address host needs none.
//!
//! ureq's default resolver formats `host:port` into a new string and hands it to
//! `ToSocketAddrs`, which parses it back (about 2,500 instructions per request, measured with
//! callgrind), and with any resolve timeout it resolves on a new thread, even an IP address.
//! [`Resolver`] takes the address straight from the URI when the host is an IP address (the
//! timeout is moot: nothing can block), with ureq's rules: the scheme's default port, the
//! configured IP family, `HostNotFound` when none is left. Every other host, and any URI it
//! does not recognise, goes to ureq's resolver unchanged.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use ureq::config::Config;
use ureq::http::Uri;
use ureq::unversioned::resolver::{DefaultResolver, ResolvedSocketAddrs};
use ureq::unversioned::transport::NextTimeout;

/// ureq's default resolver, short-circuited for IP-address hosts.
#[derive(Debug, Default)]
pub(crate) struct Resolver {
    inner: DefaultResolver,
}

impl ureq::unversioned::resolver::Resolver for Resolver {
    fn resolve(
        &self,
        uri: &Uri,
        config: &Config,
        timeout: NextTimeout,
    ) -> Result<ResolvedSocketAddrs, ureq::Error> {
        let Some(addr) = ip_literal_addr(uri) else {
            return self.inner.resolve(uri, config, timeout);
        };
        let Some(addr) = config
            .ip_family()
            .keep_wanted(core::iter::once(addr))
            .next()
        else {
            return Err(ureq::Error::HostNotFound);
        };
        let mut addrs = self.empty();
        addrs.push(addr);
        Ok(addrs)
    }
}

/// The socket address of an `http` or `https` URI whose host is an IP address.
pub(crate) fn ip_literal_addr(uri: &Uri) -> Option<SocketAddr> {
    let default_port = match uri.scheme_str()? {
        "http" => 80,
        "https" => 443,
        _ => return None,
    };
    let authority = uri.authority()?;
    let s = authority.as_str().as_bytes();
    // After any userinfo (which cannot hold an unescaped `@`).
    let host = s
        .iter()
        .rposition(|&b| b == b'@')
        .map_or(s, |at| &s[at + 1..]);
    let (ip, rest) = match host.first()? {
        b'[' => {
            let end = host.iter().position(|&b| b == b']')?;
            let ip = core::str::from_utf8(&host[1..end]).ok()?;
            (IpAddr::V6(ip.parse::<Ipv6Addr>().ok()?), &host[end + 1..])
        }
        b if b.is_ascii_digit() => {
            let end = host.iter().position(|&b| b == b':').unwrap_or(host.len());
            (IpAddr::V4(parse_ipv4(&host[..end])?), &host[end..])
        }
        _ => return None,
    };
    let port = match rest {
        [] => default_port,
        [b':', port @ ..] => {
            if port.is_empty() {
                default_port
            } else {
                authority.port_u16()?
            }
        }
        _ => return None,
    };
    Some(SocketAddr::new(ip, port))
}

/// An IPv4 address as `std` parses one: four decimal octets up to 255, without leading zeros.
fn parse_ipv4(s: &[u8]) -> Option<Ipv4Addr> {
    let mut octets = [0_u8; 4];
    let mut n = 0;
    for part in s.split(|&b| b == b'.') {
        let valid = match part {
            [] => false,
            [b'0'] => true,
            [b'0', ..] => false,
            _ => part.len() <= 3 && part.iter().all(u8::is_ascii_digit),
        };
        if !valid || n == 4 {
            return None;
        }
        // At most three digits: at most 999.
        let value = part
            .iter()
            .fold(0_u16, |v, &d| v * 10 + u16::from(d - b'0'));
        octets[n] = u8::try_from(value).ok()?;
        n += 1;
    }
    (n == 4).then(|| Ipv4Addr::from(octets))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ip_literals_resolve_as_std_parses_them() {
        for (uri, expected) in [
            ("http://127.0.0.1:8080/a", Some("127.0.0.1:8080")),
            ("http://127.0.0.1/a", Some("127.0.0.1:80")),
            ("https://127.0.0.1/a", Some("127.0.0.1:443")),
            ("http://127.0.0.1:/a", Some("127.0.0.1:80")),
            ("http://user:pw@10.0.0.1:81/", Some("10.0.0.1:81")),
            ("http://[::1]:8080/", Some("[::1]:8080")),
            ("https://u@[2001:db8::1]/", Some("[2001:db8::1]:443")),
            ("http://[::ffff:1.2.3.4]:1/", Some("[::ffff:1.2.3.4]:1")),
            ("http://0.0.0.0/", Some("0.0.0.0:80")),
            ("http://255.255.255.255/", Some("255.255.255.255:80")),
            ("http://[v1.fe]/", None),
            ("http://localhost:8080/", None),
            ("http://1password.com/", None),
            ("http://127.0.0.1.nip.io/", None),
            ("http://example.com/", None),
            ("http://256.1.1.1/", None),
            ("http://01.2.3.4/", None),
            ("http://1.2.3/", None),
            ("http://1.2.3.4.5/", None),
            ("http://1..3.4/", None),
            ("http://1.2.3.4./", None),
            ("socks5://127.0.0.1/", None),
        ] {
            let parsed: Uri = uri.parse().expect("uri");
            let expected = expected.map(|e| e.parse::<SocketAddr>().expect("addr"));
            assert_eq!(ip_literal_addr(&parsed), expected, "{uri}");
            // The same answer as `std`'s parser on the host.
            let host = parsed.host().expect("host");
            let std_says = host
                .trim_start_matches('[')
                .trim_end_matches(']')
                .parse::<IpAddr>()
                .ok();
            if matches!(parsed.scheme_str(), Some("http" | "https")) {
                assert_eq!(std_says, expected.map(|a| a.ip()), "{uri}");
            }
        }
    }
}
