//! ureq's resolver, its failures marked as DNS failures.
//!
//! Rule: an unknown host is `ErrorKind::Dns` on every adapter. ureq's resolver reports a
//! failed `getaddrinfo` as a plain I/O error, like a refused connection; marking it with
//! [`ResolveError`] tells the two apart.

use crate::classify::ResolveError;
use ureq::config::Config;
use ureq::http::Uri;
use ureq::unversioned::resolver::{DefaultResolver, ResolvedSocketAddrs, Resolver};
use ureq::unversioned::transport::NextTimeout;

/// [`DefaultResolver`], with its I/O errors wrapped in a [`ResolveError`].
#[derive(Debug, Default)]
pub(crate) struct MarkedResolver {
    inner: DefaultResolver,
}

impl Resolver for MarkedResolver {
    fn resolve(
        &self,
        uri: &Uri,
        config: &Config,
        timeout: NextTimeout,
    ) -> Result<ResolvedSocketAddrs, ureq::Error> {
        self.inner
            .resolve(uri, config, timeout)
            .map_err(|e| match e {
                ureq::Error::Io(io) => ureq::Error::Io(ResolveError::new(io).into()),
                other => other,
            })
    }
}
