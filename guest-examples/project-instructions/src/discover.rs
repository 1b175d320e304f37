//! Finding the instruction files: from the root down to the `cwd` directory, every configured
//! name that is a regular file. Only metadata is read here; nothing is opened, so a FIFO or a
//! device named like an instruction file is never opened (opening a FIFO for reading blocks).

use std::fs;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use prompt_plugin::Error;

/// One instruction file that exists and is a regular file (following symlinks, so a
/// `CLAUDE.md -> AGENTS.md` link counts).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// The path shown to the model, relative to the root, `/`-separated: `src/AGENTS.md`.
    pub rel: String,
    /// The path to open.
    pub path: PathBuf,
    /// How many levels below the root its directory is (0 = the root).
    pub depth: usize,
}

/// Fail clearly when the root itself cannot be read: under the sandbox that means no
/// directory was granted at that guest path (WASI has no preopen for it) or the read was
/// denied; natively it means the directory is missing.
pub fn check_root(root: &Path) -> Result<(), Error> {
    match fs::metadata(root) {
        Ok(meta) if meta.is_dir() => Ok(()),
        Ok(_) => Err(Error::failed(format!(
            "the project root {} is not a directory",
            root.display()
        ))),
        Err(e) => Err(Error::failed(format!(
            "cannot read the project root {}: {e}; no directory is granted at that guest path \
             or the read was denied (grant the repository read-only at {})",
            root.display(),
            root.display()
        ))),
    }
}

/// The metadata of `path`, following symlinks; `None` when it does not exist (including a
/// path through a component that is not a directory or a dangling symlink). A denied or
/// failed look-up is an error naming the path.
fn look(path: &Path) -> Result<Option<fs::Metadata>, Error> {
    match fs::metadata(path) {
        Ok(meta) => Ok(Some(meta)),
        Err(e) if matches!(e.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory) => Ok(None),
        Err(e) if e.kind() == ErrorKind::PermissionDenied => Err(Error::failed(format!(
            "reading {} was denied: {e}",
            path.display()
        ))),
        Err(e) => Err(Error::failed(format!(
            "cannot read {}: {e}",
            path.display()
        ))),
    }
}

/// The instruction files from the root down to the directory `below` names, root first;
/// within a directory in the order of `names`.
pub fn candidates(root: &Path, below: &[&str], names: &[String]) -> Result<Vec<Candidate>, Error> {
    let mut found = Vec::new();
    let mut dir = root.to_path_buf();
    let mut rel_dir = String::new();
    for depth in 0..=below.len() {
        if depth > 0 {
            let part = below[depth - 1];
            dir.push(part);
            rel_dir.push_str(part);
            rel_dir.push('/');
            // A directory further down cannot exist below one that does not: stop looking.
            if !look(&dir)?.is_some_and(|meta| meta.is_dir()) {
                break;
            }
        }
        for name in names {
            let path = dir.join(name);
            // Anything but a regular file (a directory, FIFO, device, socket) is skipped.
            if look(&path)?.is_some_and(|meta| meta.is_file()) {
                found.push(Candidate {
                    rel: format!("{rel_dir}{name}"),
                    path,
                    depth,
                });
            }
        }
    }
    Ok(found)
}
