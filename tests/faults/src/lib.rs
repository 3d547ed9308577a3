//! # backstop-faults
//!
//! backstop under network faults the *kernel* injects, not a server that misbehaves: a
//! [`FaultNet`] is a network namespace joined to the host by a veth pair, a [`Server`] runs
//! inside it ([`FaultNet::serve`]), and nftables rules in the namespace drop, reset or
//! blackhole the traffic between the two ([`FaultNet::drop_all`],
//! [`FaultNet::reset_established`], [`FaultNet::blackhole_new`], [`FaultNet::heal`]), or one
//! connection alone ([`FaultNet::drop_connection`], [`FaultNet::reset_connection`]), several
//! at once ([`FaultNet::inject`]). The
//! client on the host sees what it would see on a real network: a connect that never
//! completes, an RST from the kernel, a connection gone silent mid-body that TCP resumes once
//! healed. Nothing leaves the machine.
//!
//! The suite needs root with CAP_NET_ADMIN and CAP_SYS_ADMIN, and `ip` and `nft`
//! (`apt-get install nftables iproute2`). Without them each test prints `SKIPPED: reason`
//! and passes, unless [`REQUIRED_VAR`] is `1` (`.ci/run` sets it): then it fails. Run it
//! with `cargo test -p backstop-faults`; the crate's README says more.
//!
//! ```no_run
//! use std::time::Duration;
//! use backstop_faults::{body, FaultNet, Reply, Server};
//!
//! let Some(net) = FaultNet::for_test() else { return };
//! let reply = Reply::status(200).body(body::pattern(8 << 20)).resumable().pause_body_at(1 << 20);
//! let server = net
//!     .serve(|| Server::start_on(net.server_ip().into(), [reply]))
//!     .expect("entered the namespace")
//!     .expect("bound");
//! // ... a client on this thread or another GETs server.url("/big") ...
//! assert!(server.wait_for_body_bytes(1 << 20, Duration::from_secs(5)));
//! net.drop_all().expect("nft");
//! server.release(); // the rest of the body now goes nowhere: the client stalls
//! net.heal().expect("nft"); // TCP retransmits, and the body resumes
//! ```

#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod body;
mod command;
mod fault;
mod net;
mod progress;
mod server;
mod skip;

pub use command::FaultError;
pub use fault::Fault;
pub use net::FaultNet;
pub use progress::{BodyRead, Progress};
pub use server::{Recorded, Reply, Server, IO_TIMEOUT};
pub use skip::{Skip, REQUIRED_VAR};
