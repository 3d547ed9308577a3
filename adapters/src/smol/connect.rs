//! A new connection: resolve the host, connect over TCP, for `https://` run the TLS
//! handshake, then hyper's HTTP/1 handshake. Each step has its own error, so the failure's
//! kind is the step's.

use std::net::SocketAddr;

use futures_lite::{AsyncRead, AsyncWrite};
use smol::net::TcpStream;
use smol_hyper::rt::FuturesIo;

use crate::classify::ResolveError;

use crate::smol::connection::{Connection, Written};
use crate::smol::error::HttpError;

/// Where a request goes: its scheme, host and port, which also name the pool's connections
/// to it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Target {
    /// Whether the scheme is `https` (never, without the `rustls` feature).
    #[cfg_attr(not(feature = "rustls"), allow(dead_code))]
    pub(crate) https: bool,
    /// The host in lower case (DNS names are case-insensitive), an IPv6 address without its
    /// brackets.
    pub(crate) host: String,
    pub(crate) port: u16,
}

impl Target {
    /// The target of `uri`: a host and a scheme this client speaks.
    pub(crate) fn of(uri: &http::Uri) -> Result<Target, HttpError> {
        let https = match uri.scheme_str() {
            Some("https") if cfg!(feature = "rustls") => true,
            Some("http") => false,
            _ => return Err(HttpError::InvalidUri),
        };
        let host = uri.host().ok_or(HttpError::InvalidUri)?;
        let host = host.trim_start_matches('[').trim_end_matches(']');
        if host.is_empty() {
            return Err(HttpError::InvalidUri);
        }
        Ok(Target {
            https,
            host: host.to_ascii_lowercase(),
            port: uri.port_u16().unwrap_or(if https { 443 } else { 80 }),
        })
    }
}

/// Resolves the host (no lookup for an IP address) and connects to the first address that
/// accepts.
pub(crate) async fn tcp(target: &Target) -> Result<TcpStream, HttpError> {
    let addrs: Vec<SocketAddr> = smol::net::resolve((target.host.as_str(), target.port))
        .await
        .map_err(|e| HttpError::Dns(ResolveError::new(e)))?;
    if addrs.is_empty() {
        let none = std::io::Error::new(std::io::ErrorKind::NotFound, "no address for the host");
        return Err(HttpError::Dns(ResolveError::new(none)));
    }
    let stream = TcpStream::connect(&addrs[..])
        .await
        .map_err(HttpError::Connect)?;
    let _ = stream.set_nodelay(true);
    Ok(stream)
}

/// The TLS handshake over `tcp`, checking the certificate against `target`'s host.
#[cfg(feature = "rustls")]
pub(crate) async fn tls(
    config: &std::sync::Arc<futures_rustls::rustls::ClientConfig>,
    target: &Target,
    tcp: TcpStream,
) -> Result<futures_rustls::client::TlsStream<TcpStream>, HttpError> {
    let name = futures_rustls::pki_types::ServerName::try_from(target.host.clone())
        .map_err(|_| HttpError::InvalidUri)?;
    futures_rustls::TlsConnector::from(config.clone())
        .connect(name, tcp)
        .await
        .map_err(HttpError::Tls)
}

/// HTTP/1 over `io`, which tells the connection when hyper has flushed it: its sender, its
/// connection task spawned on smol's global executor (detached; it ends when its sender is
/// dropped or the peer closes).
pub(crate) async fn handshake<IO, B>(io: IO) -> Result<Connection<B>, HttpError>
where
    IO: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    B: http_body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let (io, written) = Written::track(io);
    let (sender, task) = hyper::client::conn::http1::handshake(FuturesIo::new(io))
        .await
        .map_err(HttpError::Http)?;
    smol::spawn(task).detach();
    Ok(Connection::new(sender, written))
}
