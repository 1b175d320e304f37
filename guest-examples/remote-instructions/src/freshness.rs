//! How long a fetched text is used before it is asked for again: the server's
//! `Cache-Control: max-age`, never longer than the operator's `refresh_seconds`; `no-cache`
//! and `no-store` mean "ask every time" (then the operator's refresh still bounds the
//! requests: the plugin asks at most once per assembly).

use std::time::Duration;

/// The `max-age` of a `Cache-Control` value, in seconds: `Some(0)` for `no-cache` or
/// `no-store`, `None` when it says nothing about freshness.
pub(crate) fn max_age(cache_control: &str) -> Option<u64> {
    let mut found = None;
    for directive in cache_control.split(',') {
        let directive = directive.trim().to_ascii_lowercase();
        if directive == "no-cache" || directive == "no-store" {
            return Some(0);
        }
        if let Some(seconds) = directive.strip_prefix("max-age=") {
            found = seconds.trim_matches('"').parse().ok();
        }
    }
    found
}

/// How long a text with the server's `max_age` stays fresh, under the operator's `refresh`.
pub(crate) fn fresh_for(max_age: Option<u64>, refresh: Duration) -> Duration {
    match max_age {
        Some(seconds) => Duration::from_secs(seconds).min(refresh),
        None => refresh,
    }
}
