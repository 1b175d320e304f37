//! Plugins found by name: `wasm = "persona"` in host.toml (and `mcp_provider`, `provider`,
//! serve's `load_plugin`) names a plugin that the installed package ships, or one on the
//! search path, instead of a file.
//!
//! The rule, which no file name can make ambiguous:
//!
//! - a value of 1 to 64 characters from `a-z`, `0-9`, `-` and `_`, starting with a letter or
//!   a digit, is a **name**: never a path, whatever files exist. `persona` is looked up as
//!   `persona.wasm` in each directory of `PROMPT_HOST_PLUGIN_PATH` (absolute directories,
//!   separated like `PATH`; a relative entry is ignored, as `.` in `PATH` would make the
//!   current directory decide which code runs), then in the program's own plugins
//!   directory (beside the `prompt-host` binary, or inside the Python package); the first
//!   found is used;
//! - anything else (`./persona`, `persona.wasm`, `/opt/p/persona.wasm`, `Persona`) is a
//!   **path**, resolved as before.
//!
//! A plugin found by name runs as the code of whoever can write its file, so a directory or
//! file that belongs to another user than this one or root, or that other users can write,
//! is refused (not skipped: a planted file is reported, never silently shadowed). Every
//! error names the directories looked in and what each holds.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::RwLock;

use thiserror::Error;

/// The environment variable listing directories of `NAME.wasm` files, searched first.
pub const PLUGIN_PATH_VAR: &str = "PROMPT_HOST_PLUGIN_PATH";

/// The longest plugin name.
pub const MAX_NAME_LEN: usize = 64;

/// The names an error lists per directory, and the entries read to find them: a directory
/// of 400,000 files must not make an error slow.
const LISTED_NAMES: usize = 16;
const READ_ENTRIES: usize = 4096;

/// The program's own plugins directory (see [`set_bundled_dir`]).
static BUNDLED: RwLock<Option<PathBuf>> = RwLock::new(None);

/// Set the directory of the plugins this program ships, searched after
/// `PROMPT_HOST_PLUGIN_PATH`. The `prompt-host` binary sets `plugins/` beside itself; the
/// Python package sets its own `prompt_host/plugins`. A library embedding the host has none
/// unless it sets one: where an installation keeps files is the program's to say.
pub fn set_bundled_dir(dir: impl Into<PathBuf>) {
    let mut slot = BUNDLED
        .write()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    *slot = Some(dir.into());
}

/// The directory [`set_bundled_dir`] set, if any.
pub fn bundled_dir() -> Option<PathBuf> {
    BUNDLED
        .read()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone()
}

/// Whether `written` names a plugin rather than a file (the rule in the module's
/// documentation).
pub fn is_name(written: &Path) -> bool {
    let Some(text) = written.to_str() else {
        return false;
    };
    let bytes = text.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= MAX_NAME_LEN
        && bytes[0].is_ascii_alphanumeric()
        && bytes
            .iter()
            .all(|&b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
}

/// The directories a name is looked up in, in order: `PROMPT_HOST_PLUGIN_PATH`'s absolute
/// entries, then the bundled directory.
pub fn search_dirs() -> Vec<PathBuf> {
    search_dirs_from(std::env::var_os(PLUGIN_PATH_VAR), bundled_dir())
}

/// [`search_dirs`] from a given variable's value and bundled directory.
pub fn search_dirs_from(var: Option<OsString>, bundled: Option<PathBuf>) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = var
        .map(|v| {
            std::env::split_paths(&v)
                .filter(|p| p.is_absolute())
                .collect()
        })
        .unwrap_or_default();
    dirs.extend(bundled);
    dirs
}

/// Why a plugin name found nothing, or what it found was refused.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum FindError {
    /// No directory searched holds `NAME.wasm`.
    #[error("{}", not_found_text(.name, .looked_in, .file_beside.as_deref()))]
    NotFound {
        /// The name looked up.
        name: String,
        /// Each directory searched, with what it holds (`missing`, `no plugins`, or the
        /// names of the plugins in it).
        looked_in: Vec<(PathBuf, String)>,
        /// A file of that name beside host.toml (or in serve's directory), which the
        /// writer may have meant: a file is written as a path.
        file_beside: Option<PathBuf>,
    },
    /// `NAME.wasm` was found but is not a file the host runs.
    #[error("plugin \"{name}\" was found at {}, which is refused: {reason}", path.display())]
    Refused {
        /// The name looked up.
        name: String,
        /// The file found.
        path: PathBuf,
        /// Why it is refused (its owner, its mode, its kind).
        reason: String,
    },
}

fn not_found_text(name: &str, looked_in: &[(PathBuf, String)], beside: Option<&Path>) -> String {
    let mut text = format!("no plugin named \"{name}\": ");
    if looked_in.is_empty() {
        text.push_str(&format!(
            "no plugin directory is known (this program ships none, and {PLUGIN_PATH_VAR} \
             names no absolute directory)"
        ));
    } else {
        let dirs: Vec<String> = looked_in
            .iter()
            .map(|(dir, holds)| format!("{} ({holds})", dir.display()))
            .collect();
        text.push_str(&format!("looked for {name}.wasm in {}", dirs.join(", ")));
    }
    match beside {
        Some(file) => text.push_str(&format!(
            "; {} exists, but a file is written as a path: ./{name}",
            file.display()
        )),
        None => text.push_str(&format!("; a file is written as a path, e.g. ./{name}")),
    }
    text
}

/// `name.wasm` in the first of `dirs` that holds it.
pub fn find_in(name: &str, dirs: &[PathBuf]) -> Result<PathBuf, FindError> {
    for dir in dirs {
        let path = dir.join(format!("{name}.wasm"));
        let opened = crate::fsutil::open_regular(&path, std::fs::OpenOptions::new().read(true));
        let refused = |reason: String| FindError::Refused {
            name: name.to_string(),
            path: path.clone(),
            reason,
        };
        let metadata = match opened {
            Ok((_, metadata)) => metadata,
            // A search path entry that is missing, or a file, holds no plugins.
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
                ) =>
            {
                continue
            }
            Err(e) => {
                return Err(refused(match crate::fsutil::not_regular(&e) {
                    Some(not_regular) => format!("it is {}, not a regular file", not_regular.kind),
                    None => format!("it cannot be read: {e}"),
                }))
            }
        };
        trusted_dir(dir).map_err(refused)?;
        trusted(&metadata, false).map_err(|why| refused(format!("it {why}")))?;
        // A symbolic link is followed each time the file is opened, so the directories the
        // file really is in must be as safe as the one the link is in: a link into a
        // directory others may write would let them replace the code.
        let real = std::fs::canonicalize(&path)
            .map_err(|e| refused(format!("it cannot be resolved: {e}")))?;
        if let Some(real_dir) = real.parent() {
            if std::fs::canonicalize(dir).ok().as_deref() != Some(real_dir) {
                trusted_dir(real_dir).map_err(|why| {
                    refused(format!("it is a link to {}, and {why}", real.display()))
                })?;
            }
        }
        return Ok(path);
    }
    Err(FindError::NotFound {
        name: name.to_string(),
        looked_in: dirs.iter().map(|d| (d.clone(), holds(d))).collect(),
        file_beside: None,
    })
}

/// `name` on the search path ([`search_dirs`]).
pub fn find(name: &str) -> Result<PathBuf, FindError> {
    find_in(name, &search_dirs())
}

/// A plugin location as written: a name is looked up on the search path, and is returned
/// with the path found; anything else is a path, joined onto `base` (host.toml's directory,
/// or `.`).
pub fn resolve(written: &Path, base: &Path) -> Result<(PathBuf, Option<String>), FindError> {
    resolve_in(written, base, &search_dirs())
}

/// [`resolve`] over given directories.
pub fn resolve_in(
    written: &Path,
    base: &Path,
    dirs: &[PathBuf],
) -> Result<(PathBuf, Option<String>), FindError> {
    if !is_name(written) {
        return Ok((base.join(written), None));
    }
    let name = written.to_string_lossy().into_owned();
    match find_in(&name, dirs) {
        Ok(path) => Ok((path, Some(name))),
        Err(FindError::NotFound {
            name, looked_in, ..
        }) => {
            let beside = base.join(written);
            Err(FindError::NotFound {
                name,
                looked_in,
                file_beside: beside.is_file().then_some(beside),
            })
        }
        Err(e) => Err(e),
    }
}

/// `dir` and every directory above it (symbolic links resolved) are [`trusted`]: whoever
/// could rename a directory on the way could put another in its place. Above `dir`, a
/// directory others may write into is accepted when it is sticky (`/tmp`): there only an
/// entry's owner may rename it.
fn trusted_dir(dir: &Path) -> Result<(), String> {
    let real =
        std::fs::canonicalize(dir).map_err(|e| format!("its directory cannot be resolved: {e}"))?;
    for (depth, ancestor) in real.ancestors().enumerate() {
        let metadata = std::fs::metadata(ancestor)
            .map_err(|e| format!("{} cannot be read: {e}", ancestor.display()))?;
        trusted(&metadata, depth > 0).map_err(|why| {
            if depth == 0 {
                format!("its directory {why}")
            } else {
                format!("{} above it {why}", ancestor.display())
            }
        })?;
    }
    Ok(())
}

/// A file or directory the host may take plugin code from: owned by this user or root, and
/// not writable by other users (unless `sticky_ok` and it is sticky).
fn trusted(metadata: &std::fs::Metadata, sticky_ok: bool) -> Result<(), String> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        // SAFETY: geteuid has no preconditions and cannot fail.
        let me = unsafe { libc::geteuid() };
        if metadata.uid() != me && metadata.uid() != 0 {
            return Err(format!(
                "belongs to uid {}, neither this user (uid {me}) nor root",
                metadata.uid()
            ));
        }
        let mode = metadata.mode() & 0o7777;
        if mode & 0o002 != 0 && !(sticky_ok && mode & 0o1000 != 0) {
            return Err(format!("is writable by other users (mode {mode:04o})"));
        }
    }
    #[cfg(not(unix))]
    let _ = (metadata, sticky_ok);
    Ok(())
}

/// What a searched directory holds, for an error: `missing`, `no plugins`, or the names of
/// its `.wasm` files (sorted, the first [`LISTED_NAMES`]).
fn holds(dir: &Path) -> String {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return "missing".to_string(),
        Err(e) => return format!("not readable: {e}"),
    };
    let mut names: Vec<String> = entries
        .take(READ_ENTRIES)
        .filter_map(|entry| {
            let file_name = entry.ok()?.file_name();
            let stem = file_name.to_str()?.strip_suffix(".wasm")?;
            is_name(Path::new(stem)).then(|| stem.to_string())
        })
        .collect();
    if names.is_empty() {
        return "no plugins".to_string();
    }
    names.sort();
    let more = names.len() > LISTED_NAMES;
    names.truncate(LISTED_NAMES);
    let mut text = format!("holds {}", names.join(", "));
    if more {
        text.push_str(", …");
    }
    text
}

#[cfg(test)]
mod tests;
