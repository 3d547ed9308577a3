//! `cargo run --example download -- URL FILE`: saves URL to FILE through reqwest 0.13 with
//! backstop's middleware and resumable bodies (`RetryMiddleware::resume_bodies`): a body cut
//! by a reset, an early end or a stall goes on from the byte it stopped at (`Range` with
//! `If-Range`), and a file that changed on the server is never spliced.
//!
//! The policy is `Policy::default()` but for one number: 1 hour in all instead of 15 s, since a
//! download outlives the default deadline (the deadline bounds the head and the resumes, not a
//! body that keeps coming). The 5 s a body may go without a byte stays.
//!
//! The bytes go to a temporary file next to FILE, renamed to FILE only once the body ended
//! cleanly with as many bytes as its `Content-Length` declared; on any failure it is deleted.
//! Exit 0: FILE is complete. Exit 1: it failed (one line on stderr). Exit 2: usage.

use std::fs::File;
use std::io::{BufWriter, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use backstop::body::BodyError;
use backstop::reqwest::reqwest_middleware::ClientBuilder;
use backstop::reqwest::{Retrier, RetryMiddleware};
use backstop::{Outcome, Policy};
use indicatif::{ProgressBar, ProgressStyle};
use reqwest::Url;

const USAGE: &str = "usage: cargo run --example download -- URL FILE";
const DEADLINE: Duration = Duration::from_secs(60 * 60);

fn main() -> ExitCode {
    let (url, file) = match arguments(std::env::args().skip(1)) {
        Ok(arguments) => arguments,
        Err(problem) => {
            eprintln!("download: {problem}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match download(&url, &file) {
        Ok(saved) => {
            println!("saved {} bytes to {}", saved.bytes, file.display());
            // The outcome is the head's; each resume is an attempt of the same operation,
            // reported by an event (`EventKind::BodyResumed`) and counted here.
            match saved.outcome {
                Some(outcome) => println!("the response's head: {outcome}"),
                None => println!("the response carried no outcome"),
            }
            println!("resumed {} time(s)", saved.resumes);
            ExitCode::SUCCESS
        }
        Err(problem) => {
            eprintln!("download: {problem}");
            ExitCode::FAILURE
        }
    }
}

/// The URL and the file, from exactly two arguments.
fn arguments(mut args: impl Iterator<Item = String>) -> Result<(Url, PathBuf), String> {
    let (Some(url), Some(file), None) = (args.next(), args.next(), args.next()) else {
        return Err("expected two arguments, URL and FILE".into());
    };
    let url = Url::parse(&url).map_err(|e| format!("{url:?} is not a URL ({e})"))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!("{url} is not an http or https URL"));
    }
    Ok((url, PathBuf::from(file)))
}

/// What a download that succeeded leaves to say.
struct Saved {
    bytes: u64,
    outcome: Option<Outcome>,
    /// How many times the body resumed.
    resumes: u32,
}

fn download(url: &Url, file: &Path) -> Result<Saved, String> {
    // This workspace builds reqwest on rustls without a default crypto provider.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let policy = Policy::builder()
        .max_elapsed(DEADLINE)
        .build()
        .map_err(|e| format!("the policy: {e}"))?;
    println!(
        "GET {url} with backstop's defaults, but {} h in all instead of 15 s (a download \
         outlives the default deadline), {:?} at most without a byte",
        DEADLINE.as_secs() / 3600,
        policy.body_idle_timeout()
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("no runtime: {e}"))?;
    runtime.block_on(fetch(policy, url, file))
}

async fn fetch(policy: Policy, url: &Url, file: &Path) -> Result<Saved, String> {
    // A body that cannot resume (no strong validator or no length) is reqwest's own: the
    // client keeps it to the same limit without a byte.
    let http = reqwest::Client::builder()
        .read_timeout(policy.body_idle_timeout())
        .build()
        .map_err(|e| format!("no HTTP client: {e}"))?;
    let resumes = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
    let counted = resumes.clone();
    let retrier = Retrier::new(policy).on_event(move |event| {
        if let backstop::EventKind::BodyResumed { offset, cause, .. } = event.kind {
            counted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            println!("the body broke off ({cause}) after {offset} bytes: resuming");
        }
    });
    let client = ClientBuilder::new(http.clone())
        .with(RetryMiddleware::new(retrier).resume_bodies(http))
        .build();
    let mut response = client
        .get(url.clone())
        .send()
        .await
        .map_err(|e| format!("GET failed: {e}"))?;
    let status = response.status();
    if !status.is_success() {
        return Err(format!("the server answered {status}"));
    }
    let outcome = response.extensions().get::<Outcome>().copied();
    let declared = declared_length(&response);
    let mut part = PartFile::next_to(file)?;
    let bytes = save(&mut response, &mut part, declared).await?;
    if let Some(declared) = declared.filter(|&declared| declared != bytes) {
        return Err(format!(
            "the body ended after {bytes} of its {declared} declared bytes"
        ));
    }
    part.persist_as(file)?;
    let resumes = resumes.load(std::sync::atomic::Ordering::Relaxed);
    Ok(Saved {
        bytes,
        outcome,
        resumes,
    })
}

/// The body, chunk by chunk, into `part`: the bytes it held when it ended cleanly.
async fn save(
    response: &mut reqwest::Response,
    part: &mut PartFile,
    declared: Option<u64>,
) -> Result<u64, String> {
    let mut progress = Progress::new(declared);
    let mut bytes = 0u64;
    // Bounded: the body ends, or fails once its operation has no attempt or time left.
    loop {
        let chunk = match response.chunk().await {
            Ok(Some(chunk)) => chunk,
            Ok(None) => break,
            Err(e) => {
                progress.abandon();
                return Err(body_failure(&e, bytes));
            }
        };
        if let Err(e) = part.write(&chunk) {
            progress.abandon();
            return Err(e);
        }
        bytes += chunk.len() as u64;
        progress.advance(bytes);
    }
    progress.finish();
    Ok(bytes)
}

/// The `Content-Length` the response declared: the bytes as sent, which is what is saved (a
/// resumable GET asks for `Accept-Encoding: identity`, and this reqwest decodes nothing).
fn declared_length(response: &reqwest::Response) -> Option<u64> {
    response
        .headers()
        .get(reqwest::header::CONTENT_LENGTH)?
        .to_str()
        .ok()?
        .parse()
        .ok()
}

/// One line for a body that failed: backstop's reason when it ended the body, else reqwest's.
fn body_failure(error: &reqwest::Error, bytes: u64) -> String {
    let mut next: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(e) = next {
        if let Some(body) = e.downcast_ref::<BodyError>() {
            return format!("{body}; nothing saved");
        }
        next = e.source();
    }
    format!("the body failed after {bytes} bytes ({error}); nothing saved")
}

/// The temporary file next to the destination, deleted when dropped unless it was persisted.
struct PartFile {
    path: PathBuf,
    out: Option<BufWriter<File>>,
}

impl PartFile {
    /// A new file `FILE.<pid>.part` in FILE's directory (the same file system: the rename is
    /// atomic; the pid keeps two downloads to one FILE apart).
    fn next_to(file: &Path) -> Result<Self, String> {
        let name = file
            .file_name()
            .ok_or_else(|| format!("{} does not name a file", file.display()))?;
        let mut part = name.to_os_string();
        part.push(format!(".{}.part", std::process::id()));
        let path = file.with_file_name(part);
        let out = File::options()
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(|e| format!("cannot create {}: {e}", path.display()))?;
        Ok(PartFile {
            path,
            out: Some(BufWriter::new(out)),
        })
    }

    fn write(&mut self, bytes: &[u8]) -> Result<(), String> {
        let out = self.out.as_mut().ok_or("the file is closed")?;
        out.write_all(bytes)
            .map_err(|e| format!("cannot write {}: {e}", self.path.display()))
    }

    /// Flushed, synced to disk, then renamed to `file` (and the rename synced, on Unix).
    fn persist_as(mut self, file: &Path) -> Result<(), String> {
        let failed =
            |what: &str, e: std::io::Error| format!("cannot {what} {}: {e}", file.display());
        let out = self.out.take().ok_or("the file is closed")?;
        let out = out
            .into_inner()
            .map_err(|e| failed("write", e.into_error()))?;
        out.sync_all().map_err(|e| failed("sync", e))?;
        drop(out);
        std::fs::rename(&self.path, file).map_err(|e| failed("rename to", e))?;
        #[cfg(unix)]
        if let Some(dir) = file.parent().filter(|d| !d.as_os_str().is_empty()) {
            File::open(dir)
                .and_then(|d| d.sync_all())
                .map_err(|e| failed("sync the directory of", e))?;
        }
        // Renamed: nothing left to delete.
        self.path = PathBuf::new();
        Ok(())
    }
}

impl Drop for PartFile {
    fn drop(&mut self) {
        drop(self.out.take());
        if !self.path.as_os_str().is_empty() {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// A bar when stderr is a terminal; else a line on stdout per 10 % (per MiB without a length).
enum Progress {
    Bar(ProgressBar),
    Lines { length: Option<u64>, shown: u64 },
}

const MIB: u64 = 1024 * 1024;

impl Progress {
    fn new(length: Option<u64>) -> Self {
        if !std::io::stderr().is_terminal() {
            return Progress::Lines { length, shown: 0 };
        }
        let bar = match length {
            Some(length) => ProgressBar::new(length).with_style(
                ProgressStyle::with_template(
                    "{bar:40} {bytes}/{total_bytes} {bytes_per_sec} eta {eta}",
                )
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
            ),
            None => ProgressBar::new_spinner().with_style(
                ProgressStyle::with_template("{spinner} {bytes} {bytes_per_sec}")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            ),
        };
        Progress::Bar(bar)
    }

    fn advance(&mut self, bytes: u64) {
        match self {
            Progress::Bar(bar) => bar.set_position(bytes),
            Progress::Lines { length, shown } => {
                // The step reached: tenths of the length, or MiB.
                let step = match *length {
                    Some(0) => return,
                    Some(length) => (bytes.saturating_mul(10) / length).min(10),
                    None => bytes / MIB,
                };
                if step > *shown {
                    *shown = step;
                    match *length {
                        Some(length) => println!("{:>3} % ({bytes} of {length} bytes)", step * 10),
                        None => println!("{step} MiB"),
                    }
                }
            }
        }
    }

    fn finish(self) {
        if let Progress::Bar(bar) = self {
            bar.finish_and_clear();
        }
    }

    fn abandon(&self) {
        if let Progress::Bar(bar) = self {
            bar.abandon();
        }
    }
}
