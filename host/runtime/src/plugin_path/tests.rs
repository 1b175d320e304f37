use std::os::unix::fs::PermissionsExt;

use super::*;

fn dir_with(files: &[&str]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    for file in files {
        let path = dir.path().join(file);
        std::fs::write(&path, b"\0asm").expect("write");
        // Whatever the umask: only a mode others cannot write is trusted.
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    }
    dir
}

#[test]
fn names_are_lowercase_words_and_everything_else_is_a_path() {
    for name in [
        "persona",
        "mcp-instructions",
        "git_context",
        "a",
        "0x",
        &"a".repeat(64),
    ] {
        assert!(is_name(Path::new(name)), "{name} should be a name");
    }
    for path in [
        "",
        "Persona",
        "./persona",
        "persona.wasm",
        "-persona",
        "_persona",
        "a/b",
        "..",
        ".",
        "oci://ghcr.io/acme/x:1",
        "/opt/persona",
        "per sona",
        "persona\n",
        &"a".repeat(65),
    ] {
        assert!(!is_name(Path::new(path)), "{path:?} should be a path");
    }
}

#[test]
fn the_search_path_keeps_absolute_entries_in_order_then_the_bundled_directory() {
    let dirs = search_dirs_from(
        Some("/a::relative:./here:/b".into()),
        Some(PathBuf::from("/bundled")),
    );
    assert_eq!(
        dirs,
        [
            PathBuf::from("/a"),
            PathBuf::from("/b"),
            PathBuf::from("/bundled")
        ]
    );
    assert_eq!(search_dirs_from(None, None), Vec::<PathBuf>::new());
}

#[test]
fn the_first_directory_holding_the_name_wins() {
    let first = dir_with(&["declare.wasm"]);
    let second = dir_with(&["persona.wasm", "declare.wasm"]);
    let dirs = [first.path().to_path_buf(), second.path().to_path_buf()];
    assert_eq!(
        find_in("declare", &dirs),
        Ok(first.path().join("declare.wasm"))
    );
    assert_eq!(
        find_in("persona", &dirs),
        Ok(second.path().join("persona.wasm"))
    );
}

#[test]
fn a_name_not_found_says_where_it_looked_and_what_each_place_holds() {
    let plugins = dir_with(&["persona.wasm", "declare.wasm", "notes.txt", "Bad.wasm"]);
    let empty = dir_with(&[]);
    let missing = empty.path().join("missing");
    let dirs = [
        plugins.path().to_path_buf(),
        empty.path().to_path_buf(),
        missing.clone(),
    ];
    let e = find_in("persna", &dirs).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "no plugin named \"persna\": looked for persna.wasm in {} (holds declare, persona), \
             {} (no plugins), {} (missing); a file is written as a path, e.g. ./persna",
            plugins.path().display(),
            empty.path().display(),
            missing.display()
        )
    );
    assert_eq!(
        find_in("persona", &[]).unwrap_err().to_string(),
        "no plugin named \"persona\": no plugin directory is known (this program ships none, \
         and PROMPT_HOST_PLUGIN_PATH names no absolute directory); a file is written as a \
         path, e.g. ./persona"
    );
}

#[test]
fn a_directory_of_many_plugins_is_listed_in_part() {
    let names: Vec<String> = (0..20).map(|i| format!("p{i:02}.wasm")).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let dir = dir_with(&refs);
    assert_eq!(
        holds(dir.path()),
        "holds p00, p01, p02, p03, p04, p05, p06, p07, p08, p09, p10, p11, p12, p13, p14, p15, …"
    );
}

#[test]
fn a_path_is_joined_onto_the_base_and_never_looked_up() {
    let plugins = dir_with(&["persona.wasm"]);
    let dirs = [plugins.path().to_path_buf()];
    for written in ["./persona", "persona.wasm", "sub/persona.wasm"] {
        assert_eq!(
            resolve_in(Path::new(written), Path::new("/conf"), &dirs),
            Ok((Path::new("/conf").join(written), None))
        );
    }
    assert_eq!(
        resolve_in(Path::new("persona"), Path::new("/conf"), &dirs),
        Ok((
            plugins.path().join("persona.wasm"),
            Some("persona".to_string())
        ))
    );
}

#[test]
fn a_file_beside_the_config_with_the_name_is_pointed_out_not_taken() {
    let base = dir_with(&["persona"]);
    let e = resolve_in(Path::new("persona"), base.path(), &[]).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "no plugin named \"persona\": no plugin directory is known (this program ships \
             none, and PROMPT_HOST_PLUGIN_PATH names no absolute directory); {} exists, but a \
             file is written as a path: ./persona",
            base.path().join("persona").display()
        )
    );
}

#[test]
fn a_plugin_other_users_can_write_is_refused_not_skipped() {
    let first = dir_with(&["persona.wasm"]);
    let second = dir_with(&["persona.wasm"]);
    let planted = first.path().join("persona.wasm");
    std::fs::set_permissions(&planted, std::fs::Permissions::from_mode(0o666)).expect("chmod");
    let dirs = [first.path().to_path_buf(), second.path().to_path_buf()];
    assert_eq!(
        find_in("persona", &dirs).unwrap_err().to_string(),
        format!(
            "plugin \"persona\" was found at {}, which is refused: it is writable by other \
             users (mode 0666)",
            planted.display()
        )
    );
}

#[test]
fn a_directory_other_users_can_write_is_refused() {
    let dir = dir_with(&["persona.wasm"]);
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).expect("chmod");
    assert_eq!(
        find_in("persona", &[dir.path().to_path_buf()])
            .unwrap_err()
            .to_string(),
        format!(
            "plugin \"persona\" was found at {}, which is refused: its directory is writable \
             by other users (mode 0777)",
            dir.path().join("persona.wasm").display()
        )
    );
}

#[test]
fn a_link_into_a_directory_other_users_can_write_is_refused() {
    let links = dir_with(&[]);
    let open = dir_with(&["persona.wasm"]);
    std::fs::set_permissions(open.path(), std::fs::Permissions::from_mode(0o777)).expect("chmod");
    let target = open.path().join("persona.wasm");
    std::os::unix::fs::symlink(&target, links.path().join("persona.wasm")).expect("symlink");
    let real = std::fs::canonicalize(&target).expect("canonicalize");
    assert_eq!(
        find_in("persona", &[links.path().to_path_buf()])
            .unwrap_err()
            .to_string(),
        format!(
            "plugin \"persona\" was found at {}, which is refused: it is a link to {}, and its \
             directory is writable by other users (mode 0777)",
            links.path().join("persona.wasm").display(),
            real.display()
        )
    );
    // The same link into a directory only this user may write is taken.
    std::fs::set_permissions(open.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    assert_eq!(
        find_in("persona", &[links.path().to_path_buf()]).expect("found"),
        links.path().join("persona.wasm")
    );
}

#[test]
fn a_fifo_or_directory_under_the_name_is_refused_without_blocking() {
    let dir = dir_with(&[]);
    let fifo = dir.path().join("persona.wasm");
    let c = std::ffi::CString::new(fifo.to_str().expect("utf-8")).expect("no NUL");
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    std::fs::create_dir(dir.path().join("declare.wasm")).expect("mkdir");
    let dirs = [dir.path().to_path_buf()];
    assert_eq!(
        find_in("persona", &dirs).unwrap_err().to_string(),
        format!(
            "plugin \"persona\" was found at {}, which is refused: it is a FIFO, not a regular file",
            fifo.display()
        )
    );
    assert_eq!(
        find_in("declare", &dirs).unwrap_err().to_string(),
        format!(
            "plugin \"declare\" was found at {}, which is refused: it is a directory, not a \
             regular file",
            dir.path().join("declare.wasm").display()
        )
    );
}

#[test]
fn a_directory_above_that_others_can_write_is_refused_unless_sticky() {
    let root = dir_with(&[]);
    let open = root.path().join("open");
    let plugins = open.join("plugins");
    std::fs::create_dir_all(&plugins).expect("mkdir");
    std::fs::write(plugins.join("persona.wasm"), b"\0asm").expect("write");
    std::fs::set_permissions(
        plugins.join("persona.wasm"),
        std::fs::Permissions::from_mode(0o644),
    )
    .expect("chmod");
    std::fs::set_permissions(&plugins, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).expect("chmod");
    let dirs = [plugins.clone()];
    // Anyone could rename `plugins` away and put their own in its place.
    assert_eq!(
        find_in("persona", &dirs).unwrap_err().to_string(),
        format!(
            "plugin \"persona\" was found at {}, which is refused: {} above it is writable by \
             other users (mode 0777)",
            plugins.join("persona.wasm").display(),
            std::fs::canonicalize(&open).expect("canonical").display()
        )
    );
    // Sticky, as /tmp is: only an entry's owner may rename it.
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o1777)).expect("chmod");
    assert_eq!(find_in("persona", &dirs), Ok(plugins.join("persona.wasm")));
}

#[test]
fn a_search_path_entry_that_is_a_file_or_missing_holds_nothing() {
    let base = dir_with(&["not-a-dir"]);
    let plugins = dir_with(&["persona.wasm"]);
    let dirs = [
        base.path().join("not-a-dir"),
        base.path().join("missing"),
        plugins.path().to_path_buf(),
    ];
    assert_eq!(
        find_in("persona", &dirs),
        Ok(plugins.path().join("persona.wasm"))
    );
}
