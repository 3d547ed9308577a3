//! # backstop::tokio
//!
//! tokio as backstop's runtime: [`TokioRuntime`], tokio's clock and timers (it follows
//! `tokio::time::pause()`), for the tower layer over hyper-util's pooled client
//! (`backstop::tower`, feature `tower`), for the reqwest middleware (which uses it by
//! default), and for [`run`] over any other client. backstop ships no tokio client of its own:
//! hyper-util's legacy `Client`, under the tower layer, is the one to retry: the hyperium
//! project's own pooled client, the engine under reqwest, without reqwest's extra layers (its
//! own redirects, TLS stacks and a large build); its errors' `is_connect()` is exactly "never
//! sent".
//!
//! ```
//! use backstop::tokio::{run, Attempt, Retrier, TokioRuntime};
//!
//! let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
//! let done = rt.block_on(run(
//!     &Retrier::default(),
//!     &TokioRuntime::new(),
//!     http::Request::get("http://example.invalid/").body(())?,
//!     |attempt: Attempt<()>| async move {
//!         // Send `attempt.request` with your client; here, answer 200 at once.
//!         let _ = attempt.request;
//!         Ok::<_, std::io::Error>(http::Response::new(()))
//!     },
//! ))?;
//! assert_eq!(done.outcome.attempts, 1);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod runtime;

pub use crate::prelude::*;
pub use runtime::TokioRuntime;
