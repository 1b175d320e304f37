//! Reading the found files into one text under a byte budget.
//!
//! Format: each file is a `# From <path relative to the root>` line followed by its content
//! (trailing whitespace trimmed), files separated by a blank line, root first. The budget
//! (`max_bytes`) counts everything this module produces except the final marker: the
//! `# From` lines, the separators and the content. A file is read through `Read::take` with
//! at most the remaining budget + 1 bytes, so an unbounded file costs no more than the
//! budget; when the budget runs out the text ends with [`marker`], which names the file that
//! was cut and the nearer files that were left out.

use std::fs::File;
use std::io::{ErrorKind, Read};
use std::path::Path;

use prompt_plugin::Error;

use crate::discover::Candidate;

/// How the text ends when the budget ran out: `cut` is the file whose content stops early
/// (if any), `left_out` the files that were not read at all.
pub fn marker(cut: Option<&str>, left_out: &[&str], max_bytes: usize) -> String {
    let mut text = String::from("[project-instructions: ");
    if let Some(cut) = cut {
        text.push_str(&format!("{cut} was cut here; "));
    }
    text.push_str(&format!(
        "the instruction files exceed the {max_bytes}-byte limit (max_bytes)"
    ));
    if !left_out.is_empty() {
        text.push_str(&format!("; not included: {}", left_out.join(", ")));
    }
    text.push(']');
    text
}

/// Read at most `limit + 1` bytes of `path`, after checking again through the open handle
/// that it is a regular file (it may have been replaced since it was found). `None` when it
/// vanished or is no longer a regular file.
fn read_bounded(path: &Path, limit: usize) -> Result<Option<Vec<u8>>, Error> {
    let failed = |e: std::io::Error| {
        if e.kind() == ErrorKind::PermissionDenied {
            Error::failed(format!("reading {} was denied: {e}", path.display()))
        } else {
            Error::failed(format!("cannot read {}: {e}", path.display()))
        }
    };
    let file = match File::open(path) {
        Ok(file) => file,
        Err(e) if matches!(e.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory) => {
            return Ok(None)
        }
        Err(e) => return Err(failed(e)),
    };
    if !file.metadata().map_err(failed)?.is_file() {
        return Ok(None);
    }
    let mut bytes = Vec::new();
    let limit = u64::try_from(limit).unwrap_or(u64::MAX).saturating_add(1);
    file.take(limit).read_to_end(&mut bytes).map_err(failed)?;
    Ok(Some(bytes))
}

/// The longest prefix of `bytes` of at most `max` bytes that does not end inside a UTF-8
/// sequence.
fn cut_at_char_boundary(bytes: &[u8], max: usize) -> &[u8] {
    let mut end = max.min(bytes.len());
    // Back off over continuation bytes (0b10xx_xxxx) to the start of the cut character.
    if end < bytes.len() {
        while end > 0 && bytes[end] & 0xC0 == 0x80 {
            end -= 1;
        }
    }
    &bytes[..end]
}

/// The instruction text of `found` (root first) within `max_bytes`, or empty when every file
/// is empty. Invalid UTF-8 is replaced with U+FFFD. A file whose content equals that of a
/// file already included from the same directory (typically `CLAUDE.md -> AGENTS.md`) is
/// left out.
pub fn collect(found: &[Candidate], max_bytes: usize) -> Result<String, Error> {
    let mut out = String::new();
    // Content included from the current directory, for the duplicate check.
    let mut same_dir: Vec<Vec<u8>> = Vec::new();
    let mut depth = None;
    for (i, file) in found.iter().enumerate() {
        if depth != Some(file.depth) {
            depth = Some(file.depth);
            same_dir.clear();
        }
        let sep = if out.is_empty() { "" } else { "\n\n" };
        let header = format!("{sep}# From {}\n", file.rel);
        let left_out = || found[i + 1..].iter().map(|f| f.rel.as_str()).collect();
        if out.len() + header.len() >= max_bytes {
            let rest: Vec<&str> = found[i..].iter().map(|f| f.rel.as_str()).collect();
            push_line(&mut out, &marker(None, &rest, max_bytes));
            break;
        }
        let allowed = max_bytes - out.len() - header.len();
        let Some(bytes) = read_bounded(&file.path, allowed)? else {
            continue;
        };
        if bytes.len() > allowed {
            let kept = cut_at_char_boundary(&bytes, allowed);
            out.push_str(&header);
            out.push_str(&String::from_utf8_lossy(kept));
            let rest: Vec<&str> = left_out();
            push_line(&mut out, &marker(Some(&file.rel), &rest, max_bytes));
            break;
        }
        let text = String::from_utf8_lossy(&bytes);
        let text = text.trim_end();
        if text.trim_start().is_empty() || same_dir.contains(&bytes) {
            continue;
        }
        out.push_str(&header);
        out.push_str(text);
        same_dir.push(bytes);
    }
    Ok(out)
}

/// Append `line` on a line of its own.
fn push_line(out: &mut String, line: &str) {
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(line);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_on_a_char_boundary() {
        assert_eq!(cut_at_char_boundary(b"abcdef", 3), b"abc");
        assert_eq!(cut_at_char_boundary(b"abc", 5), b"abc");
        assert_eq!(cut_at_char_boundary("aé".as_bytes(), 2), b"a");
        assert_eq!(cut_at_char_boundary("日本".as_bytes(), 4), "日".as_bytes());
        assert_eq!(cut_at_char_boundary("日本".as_bytes(), 0), b"");
    }

    #[test]
    fn the_marker_names_what_was_cut_and_left_out() {
        assert_eq!(
            marker(Some("AGENTS.md"), &["src/AGENTS.md"], 100),
            "[project-instructions: AGENTS.md was cut here; the instruction files exceed the \
             100-byte limit (max_bytes); not included: src/AGENTS.md]"
        );
        assert_eq!(
            marker(None, &["a/AGENTS.md", "a/CLAUDE.md"], 10),
            "[project-instructions: the instruction files exceed the 10-byte limit (max_bytes); \
             not included: a/AGENTS.md, a/CLAUDE.md]"
        );
    }
}
