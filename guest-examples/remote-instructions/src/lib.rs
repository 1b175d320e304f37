//! `remote-instructions`: a document fetched over HTTPS — the team's instructions, a policy,
//! a runbook — as one dynamic section. The operator grants the plugin the document's origin
//! and names the credential the host adds to its requests; the plugin never sees it.
//!
//! The document is fetched in `init` and again only when it may have changed: after
//! `refresh_seconds`, or sooner when the server's `Cache-Control: max-age` says so. A refresh
//! sends `If-None-Match` with the document's `ETag`, so an unchanged document costs the
//! server a `304` and no body. Between refreshes an assembly makes no request, and no call
//! into the plugin either: every answer asks the host to keep it until the next refresh is
//! due (`prompt_plugin::keep_for`, contract 0.3.0), so the section costs what a fixed one
//! does. A refresh that fails keeps the last text (and logs a warning); a fetch in `init`
//! that fails fails the load.
//!
//! The text reaches the prompt byte for byte: it is the value of a dynamic variable the
//! section references, so `{{` in the document is never read as a template.

mod fetch;
mod freshness;
#[cfg(test)]
mod tests;

use std::time::{Duration, Instant};

use prompt_plugin::{config, declare, log, AssembleContext, Error, Plugin};
use serde::Deserialize;

use fetch::{Fetched, Target};

/// The longest `refresh_seconds` may be: a year. A longer one would overflow the clock
/// arithmetic of `fresh_until` (and trap the plugin) long before it meant anything.
const MAX_REFRESH_SECONDS: u64 = 365 * 24 * 3600;

/// The most `max_bytes` may be (the host's per-call output cap is 1 MiB).
const MAX_BYTES_LIMIT: usize = 256 * 1024;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    /// The document: `https://HOST[:PORT]/PATH` (`http://` on loopback).
    url: String,
    /// Seconds a fetched text is used before it is revalidated.
    #[serde(default = "default_refresh_seconds")]
    refresh_seconds: u64,
    /// The most bytes of the document; a longer one is refused.
    #[serde(default = "default_max_bytes")]
    max_bytes: usize,
    /// The section name.
    #[serde(default = "default_section")]
    section: String,
    /// Render order (the tool-guidance band is 100–199).
    #[serde(default = "default_order")]
    order: f64,
    /// The line before the document (operator text: may reference variables); "" for none.
    #[serde(default)]
    heading: String,
    /// The variable that holds the document's text; the section references it.
    #[serde(default = "default_variable")]
    variable: String,
}

fn default_refresh_seconds() -> u64 {
    300
}

fn default_max_bytes() -> usize {
    64 * 1024
}

fn default_section() -> String {
    "remote:instructions".to_owned()
}

fn default_order() -> f64 {
    130.0
}

fn default_variable() -> String {
    "remote_instructions".to_owned()
}

struct RemoteInstructions {
    target: Target,
    refresh: Duration,
    max_bytes: usize,
    section: String,
    order: f64,
    heading: String,
    variable: String,
    /// The last text fetched, its `ETag`, and until when it is used without asking.
    text: String,
    etag: Option<String>,
    fresh_until: Instant,
}

impl RemoteInstructions {
    /// Validate the config; fetches nothing, so it runs natively in tests.
    fn from_config(config: Config) -> Result<Self, Error> {
        let target = Target::parse(&config.url)
            .map_err(|e| Error::invalid_input(format!("invalid config: url: {e}")))?;
        if !(1..=MAX_REFRESH_SECONDS).contains(&config.refresh_seconds) {
            return Err(Error::invalid_input(format!(
                "invalid config: refresh_seconds: {} is not between 1 and {MAX_REFRESH_SECONDS}",
                config.refresh_seconds
            )));
        }
        if !(1..=MAX_BYTES_LIMIT).contains(&config.max_bytes) {
            return Err(Error::invalid_input(format!(
                "invalid config: max_bytes: {} is not between 1 and {MAX_BYTES_LIMIT}",
                config.max_bytes
            )));
        }
        if !is_variable_name(&config.variable) {
            return Err(Error::invalid_input(format!(
                "invalid config: variable: \"{}\" is not a variable name (^[a-z][a-z0-9_]*$)",
                config.variable
            )));
        }
        Ok(RemoteInstructions {
            target,
            refresh: Duration::from_secs(config.refresh_seconds),
            max_bytes: config.max_bytes,
            section: config.section,
            order: config.order,
            heading: config.heading,
            variable: config.variable,
            text: String::new(),
            etag: None,
            fresh_until: Instant::now(),
        })
    }

    /// Take a fetch's outcome: a new text replaces the old, a `304` keeps it; either way the
    /// text is fresh for the server's `max-age` (capped at `refresh`) or `refresh`.
    fn take(&mut self, fetched: Fetched, now: Instant) {
        let max_age = match fetched {
            Fetched::NotModified { max_age } => max_age,
            Fetched::Text {
                text,
                etag,
                max_age,
            } => {
                self.text = text;
                self.etag = etag;
                max_age
            }
        };
        self.fresh_until = now + freshness::fresh_for(max_age, self.refresh);
    }

    /// Revalidate when the text is stale; a failure keeps the last text for another
    /// `refresh` and says why in the log.
    /// Refresh the text if it is stale, and let the host keep the answer being given until
    /// the next refresh is due.
    fn refresh_if_stale(&mut self) {
        self.refresh_at(Instant::now());
        prompt_plugin::keep_for(self.fresh_until.saturating_duration_since(Instant::now()));
    }

    fn refresh_at(&mut self, now: Instant) {
        if now < self.fresh_until {
            return;
        }
        match fetch::get(&self.target, self.etag.as_deref(), self.max_bytes) {
            Ok(fetched) => self.take(fetched, now),
            Err(e) => {
                log::warn(format!(
                    "{}: {e}; keeping the text fetched before",
                    self.target
                ));
                self.fresh_until = now + self.refresh;
            }
        }
    }

    /// The section text: empty when the document is (so the host drops the section), else
    /// the heading and a reference to the variable.
    fn section(&self) -> String {
        if self.text.is_empty() {
            return String::new();
        }
        let reference = format!("{{{{{}}}}}", self.variable);
        if self.heading.is_empty() {
            reference
        } else {
            format!("{}\n\n{reference}", self.heading)
        }
    }
}

/// `^[a-z][a-z0-9_]*$`, the host's rule for variable names.
fn is_variable_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    bytes.next().is_some_and(|b| b.is_ascii_lowercase())
        && bytes.all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

impl Plugin for RemoteInstructions {
    fn init(config: serde_json::Value) -> Result<Self, Error> {
        let mut plugin = Self::from_config(config::parse(config)?)?;
        let fetched = fetch::get(&plugin.target, None, plugin.max_bytes)
            .map_err(|e| Error::failed(format!("{}: {e}", plugin.target)))?;
        plugin.take(fetched, Instant::now());
        declare::dynamic_variable(&plugin.variable)?;
        declare::dynamic_section(&plugin.section, plugin.order)?;
        Ok(plugin)
    }

    fn variable(&mut self, name: &str, _cx: &AssembleContext) -> Result<Option<String>, Error> {
        if name != self.variable {
            return Err(Error::invalid_input(format!(
                "no dynamic variable \"{name}\""
            )));
        }
        self.refresh_if_stale();
        Ok(Some(self.text.clone()))
    }

    fn section_text(&mut self, name: &str, _cx: &AssembleContext) -> Result<String, Error> {
        if name != self.section {
            return Err(Error::invalid_input(format!(
                "no dynamic section \"{name}\""
            )));
        }
        // The section drops out while the document is empty: it changes with a refresh too.
        self.refresh_if_stale();
        Ok(self.section())
    }
}

prompt_plugin::export_plugin!(RemoteInstructions);
