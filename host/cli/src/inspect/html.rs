//! `inspect --html FILE`: the report as one self-contained page (no network, no external
//! assets) that opens from disk and can be attached to a bug report.
//!
//! Every string in the report comes from plugins, MCP servers or logs, so none of it is ever
//! markup: the report travels as JSON in a `<script type="application/json">` block, with
//! `<`, `>`, `&` and the two JavaScript line terminators escaped so no text can close the
//! block, and the page's one script builds the view from it with text nodes and attribute
//! values. A Content-Security-Policy allows only that script and that style, by their
//! SHA-256: an injected `<script>` or `onerror` would not run, and no request can leave.

use std::io::Write;
use std::path::Path;

use base64::Engine;
use sha2::{Digest, Sha256};

use super::report::Report;

const SCRIPT: &str = include_str!("page/report.js");
const STYLE: &str = include_str!("page/report.css");

/// The page for `report`; a `live` page (`dev --ui`) asks its server for the next report.
pub fn page(report: &Report, live: Option<u64>) -> anyhow::Result<String> {
    let json = serde_json::to_string(&page_data(report, live)?)?;
    Ok(page_from_data(&json, live.is_some()))
}

/// The page for the report data `json` ([`page_data`], as JSON); a `live` one may ask its
/// server for updates.
pub fn page_from_data(json: &str, live: bool) -> String {
    let data = escape_json(json);
    let policy = policy(live);
    format!(
        "{FIRST_LINE}<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"{policy}\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta name=\"referrer\" content=\"no-referrer\">\n\
         <title>prompt-host inspect</title>\n<style>{STYLE}</style>\n</head>\n<body>\n\
         <noscript>This report is drawn by its own script; the same findings are in \
         <code>prompt-host inspect --json</code>.</noscript>\n<main id=\"app\"></main>\n\
         <script type=\"application/json\" id=\"report\">{data}</script>\n\
         <script>{SCRIPT}</script>\n</body>\n</html>\n"
    )
}

/// The page's Content-Security-Policy: its own script and style, by hash, and nothing
/// else; a live page may also ask its own server for updates.
pub fn policy(live: bool) -> String {
    format!(
        "default-src 'none'; script-src '{}'; style-src '{}'; connect-src {}; base-uri 'none'; form-action 'none'",
        digest(SCRIPT),
        digest(STYLE),
        if live { "'self'" } else { "'none'" }
    )
}

/// The report as the page reads it: without the prompt (it is there section by section),
/// and for a live page with its generation.
pub fn page_data(report: &Report, live: Option<u64>) -> anyhow::Result<serde_json::Value> {
    let mut value = serde_json::to_value(report)?;
    if let Some(object) = value.as_object_mut() {
        object.remove("prompt");
        if let Some(generation) = live {
            object.insert("live".into(), true.into());
            object.insert("generation".into(), generation.into());
        }
    }
    Ok(value)
}

/// `'sha256-…'` of `text`, as a Content-Security-Policy source names an inline block.
fn digest(text: &str) -> String {
    let hash = Sha256::digest(text.as_bytes());
    format!(
        "sha256-{}",
        base64::engine::general_purpose::STANDARD.encode(hash)
    )
}

/// `json` with `<`, `>`, `&`, U+2028 and U+2029 as `\u` escapes: the same JSON value.
pub fn escape_json(json: &str) -> String {
    let mut out = String::with_capacity(json.len() + json.len() / 16);
    for c in json.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

/// The first line of every page: how an existing file is known to be a report this command
/// wrote, and so one it may write over.
const FIRST_LINE: &str = "<!doctype html><!-- prompt-host inspect report -->\n";

/// Write `page` to `path`: a new file, or a report written before (a regular file that
/// starts with [`FIRST_LINE`]). Anything else — a file the host did not write, a FIFO, a
/// device, a directory — is refused before a byte is written; opened once, without
/// blocking, and checked on the handle.
pub fn write(path: &Path, page: &str) -> anyhow::Result<()> {
    use std::io::{Read, Seek};
    let mut options = std::fs::OpenOptions::new();
    options.read(true).write(true).create(true);
    let (mut file, metadata) = prompt_host::fsutil::open_regular(path, &options)?;
    if metadata.len() > 0 {
        let mut head = vec![0; FIRST_LINE.len()];
        let read = file.read(&mut head)?;
        anyhow::ensure!(
            head[..read] == *FIRST_LINE.as_bytes(),
            "the file exists and is not a report prompt-host wrote; it was left as it is (name a new file)"
        );
        file.rewind()?;
    }
    file.set_len(0)?;
    file.write_all(page.as_bytes())?;
    file.sync_all()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_text_can_close_the_data_block_or_become_markup() {
        let hostile = "</script><script>alert(1)</script><img src=x onerror=alert(2)>&amp;\u{2028}";
        let escaped = escape_json(&serde_json::to_string(hostile).expect("a string"));
        assert!(!escaped.contains('<') && !escaped.contains('>') && !escaped.contains('&'));
        assert!(!escaped.contains('\u{2028}'));
        let back: String = serde_json::from_str(&escaped).expect("still JSON");
        assert_eq!(back, hostile);
    }

    #[test]
    fn the_policy_names_the_script_and_style_it_carries() {
        assert!(digest("x").starts_with("sha256-"));
        assert_eq!(
            digest(""),
            "sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="
        );
    }
}
