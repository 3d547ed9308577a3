//! One accepted connection, plain or TLS, with the few operations the scripted server needs:
//! peek at a request head before consuming it, read, write, close, reset.

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};

type TlsStream = rustls::StreamOwned<rustls::ServerConnection, TcpStream>;

/// An accepted connection.
pub(super) enum Conn {
    Plain(TcpStream),
    /// rustls over TCP; `unread` holds plaintext peeked at and not read yet.
    Tls {
        stream: Box<TlsStream>,
        unread: Vec<u8>,
    },
}

impl Conn {
    pub(super) fn tls(
        tcp: TcpStream,
        config: std::sync::Arc<rustls::ServerConfig>,
    ) -> Option<Conn> {
        let connection = rustls::ServerConnection::new(config).ok()?;
        Some(Conn::Tls {
            stream: Box::new(rustls::StreamOwned::new(connection, tcp)),
            unread: Vec::new(),
        })
    }

    /// Copies the bytes received and not read into `buf`. A TLS connection first waits for
    /// more unless a whole request head (`\r\n\r\n`) is already there (the handshake runs on
    /// the first call); a plain one peeks at the socket.
    pub(super) fn peek(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Conn::Plain(s) => s.peek(buf),
            Conn::Tls { stream, unread } => {
                if !unread.windows(4).any(|w| w == b"\r\n\r\n") {
                    let mut chunk = [0; 16 * 1024];
                    let n = stream.read(&mut chunk)?;
                    if n == 0 {
                        return Ok(0);
                    }
                    unread.extend_from_slice(&chunk[..n]);
                }
                let n = unread.len().min(buf.len());
                buf[..n].copy_from_slice(&unread[..n]);
                Ok(n)
            }
        }
    }

    /// Makes the connection's close a reset: with a zero linger, the last close of the socket
    /// sends RST instead of FIN (and drops whatever is still unsent). A TLS connection resets
    /// too, without `close_notify`. Closing is left to the caller: never `shutdown` after this,
    /// which would send the FIN first.
    pub(super) fn reset_on_close(&self) {
        let tcp = match self {
            Conn::Plain(s) => s,
            Conn::Tls { stream, .. } => &stream.sock,
        };
        let _ = socket2::SockRef::from(tcp).set_linger(Some(std::time::Duration::ZERO));
    }

    /// Closes the connection (a TLS one says `close_notify` first).
    pub(super) fn shutdown(&mut self) {
        match self {
            Conn::Plain(s) => {
                let _ = s.shutdown(Shutdown::Both);
            }
            Conn::Tls { stream, .. } => {
                stream.conn.send_close_notify();
                let _ = stream.flush();
                let _ = stream.sock.shutdown(Shutdown::Both);
            }
        }
    }
}

impl Read for Conn {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Conn::Plain(s) => s.read(buf),
            Conn::Tls { stream, unread } if unread.is_empty() => stream.read(buf),
            Conn::Tls { unread, .. } => {
                let n = unread.len().min(buf.len());
                buf[..n].copy_from_slice(&unread[..n]);
                unread.drain(..n);
                Ok(n)
            }
        }
    }
}

impl Write for Conn {
    /// A TLS write is flushed at once, so a trickled byte leaves when it is written.
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Conn::Plain(s) => s.write(buf),
            Conn::Tls { stream, .. } => {
                let n = stream.write(buf)?;
                stream.flush()?;
                Ok(n)
            }
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Conn::Plain(s) => s.flush(),
            Conn::Tls { stream, .. } => stream.flush(),
        }
    }
}
