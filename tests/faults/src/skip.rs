//! Why the fault suite cannot run here, and what a test does about it.
//!
//! Making namespaces, veth pairs and nftables rules takes root's CAP_NET_ADMIN (and
//! CAP_SYS_ADMIN for `ip netns`'s mounts) and the `ip` and `nft` programs. A machine without
//! them skips the suite, loudly; where [`REQUIRED_VAR`] is `1` (CI) a skip is a failure, so a
//! machine that lost a capability cannot pass the suite by skipping it.

use core::fmt;
use std::path::PathBuf;

/// The environment variable under which a [`Skip`] fails the test instead (`1`).
pub const REQUIRED_VAR: &str = "BACKSTOP_FAULTS_REQUIRED";

/// CAP_NET_ADMIN's bit in the capability sets of `/proc/self/status` (linux/capability.h).
const CAP_NET_ADMIN: u32 = 12;
/// CAP_SYS_ADMIN's bit: `ip netns add` bind-mounts the namespace under `/var/run/netns`.
const CAP_SYS_ADMIN: u32 = 21;

/// Why a [`crate::FaultNet`] cannot be made on this machine.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Skip {
    /// Not running as root (effective uid shown).
    NotRoot(u32),
    /// Root, but without this capability (a container that dropped it).
    NoCapability(&'static str),
    /// This program is not installed (`apt-get install nftables iproute2`).
    MissingTool(&'static str),
    /// `ip` or `nft` refused for lack of permission despite the capabilities (a sandbox
    /// that filters the calls): its message.
    NotPermitted(String),
    /// Setting up failed for another reason, on a machine that looked able: its message. A
    /// bug or a broken machine, never an environment to skip on (see [`Skip::is_environment`]).
    SetupFailed(String),
}

impl Skip {
    /// Whether the machine lacks what the suite needs (a reason to skip), rather than having
    /// it and failing anyway ([`Skip::SetupFailed`]).
    #[must_use]
    pub fn is_environment(&self) -> bool {
        !matches!(self, Skip::SetupFailed(_))
    }
}

impl fmt::Display for Skip {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Skip::NotRoot(uid) => write!(f, "not root (euid {uid}): namespaces need root"),
            Skip::NoCapability(cap) => write!(f, "root without {cap}"),
            Skip::MissingTool(tool) => write!(
                f,
                "`{tool}` is not installed (apt-get install nftables iproute2)"
            ),
            Skip::NotPermitted(message) => write!(f, "not permitted: {message}"),
            Skip::SetupFailed(message) => write!(f, "setting up the namespace failed: {message}"),
        }
    }
}

impl std::error::Error for Skip {}

/// The `ip` and `nft` programs, found on `PATH` or in the sbin directories.
#[derive(Clone, Debug)]
pub(crate) struct Tools {
    /// `ip` (iproute2).
    pub(crate) ip: PathBuf,
    /// `nft` (nftables).
    pub(crate) nft: PathBuf,
}

/// Checks that this process can make namespaces and rules: root, both capabilities, both
/// programs.
pub(crate) fn probe() -> Result<Tools, Skip> {
    let status = std::fs::read_to_string("/proc/self/status")
        .map_err(|e| Skip::SetupFailed(format!("reading /proc/self/status: {e}")))?;
    let euid = status_field(&status, "Uid:")
        .and_then(|uids| uids.split_whitespace().nth(1)?.parse::<u32>().ok())
        .ok_or_else(|| Skip::SetupFailed("no effective uid in /proc/self/status".into()))?;
    if euid != 0 {
        return Err(Skip::NotRoot(euid));
    }
    let effective = status_field(&status, "CapEff:")
        .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
        .ok_or_else(|| Skip::SetupFailed("no CapEff in /proc/self/status".into()))?;
    for (bit, name) in [
        (CAP_NET_ADMIN, "CAP_NET_ADMIN"),
        (CAP_SYS_ADMIN, "CAP_SYS_ADMIN"),
    ] {
        if effective & (1 << bit) == 0 {
            return Err(Skip::NoCapability(name));
        }
    }
    Ok(Tools {
        ip: find_program("ip").ok_or(Skip::MissingTool("ip"))?,
        nft: find_program("nft").ok_or(Skip::MissingTool("nft"))?,
    })
}

/// The value of the `/proc/self/status` line that starts with `name`.
fn status_field<'a>(status: &'a str, name: &str) -> Option<&'a str> {
    status.lines().find_map(|line| line.strip_prefix(name))
}

/// `name`'s path on `PATH`, or in the sbin directories a non-login root shell may lack.
fn find_program(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin", "/usr/bin", "/bin"].map(PathBuf::from))
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
}
