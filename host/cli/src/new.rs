//! `prompt-host new NAME`: write a plugin project that builds on its own, anywhere on disk.
//!
//! Everything a project needs is compiled into the binary ([`embedded`]): the WIT of every
//! contract version and, for Rust, the guest SDK's sources, vendored into the project. A
//! written project never points back at this repository; after the first download of its
//! registry packages (crates, npm or PyPI) it builds offline.
//!
//! Templates live in `new/templates/<lang>/`; they are plain files with `__NAME__` (the
//! project name), `__SNAKE__` (its `snake_case` form, for identifiers, variables, tools and
//! the `.wasm` file) and `__TYPE__` (a Rust type name) to fill in.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::{Args, ValueEnum};

mod embedded;
mod js;
mod kinds;
mod python;
mod rust;

/// The flags of `prompt-host new`.
#[derive(Debug, Args)]
pub struct NewArgs {
    /// The project's name: lowercase letters, digits, `-` and `_`, starting with a letter (a
    /// valid crate, npm and Python package name). Also the plugin's name in host.toml and
    /// the prefix of what it declares.
    #[arg(value_parser = parse_name)]
    pub name: String,
    /// The language of the plugin.
    #[arg(long, value_enum, default_value_t = Lang::Rust)]
    pub lang: Lang,
    /// What the plugin contributes.
    #[arg(long, value_enum, default_value_t = Kind::Section)]
    pub kind: Kind,
    /// Where to write the project (default: ./NAME). It must not exist, or be empty.
    #[arg(long, value_name = "PATH")]
    pub dir: Option<PathBuf>,
}

/// The language of a new plugin.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Lang {
    /// Rust with the `prompt-plugin` SDK (vendored), contract 0.2.0.
    Rust,
    /// JavaScript with jco + componentize-js (npm), contract 0.1.0.
    #[value(alias = "javascript")]
    Js,
    /// Python with componentize-py (PyPI), contract 0.1.0.
    #[value(alias = "py")]
    Python,
}

/// What a new plugin contributes: each kind is a small plugin of that kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Kind {
    /// A fixed and a dynamic system-prompt section.
    Section,
    /// A dynamic variable, used by a fixed section.
    Variable,
    /// A dynamic tool provider with a JSON-schema tool, and a section about it.
    Tools,
    /// An assembly listener that calls `next()` and then rewrites a section.
    Listener,
}

impl Kind {
    fn label(self) -> &'static str {
        match self {
            Kind::Section => "section",
            Kind::Variable => "variable",
            Kind::Tools => "tools",
            Kind::Listener => "listener",
        }
    }
}

/// The project name in the forms the templates need.
#[derive(Debug, Clone)]
struct Names {
    /// As given: `my-plugin`.
    pub name: String,
    /// `my_plugin`: Rust identifiers, variable and tool names, the `.wasm` file of a crate.
    pub snake: String,
    /// `MyPluginPlugin`: the plugin's Rust type (the suffix keeps it clear of the SDK's
    /// names, whatever the project is called).
    pub type_name: String,
}

impl Names {
    fn new(name: &str) -> Self {
        let snake = name.replace('-', "_");
        let mut type_name: String = snake
            .split('_')
            .map(|part| {
                let mut chars = part.chars();
                chars.next().map_or_else(String::new, |first| {
                    first.to_ascii_uppercase().to_string() + chars.as_str()
                })
            })
            .collect();
        type_name.push_str("Plugin");
        Names {
            name: name.to_string(),
            snake,
            type_name,
        }
    }

    /// `template` with the placeholders filled in.
    fn fill(&self, template: &str) -> String {
        template
            .replace("__NAME__", &self.name)
            .replace("__SNAKE__", &self.snake)
            .replace("__TYPE__", &self.type_name)
    }
}

/// One file of a project: its path relative to the project directory, and its contents.
#[derive(Debug)]
struct File {
    pub path: String,
    pub text: String,
    /// A script: written with the executable bit.
    pub executable: bool,
}

impl File {
    fn new(path: impl Into<String>, text: impl Into<String>) -> Self {
        File {
            path: path.into(),
            text: text.into(),
            executable: false,
        }
    }

    fn script(path: impl Into<String>, text: impl Into<String>) -> Self {
        File {
            executable: true,
            ..File::new(path, text)
        }
    }
}

/// A project to write: its files, and what to run next (from inside the project).
struct Project {
    pub files: Vec<File>,
    pub language: &'static str,
    pub contract: &'static str,
    pub next: Vec<String>,
}

/// The project for `lang` and `kind`.
fn project(names: &Names, lang: Lang, kind: Kind) -> Project {
    match lang {
        Lang::Rust => rust::project(names, kind),
        Lang::Js => js::project(names, kind),
        Lang::Python => python::project(names, kind),
    }
}

/// The WIT files under `prefix` (`wit/0.1.0/types.wit`, …), every version.
fn wit_files(prefix: &str) -> Vec<File> {
    embedded::WIT
        .iter()
        .map(|(path, text)| File::new(format!("{prefix}{path}"), *text))
        .collect()
}

/// `test.sh` of a JavaScript or Python project: build, then `check`, `render` and `assemble`
/// must print what `text` expects.
fn test_script(text: &kinds::KindText) -> String {
    let expect = |what: &str, var: &str, needles: &[&str]| {
        needles
            .iter()
            .map(|needle| format!("expect {what} {} \"${var}\"", shell_word(needle)))
            .collect::<Vec<_>>()
            .join("\n")
    };
    include_str!("new/templates/test.sh.tpl")
        .replace("__CHECK__", &expect("check", "checked", text.check))
        .replace("__RENDER__", &expect("render", "rendered", text.render))
        .replace(
            "__ASSEMBLE__",
            &expect("assemble", "assembled", text.assemble),
        )
}

/// Crate, npm and Python names the template's own dependencies or the toolchains already
/// use, or that cargo refuses: a project of that name would not build.
const RESERVED: &[&str] = &[
    "prompt-plugin",
    "prompt_plugin",
    "prompt-host",
    "prompt_host",
    "serde",
    "serde_json",
    "wit-bindgen",
    "wit_bindgen",
    "test",
    "std",
    "core",
    "alloc",
    "proc_macro",
    "proc-macro",
    "self",
    "super",
    "crate",
    "con",
    "prn",
    "aux",
    "nul",
];

/// Rust keywords: cargo refuses them as package names.
const KEYWORDS: &[&str] = &[
    "abstract", "as", "async", "await", "become", "box", "break", "const", "continue", "do", "dyn",
    "else", "enum", "extern", "false", "final", "fn", "for", "gen", "if", "impl", "in", "let",
    "loop", "macro", "match", "mod", "move", "mut", "override", "priv", "pub", "ref", "return",
    "static", "struct", "trait", "true", "try", "type", "typeof", "unsafe", "unsized", "use",
    "virtual", "where", "while", "yield",
];

/// The longest name accepted (cargo allows 64 characters for a crate on crates.io).
const MAX_NAME: usize = 64;

/// Check a project name: valid as a crate, an npm package and a host.toml plugin name, and
/// its `snake_case` form valid as a Rust identifier and a prompt variable name.
fn parse_name(name: &str) -> Result<String, String> {
    let why = if name.is_empty() {
        Some("it is empty".to_string())
    } else if name.len() > MAX_NAME {
        Some(format!("it is longer than {MAX_NAME} characters"))
    } else if !name.starts_with(|c: char| c.is_ascii_lowercase()) {
        Some("it must start with a lowercase letter (a-z)".to_string())
    } else if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-' || *c == '_'))
    {
        Some(format!(
            "{c:?} is not allowed: use lowercase letters, digits, '-' and '_'"
        ))
    } else if KEYWORDS.contains(&name) {
        Some("it is a Rust keyword".to_string())
    } else if RESERVED.contains(&name) {
        Some("that name is taken by a dependency, the toolchain or the OS".to_string())
    } else {
        None
    };
    match why {
        Some(why) => Err(format!(
            "\"{name}\" is not a valid plugin project name: {why} (e.g. \"hello\" or \"my-plugin\")"
        )),
        None => Ok(name.to_string()),
    }
}

/// Run `prompt-host new`.
pub fn run(args: &NewArgs) -> anyhow::Result<()> {
    // The clap parser already checked it; a library caller may not have.
    let name = parse_name(&args.name).map_err(anyhow::Error::msg)?;
    let names = Names::new(&name);
    let dir = args.dir.clone().unwrap_or_else(|| PathBuf::from(&name));
    let project = project(&names, args.lang, args.kind);
    write_project(&dir, &project.files)?;

    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "Created {} ({} plugin \"{name}\", kind {}, contract prompt-host:plugin@{}):",
        shown(&dir),
        project.language,
        args.kind.label(),
        project.contract,
    )?;
    for file in &project.files {
        writeln!(out, "  {}", file.path)?;
    }
    writeln!(out, "\nNext:")?;
    writeln!(out, "  cd {}", shell_word(&shown(&dir)))?;
    for line in &project.next {
        writeln!(out, "  {line}")?;
    }
    writeln!(out, "\nREADME.md explains each step.")?;
    Ok(())
}

/// A directory as the user named it, with a trailing `/`.
fn shown(dir: &Path) -> String {
    let text = dir.display().to_string();
    if text.ends_with('/') {
        text
    } else {
        format!("{text}/")
    }
}

/// `text` quoted for a POSIX shell when it needs to be.
fn shell_word(text: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "/._-+:@%,=".contains(c);
    if !text.is_empty() && text.chars().all(plain) {
        text.to_string()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

/// Write `files` under `dir`, which must not exist or be an empty directory. Nothing is
/// overwritten: a file that appears meanwhile is an error.
fn write_project(dir: &Path, files: &[File]) -> anyhow::Result<()> {
    match std::fs::symlink_metadata(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create the directory {}", dir.display()))?;
        }
        Err(e) => return Err(e).with_context(|| format!("cannot inspect {}", dir.display())),
        Ok(meta) if meta.is_dir() => {}
        Ok(_) => anyhow::bail!(
            "{} already exists and is not a directory; choose another NAME or --dir",
            dir.display()
        ),
    }
    // Everything is written beneath this handle, never by path: a directory or a symbolic
    // link planted inside the project while it is written cannot send a file elsewhere.
    let root = open_dir_nofollow(dir)
        .with_context(|| format!("cannot open the directory {}", dir.display()))?;
    let not_empty = cap_primitives::fs::read_base_dir(&root)
        .with_context(|| format!("cannot read the directory {}", dir.display()))?
        .next()
        .is_some();
    if not_empty {
        anyhow::bail!(
            "{} already exists and is not empty; choose another NAME or an empty --dir",
            dir.display()
        );
    }
    for file in files {
        let relative = Path::new(&file.path);
        let shown = dir.join(relative);
        for parent in relative
            .ancestors()
            .skip(1)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
        {
            if parent.as_os_str().is_empty() {
                continue;
            }
            match cap_primitives::fs::create_dir(
                &root,
                parent,
                &cap_primitives::fs::DirOptions::new(),
            ) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => {
                    return Err(e).with_context(|| {
                        format!("cannot create the directory {}", dir.join(parent).display())
                    })
                }
            }
        }
        let mut options = cap_primitives::fs::OpenOptions::new();
        options.write(true).create_new(true);
        {
            use cap_fs_ext::OpenOptionsFollowExt;
            options.follow(cap_fs_ext::FollowSymlinks::No);
        }
        #[cfg(unix)]
        {
            use cap_primitives::fs::OpenOptionsExt;
            options.mode(if file.executable { 0o755 } else { 0o644 });
        }
        let mut handle = cap_primitives::fs::open(&root, relative, &options)
            .with_context(|| format!("cannot create {}", shown.display()))?;
        handle
            .write_all(file.text.as_bytes())
            .with_context(|| format!("cannot write {}", shown.display()))?;
    }
    Ok(())
}

/// Open the directory `dir` itself (not what a symbolic link there names).
fn open_dir_nofollow(dir: &Path) -> std::io::Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_NONBLOCK);
    }
    options.open(dir)
}

#[cfg(test)]
mod tests;
