//! # backstop-soak
//!
//! backstop under load and under faults, on loopback:
//!
//! - [`faulty_server::FaultyServer`]: an HTTP/1.1 server on 127.0.0.1 that answers each request
//!   it reads with a fault drawn from a seeded mix (503 with and without `Retry-After`, resets
//!   before and after the response head, stalls past the attempt timeout, trickled heads) and
//!   counts the requests it actually read;
//! - [`soak`]: many operations through every adapter at once against it, with a shared budget,
//!   checked for lost operations, overrun deadlines, miscounted attempts and leaked descriptors;
//! - [`load`]: throughput of the async adapters beside their bare clients at a fixed
//!   concurrency, and the memory an operation in flight holds;
//! - [`bare`] and [`clients`]: the bare clients, and backstop's async front doors around them
//!   (the tower layer over hyper-util on tokio and over `backstop::smol::HttpService` on smol);
//! - [`peers`]: one attempt of a peer's that retries by its own loop (backon's) over reqwest;
//! - [`poll_server::PollServer`]: the one-thread, busy-polling server the per-request benches
//!   measure against;
//! - [`process`]: open descriptors and resident memory of this process, from `/proc`.
//!
//! Commands: `cargo run --release -p backstop-soak --bin soak`, `... --bin load`,
//! `cargo bench -p backstop-soak --bench per_request`; `cargo test -p backstop-soak` runs a
//! short soak.

#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod bare;
pub mod clients;
pub mod faulty_server;
pub mod load;
pub mod peers;
pub mod poll_server;
pub mod process;
pub mod soak;
