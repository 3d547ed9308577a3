//! Runs `ip` and `nft` and turns a failure into a [`FaultError`] that says what was run.

use core::fmt;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

/// A harness operation that failed: which, and why.
#[derive(Debug)]
#[non_exhaustive]
pub enum FaultError {
    /// A program exited unsuccessfully or could not be started.
    Command {
        /// The command line, for the message.
        command: String,
        /// Its exit status, or why it did not run.
        status: String,
        /// What it wrote to standard error (or the script it was fed, on `nft -f -`).
        stderr: String,
    },
    /// An operating-system call of the harness failed (opening the namespace, `setns`).
    Os {
        /// What the harness was doing.
        doing: String,
        /// The error.
        error: std::io::Error,
    },
}

impl fmt::Display for FaultError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FaultError::Command {
                command,
                status,
                stderr,
            } => write!(f, "`{command}` failed ({status}): {}", stderr.trim()),
            FaultError::Os { doing, error } => write!(f, "{doing}: {error}"),
        }
    }
}

impl std::error::Error for FaultError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            FaultError::Command { .. } => None,
            FaultError::Os { error, .. } => Some(error),
        }
    }
}

impl FaultError {
    /// Whether the failure was the kernel refusing for lack of permission.
    pub(crate) fn is_permission(&self) -> bool {
        match self {
            FaultError::Command { stderr, .. } => {
                stderr.contains("Operation not permitted") || stderr.contains("Permission denied")
            }
            FaultError::Os { error, .. } => error.kind() == std::io::ErrorKind::PermissionDenied,
        }
    }
}

/// Runs `program args` with `stdin` on its standard input: its standard output on success.
pub(crate) fn run(
    program: &Path,
    args: &[&str],
    stdin: Option<&str>,
) -> Result<String, FaultError> {
    let command = format!("{} {}", program.display(), args.join(" "));
    let failed = |status: String, stderr: String| FaultError::Command {
        command: command.clone(),
        status,
        stderr,
    };
    let mut child = Command::new(program)
        .args(args)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| failed("not started".into(), e.to_string()))?;
    if let (Some(script), Some(mut pipe)) = (stdin, child.stdin.take()) {
        // A write error shows up as the program's own failure below; dropping the pipe
        // closes its input.
        let _ = pipe.write_all(script.as_bytes());
    }
    let output = child
        .wait_with_output()
        .map_err(|e| failed("not awaited".into(), e.to_string()))?;
    if output.status.success() {
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    } else {
        let mut stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        if let Some(script) = stdin {
            stderr.push_str("\nscript:\n");
            stderr.push_str(script);
        }
        Err(failed(output.status.to_string(), stderr))
    }
}
