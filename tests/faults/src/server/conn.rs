//! One connection: read a request head, answer it from the script, until the client closes.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;

use super::{Recorded, Reply, Shared};

/// The largest request head read.
const MAX_HEAD: usize = 64 * 1024;

/// Serves requests on `stream` until it closes, fails or times out.
pub(super) fn serve(mut stream: TcpStream, shared: &Arc<Shared>) {
    let Ok(peer) = stream.peer_addr() else {
        return;
    };
    let mut buffer = Vec::new();
    while let Some(request) = read_request(&mut stream, peer, &mut buffer) {
        let reply = shared.update(|s| {
            let reply = s
                .script
                .get(s.requests.len())
                .or(s.script.last())
                .cloned()
                .unwrap_or_else(|| Reply::status(404));
            s.requests.push(request.clone());
            reply
        });
        let close = request
            .field("connection")
            .is_some_and(|v| v.eq_ignore_ascii_case("close"));
        if respond(&mut stream, &request, &reply, shared).is_err() || close {
            return;
        }
    }
}

/// Sends `reply` to `request`: its hold, its head (split if it says so), its body in chunks
/// with its pause.
fn respond(
    stream: &mut TcpStream,
    request: &Recorded,
    reply: &Reply,
    shared: &Shared,
) -> std::io::Result<()> {
    if reply.hold {
        shared.take_permit();
    }
    let answer = reply.answer(request.field("range"), request.field("if-range"));
    let (line, rest) = answer.head();
    match reply.head_gap {
        Some(gap) => {
            stream.write_all(line.as_bytes())?;
            stream.flush()?;
            std::thread::sleep(gap);
            stream.write_all(rest.as_bytes())?;
        }
        None => stream.write_all(format!("{line}{rest}").as_bytes())?,
    }
    let body = &reply.body[answer.from..answer.to];
    let mut sent = 0;
    while sent < body.len() {
        let mut end = (sent + reply.chunk).min(body.len());
        if let Some(pause) = reply.pause_at.filter(|&p| sent < p && p < end) {
            end = pause;
        }
        stream.write_all(&body[sent..end])?;
        shared.update(|s| s.body_bytes += (end - sent) as u64);
        sent = end;
        if reply.pause_at == Some(sent) {
            shared.take_permit();
        }
    }
    stream.flush()
}

/// Reads the next request's head (and discards its `Content-Length` body): `None` when the
/// connection closes, fails, times out or sends something that is not HTTP/1.1.
fn read_request(
    stream: &mut TcpStream,
    peer: SocketAddr,
    buffer: &mut Vec<u8>,
) -> Option<Recorded> {
    let end = loop {
        if let Some(at) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        if buffer.len() > MAX_HEAD {
            return None;
        }
        let mut chunk = [0; 4096];
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => return None,
            Ok(n) => buffer.extend_from_slice(&chunk[..n]),
        }
    };
    let head = String::from_utf8_lossy(&buffer[..end]).into_owned();
    buffer.drain(..end);
    let request = parse_head(&head, peer)?;
    let length: usize = request
        .field("content-length")
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    while buffer.len() < length {
        let mut chunk = [0; 4096];
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => return None,
            Ok(n) => buffer.extend_from_slice(&chunk[..n]),
        }
    }
    buffer.drain(..length);
    Some(request)
}

/// The request line and fields of `head`, which came from `peer`.
fn parse_head(head: &str, peer: SocketAddr) -> Option<Recorded> {
    let mut lines = head.split("\r\n");
    let mut parts = lines.next()?.split(' ');
    let (method, target) = (parts.next()?.to_owned(), parts.next()?.to_owned());
    let fields = lines
        .take_while(|line| !line.is_empty())
        .filter_map(|line| {
            let (name, value) = line.split_once(':')?;
            Some((name.trim().to_owned(), value.trim().to_owned()))
        })
        .collect();
    Some(Recorded {
        peer,
        method,
        target,
        fields,
    })
}
