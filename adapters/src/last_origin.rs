//! A thread's last answer for one origin as a request wrote it: its scheme, and its host and
//! port without the userinfo (compared byte for byte: no parsing, no lock, no hash).
//!
//! Rule: a client that talks to one origin finds what it worked out for that origin (its
//! gate, its metrics' server labels) without working it out again. Another spelling of the
//! same origin (case, a default port written out) only misses: the answer is worked out
//! afresh and is the same. The userinfo names no origin and is never kept.

use std::cell::RefCell;
use std::thread::LocalKey;

/// `authority` without its userinfo: the host and port as written.
pub(crate) fn without_userinfo(authority: &str) -> &str {
    authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host)
}

/// The value kept for one origin as written.
pub(crate) struct Last<T> {
    scheme: String,
    authority: String,
    value: T,
}

/// A thread's slot: `thread_local! { static X: Slot<T> = const { RefCell::new(None) }; }`.
pub(crate) type Slot<T> = RefCell<Option<Last<T>>>;

/// A thread's cache, the key of its [`Slot`].
pub(crate) type Cache<T> = LocalKey<Slot<T>>;

/// What `read` makes of the value `cache` keeps for `scheme` and `authority` (as written: its
/// userinfo, if any, is set aside); `None` when it keeps another origin's or none, or when the
/// thread's locals are being torn down.
pub(crate) fn find<T, R>(
    cache: &'static Cache<T>,
    scheme: &str,
    authority: &str,
    read: impl FnOnce(&T) -> Option<R>,
) -> Option<R> {
    cache
        .try_with(|last| {
            let last = last.borrow();
            let last = last.as_ref()?;
            // The kept authority has no userinfo: one written without any (the common case)
            // is compared as it is, not searched for an `@` first.
            let same = last.authority == authority
                || (authority.contains('@') && last.authority == without_userinfo(authority));
            if !same || last.scheme != scheme {
                return None;
            }
            read(&last.value)
        })
        .ok()
        .flatten()
}

/// The value `cache` keeps for `scheme` and `authority` (as [`find`] finds it), else the one
/// `make` makes, kept in its place for the next operation (under the authority without its
/// userinfo). A thread whose locals are being torn down has no cache: `make` is called.
#[cfg(any(feature = "ureq", feature = "metrics"))]
pub(crate) fn find_or_make<T: Clone>(
    cache: &'static Cache<T>,
    scheme: &str,
    authority: &str,
    make: impl FnOnce() -> T,
) -> T {
    if let Some(known) = find(cache, scheme, authority, |v| Some(v.clone())) {
        return known;
    }
    let value = make();
    let host = without_userinfo(authority);
    remember(cache, scheme.to_owned(), host.to_owned(), value.clone());
    value
}

/// Keeps `value` as the thread's answer for `scheme` and `authority` (without its userinfo),
/// in place of the last one (nothing, while the thread's locals are being torn down).
pub(crate) fn remember<T>(cache: &'static Cache<T>, scheme: String, authority: String, value: T) {
    let last = Last {
        scheme,
        authority,
        value,
    };
    let _ = cache.try_with(|cache| *cache.borrow_mut() = Some(last));
}

#[cfg(test)]
mod tests {
    use super::*;

    thread_local! {
        static CACHE: Slot<u32> = const { RefCell::new(None) };
    }

    #[test]
    fn an_authority_is_found_as_written_with_or_without_its_userinfo() {
        let found = |scheme, authority| find(&CACHE, scheme, authority, |v| Some(*v));
        assert_eq!(found("http", "h:1"), None);
        remember(
            &CACHE,
            "http".into(),
            without_userinfo("u:pw@h:1").into(),
            7,
        );
        assert_eq!(found("http", "h:1"), Some(7));
        assert_eq!(found("http", "u:pw@h:1"), Some(7));
        assert_eq!(found("http", "other@h:1"), Some(7));
        assert_eq!(found("http", "u@h:2"), None);
        assert_eq!(found("http", "h:2"), None);
        assert_eq!(found("https", "h:1"), None);
        // `@` inside the host part of what is kept cannot be: the kept text has none.
        assert_eq!(found("http", "h:1@"), None);
    }
}
