//! The examples' stand-in for a real server: 127.0.0.1, one connection per request, each
//! answered with the next status line of the script (and closed).

use std::io::{Read, Write};

/// A server answering its connections with `answers` in turn; returns its URL.
pub fn serve(answers: &'static [&'static str]) -> std::io::Result<String> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let url = format!("http://{}/orders", listener.local_addr()?);
    std::thread::spawn(move || {
        for (stream, answer) in listener.incoming().zip(answers) {
            let Ok(mut stream) = stream else { continue };
            let _ = stream.read(&mut [0; 4096]);
            let head = "Content-Length: 2\r\nConnection: close\r\n\r\nok";
            let _ = write!(stream, "HTTP/1.1 {answer}\r\n{head}");
        }
    });
    Ok(url)
}
