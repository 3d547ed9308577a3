//! One attempt of a peer's over reqwest, as the per-request benches run the peers that retry
//! by their own loop (backon, and a bare loop of three tries): the GET sent, its body read to
//! its end, a 5xx being the error the peer retries.

/// How one attempt of a peer's ended when it did not end in a response the peer passes on.
#[derive(Debug)]
pub enum PeerError {
    /// A 5xx the peer retries.
    Status(u16),
    /// reqwest's own.
    Reqwest(reqwest::Error),
}

impl std::fmt::Display for PeerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PeerError::Status(status) => write!(f, "status {status}"),
            PeerError::Reqwest(e) => write!(f, "reqwest: {e}"),
        }
    }
}

impl std::error::Error for PeerError {}

/// GETs `url` through `client` and reads the body: the status, or a 5xx as
/// [`PeerError::Status`].
pub async fn reqwest_attempt(client: &reqwest::Client, url: &str) -> Result<u16, PeerError> {
    let r = client.get(url).send().await.map_err(PeerError::Reqwest)?;
    let status = r.status().as_u16();
    r.bytes().await.map_err(PeerError::Reqwest)?;
    if status >= 500 {
        Err(PeerError::Status(status))
    } else {
        Ok(status)
    }
}
