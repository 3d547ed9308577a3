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
                parse_port(port)?
            }
        }
        _ => return None,
    };
    Some(SocketAddr::new(ip, port))
}

/// An IPv4 address as `std` parses one: four decimal octets up to 255, without leading zeros.
/// One pass over the bytes (this runs on every request).
fn parse_ipv4(s: &[u8]) -> Option<Ipv4Addr> {
    let mut octets = [0_u8; 4];
    let mut n = 0;
    // The octet being read: its value and its digit count.
    let mut value = 0_u16;
    let mut digits = 0;
    for &b in s {
        match b {
            b'0'..=b'9' => {
                // No leading zero ("0" alone is fine), at most three digits.
                if (digits == 1 && value == 0) || digits == 3 {
                    return None;
                }
                value = value * 10 + u16::from(b - b'0');
                digits += 1;
            }
            b'.' if digits > 0 && n < 3 => {
                octets[n] = u8::try_from(value).ok()?;
                n += 1;
                value = 0;
                digits = 0;
            }
            _ => return None,
        }
    }
    if digits == 0 || n != 3 {
        return None;
    }
    octets[3] = u8::try_from(value).ok()?;
    Some(Ipv4Addr::from(octets))
}

/// A port as `Authority::port_u16` reads it (decimal digits, at most 65535), from the bytes
/// after the colon; `None` for anything else (ureq's resolver then decides).
fn parse_port(s: &[u8]) -> Option<u16> {
    s.iter().try_fold(0_u16, |port, &b| {
        if b.is_ascii_digit() {
            port.checked_mul(10)?.checked_add(u16::from(b - b'0'))
        } else {
            None
        }
    })
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
            ("http://10.20.30.40:1/", Some("10.20.30.40:1")),
            ("http://1.2.3.00/", None),
            ("http://1.2.3.1000/", None),
            ("http://.1.2.3/", None),
            ("http://1.2.3.4a/", None),
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

    #[test]
    fn ports_read_as_authority_port_u16_reads_them() {
        for port in ["1", "80", "0080", "65535", "65536", "99999", "123456789"] {
            let parsed: Uri = format!("http://1.2.3.4:{port}/").parse().expect("uri");
            let expected = parsed
                .port_u16()
                .map(|p| SocketAddr::new(IpAddr::V4(Ipv4Addr::new(1, 2, 3, 4)), p));
            assert_eq!(ip_literal_addr(&parsed), expected, "{port}");
        }
    }
}
