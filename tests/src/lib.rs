//! # backstop-tests
//!
//! Cross-adapter scenarios for backstop against real HTTP on loopback. Two public tools for
//! scenario files (`tests/tests/*.rs`, one scenario each):
//!
//! - [`server::Server`]: a scripted HTTP/1.1 server on 127.0.0.1 (any status and headers,
//!   delays, hangs, resets, cut-off bodies, raw bytes, a representation served with byte
//!   ranges and faults at body offsets), counting and recording requests;
//! - [`adapters::for_each_adapter`]: runs a scenario once per adapter (ureq,
//!   the tower layer over smol and over tokio, reqwest), each through a new client of its own,
//!   on real or virtual time, and hands back a uniform [`adapters::Run`];
//! - [`request::TestRequest`]: a scenario's request, written once, sent by each adapter as its
//!   users send one.
//!
//! ```
//! use backstop_tests::adapters::{for_each_adapter, Clock};
//! use backstop_tests::server::{Reply, Server};
//! use backstop::Retrier;
//! use backstop_tests::TestRequest;
//!
//! for_each_adapter(|adapter| {
//!     let server = Server::always(Reply::status(404));
//!     let request = TestRequest::get(server.url("/missing"));
//!     let run = adapter.run(&Retrier::default(), request, Clock::Real);
//!     assert_eq!(run.status(), Some(404), "{adapter:?}");
//!     assert_eq!(server.requests(), 1);
//! });
//! ```

#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod adapters;
pub mod certs;
pub mod events;
pub mod greeter;
pub mod https;
pub mod middleware;
pub mod overhead;
pub mod request;
pub mod series;
pub mod server;
pub mod traced;

pub use request::TestRequest;

/// The root README's examples, compiled and run as doctests (`cargo test --workspace`).
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;
