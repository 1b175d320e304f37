//! The filesystem a plugin sees: the directories granted to it and nothing else, reached
//! without the host ever blocking or following a path swapped in after a check.
//!
//! Four imports of `wasi:filesystem` are replaced, because wasmtime-wasi's own versions
//! either reopen a directory by name or work inside one host call that epoch interruption
//! cannot reach:
//!
//! - `preopens.get-directories` hands out the directories opened once when the plugin was
//!   loaded (`grants.rs`), so a new instance — after a trap, a timeout, a reload — sees the
//!   very directories the operator granted, even if a path was renamed or replaced by a
//!   symbolic link since. (wasmtime-wasi would reopen each path by name per instance.)
//! - `[method]descriptor.open-at` opens beneath the directory handle (no `..` or symbolic
//!   link leads out), **non-blocking**, and checks what it opened on the descriptor: a FIFO
//!   or a device opened for reading would make `open(2)` wait for a writer, forever if none
//!   comes, so anything but a regular file or a directory is closed unread and refused with
//!   `access`. There is no separate look before the open, hence nothing to swap in between.
//! - `[method]descriptor.read-directory` and `[method]directory-entry-stream.
//!   read-directory-entry` read one entry per call (wasmtime-wasi reads and `stat`s the whole
//!   directory in one call): a directory of 400,000 entries is 400,000 returns to Wasm, each
//!   under the call's deadline, and each name counts toward its output budget.
//!
//! Without a grant there is no directory to open anything in, and none of this runs.

use std::io;
use std::path::Path;

use crate::fsutil::Beneath;
use wasmtime::component::{Linker, Resource, ResourceType};
use wasmtime::StoreContextMut;
use wasmtime_wasi::filesystem::{Dir, File, FsPerms, OpenMode};
use wasmtime_wasi::p2::bindings::sync::filesystem::types::{
    Descriptor, DescriptorFlags, DescriptorType, DirectoryEntry, ErrorCode, OpenFlags, PathFlags,
};

use super::state::SandboxState;

/// The WASI interface versions whose functions are replaced (the newest 0.2 release;
/// guests importing an older 0.2.x are linked to it).
const TYPES: &str = "wasi:filesystem/types@0.2.12";
const PREOPENS: &str = "wasi:filesystem/preopens@0.2.12";

/// Whether the host's WASI context lets file operations block the calling thread (it does
/// not: see [`super::context`]); descriptors made here must agree.
const ALLOW_BLOCKING_CURRENT_THREAD: bool = false;

type OpenResult = Result<Resource<Descriptor>, ErrorCode>;

/// The preopened directories and their guest paths.
type Preopens = Vec<(Resource<Descriptor>, String)>;

/// A directory being listed, one entry per call.
pub(crate) struct Listing {
    entries: cap_primitives::fs::ReadDir,
}

fn get_directories<T: SandboxState>(
    mut store: StoreContextMut<'_, T>,
    (): (),
) -> wasmtime::Result<(Preopens,)> {
    let state = store.data_mut();
    let Some(granted) = state.granted().cloned() else {
        return Ok((Vec::new(),));
    };
    let mut preopens = Vec::with_capacity(granted.dirs.len());
    for dir in &granted.dirs {
        // A duplicate of the handle opened at load: the same directory, whatever its path
        // names now.
        let handle = dir.handle.try_clone()?;
        let descriptor = Descriptor::Dir(Dir::new(
            handle,
            FsPerms::ReadOnly,
            OpenMode::READ,
            ALLOW_BLOCKING_CURRENT_THREAD,
        ));
        preopens.push((state.table().push(descriptor)?, dir.guest.clone()));
    }
    Ok((preopens,))
}

fn open_at<T: SandboxState>(
    mut store: StoreContextMut<'_, T>,
    (dir, path_flags, path, open_flags, flags): (
        Resource<Descriptor>,
        PathFlags,
        String,
        OpenFlags,
        DescriptorFlags,
    ),
) -> wasmtime::Result<(OpenResult,)> {
    let state = store.data_mut();
    let Descriptor::Dir(parent) = state.table().get(&dir)? else {
        return Ok((Err(ErrorCode::NotDirectory),));
    };
    // wasmtime-wasi's order of refusals, for the flags it refuses.
    if flags.intersects(
        DescriptorFlags::FILE_INTEGRITY_SYNC
            | DescriptorFlags::DATA_INTEGRITY_SYNC
            | DescriptorFlags::REQUESTED_WRITE_SYNC,
    ) {
        return Ok((Err(ErrorCode::Unsupported),));
    }
    let creates = open_flags.intersects(OpenFlags::CREATE | OpenFlags::EXCLUSIVE);
    if open_flags.contains(OpenFlags::DIRECTORY)
        && (creates || open_flags.contains(OpenFlags::TRUNCATE))
    {
        return Ok((Err(ErrorCode::Invalid),));
    }
    let writes = creates
        || open_flags.contains(OpenFlags::TRUNCATE)
        || flags.intersects(DescriptorFlags::WRITE | DescriptorFlags::MUTATE_DIRECTORY);
    // Grants are read-only (wasmtime-wasi answers `not-permitted` for these too).
    if writes {
        return Ok((Err(ErrorCode::NotPermitted),));
    }
    let perms = parent.perms;
    let follow = path_flags.contains(PathFlags::SYMLINK_FOLLOW);
    let descriptor = match crate::fsutil::open_beneath(&parent.dir, Path::new(&path), follow) {
        Ok(Beneath::Directory(file)) => Descriptor::Dir(Dir::new(
            file,
            perms,
            OpenMode::READ,
            ALLOW_BLOCKING_CURRENT_THREAD,
        )),
        Ok(Beneath::Regular(_)) if open_flags.contains(OpenFlags::DIRECTORY) => {
            return Ok((Err(ErrorCode::NotDirectory),))
        }
        Ok(Beneath::Regular(file)) => Descriptor::File(File::new(
            file,
            perms,
            OpenMode::READ,
            ALLOW_BLOCKING_CURRENT_THREAD,
        )),
        // A FIFO, a device, a socket: closed unread.
        Err(e) if crate::fsutil::not_regular(&e).is_some() => return Ok((Err(ErrorCode::Access),)),
        Err(e) => return Ok((Err(code(&e)),)),
    };
    Ok((Ok(state.table().push(descriptor)?),))
}

/// The WASI error code of an I/O error (wasmtime-wasi's own mapping).
fn code(e: &io::Error) -> ErrorCode {
    wasmtime_wasi::p2::bindings::filesystem::types::ErrorCode::from(e).into()
}

fn read_directory<T: SandboxState>(
    mut store: StoreContextMut<'_, T>,
    (dir,): (Resource<Descriptor>,),
) -> wasmtime::Result<(Result<Resource<Listing>, ErrorCode>,)> {
    let state = store.data_mut();
    let Descriptor::Dir(d) = state.table().get(&dir)? else {
        return Ok((Err(ErrorCode::NotDirectory),));
    };
    // A fresh descriptor of the directory, so the listing starts at its first entry however
    // often the plugin lists it.
    let entries = match cap_primitives::fs::read_base_dir(&d.dir) {
        Ok(entries) => entries,
        Err(e) => return Ok((Err(code(&e)),)),
    };
    Ok((Ok(state.table().push(Listing { entries })?),))
}

fn read_directory_entry<T: SandboxState>(
    mut store: StoreContextMut<'_, T>,
    (listing,): (Resource<Listing>,),
) -> wasmtime::Result<(Result<Option<DirectoryEntry>, ErrorCode>,)> {
    let state = store.data_mut();
    let next = state.table().get_mut(&listing)?.entries.next();
    let entry = match next {
        None => return Ok((Ok(None),)),
        Some(Err(e)) => return Ok((Err(code(&e)),)),
        Some(Ok(entry)) => entry,
    };
    let type_ = match entry.file_type() {
        Ok(file_type) => descriptor_type(file_type),
        Err(e) => return Ok((Err(code(&e)),)),
    };
    let Ok(name) = entry.file_name().into_string() else {
        return Ok((Err(ErrorCode::IllegalByteSequence),));
    };
    // Names handed to the guest count toward the call's output budget, like the bytes of
    // any other import.
    state.charge(name.len(), "directory listing")?;
    Ok((Ok(Some(DirectoryEntry { type_, name })),))
}

fn descriptor_type(file_type: cap_primitives::fs::FileType) -> DescriptorType {
    if file_type.is_dir() {
        return DescriptorType::Directory;
    }
    if file_type.is_file() {
        return DescriptorType::RegularFile;
    }
    if file_type.is_symlink() {
        return DescriptorType::SymbolicLink;
    }
    #[cfg(unix)]
    {
        use cap_primitives::fs::FileTypeExt;
        if file_type.is_fifo() {
            return DescriptorType::Fifo;
        }
        if file_type.is_char_device() {
            return DescriptorType::CharacterDevice;
        }
        if file_type.is_block_device() {
            return DescriptorType::BlockDevice;
        }
        if file_type.is_socket() {
            return DescriptorType::Socket;
        }
    }
    DescriptorType::Unknown
}

/// Replace the imports named in the module docs.
pub(crate) fn add_guarded_files<T: SandboxState>(linker: &mut Linker<T>) -> wasmtime::Result<()> {
    linker.allow_shadowing(true);
    linker
        .instance(PREOPENS)?
        .func_wrap("get-directories", get_directories::<T>)?;
    let mut types = linker.instance(TYPES)?;
    types.resource(
        "directory-entry-stream",
        ResourceType::host::<Listing>(),
        |mut store: StoreContextMut<'_, T>, rep| {
            store
                .data_mut()
                .table()
                .delete(Resource::<Listing>::new_own(rep))?;
            Ok(())
        },
    )?;
    types.func_wrap("[method]descriptor.open-at", open_at::<T>)?;
    types.func_wrap("[method]descriptor.read-directory", read_directory::<T>)?;
    types.func_wrap(
        "[method]directory-entry-stream.read-directory-entry",
        read_directory_entry::<T>,
    )?;
    linker.allow_shadowing(false);
    Ok(())
}
