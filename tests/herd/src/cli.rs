//! What the experiments' binaries share: their flags (each with a value), the output folder,
//! and how a run ends (figures written, checks held).

use std::error::Error;
use std::fmt::Display;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Instant;

/// The command line's flags, each with its value, in order.
///
/// # Errors
///
/// A flag without a value.
pub fn flags() -> Result<Vec<(String, String)>, String> {
    let mut it = std::env::args().skip(1);
    let mut pairs = Vec::new();
    while let Some(flag) = it.next() {
        let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        pairs.push((flag, value));
    }
    Ok(pairs)
}

/// `value` of `flag`, read as a `T`.
///
/// # Errors
///
/// What `T`'s parser says, with the flag and the value.
pub fn number<T: FromStr>(flag: &str, value: &str) -> Result<T, String>
where
    T::Err: Display,
{
    value.parse().map_err(|e| format!("{flag} {value}: {e}"))
}

/// The experiment's output folder by default: `docs/<name>` at the repository's root.
#[must_use]
pub fn docs_dir(name: &str) -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .join("docs")
        .join(name)
}

/// The parsed arguments, or the error printed and the process ended with status 2.
pub fn or_exit<T>(parsed: Result<T, String>) -> T {
    parsed.unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(2);
    })
}

/// Ends a run started at `started`: says where the figures went (or exits with status 1 if
/// they could not be written), then exits with status 1 and `missed` if a check failed.
pub fn finish(
    out: &Path,
    started: Instant,
    written: Result<(), Box<dyn Error>>,
    held: bool,
    missed: &str,
) {
    if let Err(e) = written {
        eprintln!("could not write the figures to {}: {e}", out.display());
        std::process::exit(1);
    }
    let shown = out.canonicalize().unwrap_or_else(|_| out.to_path_buf());
    println!(
        "\nFigures and tables written to {} in {:.1} s.",
        shown.display(),
        started.elapsed().as_secs_f64()
    );
    if !held {
        eprintln!("{missed}");
        std::process::exit(1);
    }
}
