//! Opening files in a granted directory never blocks the host.
//!
//! wasmtime-wasi opens a path with `open(2)` inside a host call, where epoch interruption
//! cannot reach: opening a FIFO for reading waits for a writer, forever if none comes, and a
//! device may hand out endless data. `[method]descriptor.open-at` is therefore replaced by a
//! version that first looks at what the path is (`stat-at`, which never blocks) and refuses
//! anything but a regular file, a directory or a symbolic link (followed or not as the
//! guest asked) with `access`, before calling wasmtime-wasi's own `open-at`. Without a grant
//! there is no directory to open anything in, and this never runs.

use wasmtime::component::{Linker, Resource};
use wasmtime::StoreContextMut;
use wasmtime_wasi::filesystem::WasiFilesystemView;
use wasmtime_wasi::p2::bindings::sync::filesystem::types::{
    Descriptor, DescriptorFlags, DescriptorType, ErrorCode, HostDescriptor, OpenFlags, PathFlags,
};

use super::state::HostState;

type OpenResult = Result<Resource<Descriptor>, ErrorCode>;

fn open_at(
    mut store: StoreContextMut<'_, HostState>,
    (dir, path_flags, path, open_flags, flags): (
        Resource<Descriptor>,
        PathFlags,
        String,
        OpenFlags,
        DescriptorFlags,
    ),
) -> wasmtime::Result<(OpenResult,)> {
    let state = store.data_mut();
    let mut view = state.filesystem();
    let borrowed = Resource::<Descriptor>::new_borrow(dir.rep());
    // A path that does not exist yet (a create, refused by the read-only permissions) or
    // cannot be looked at gets `open-at`'s own answer.
    if let Ok(stat) = view.stat_at(borrowed, path_flags, path.clone()) {
        let allowed = matches!(
            stat.type_,
            DescriptorType::RegularFile | DescriptorType::Directory | DescriptorType::SymbolicLink
        );
        if !allowed {
            return Ok((Err(ErrorCode::Access),));
        }
    }
    match view.open_at(dir, path_flags, path, open_flags, flags) {
        Ok(descriptor) => Ok((Ok(descriptor),)),
        Err(error) => Ok((Err(error.downcast()?.into()),)),
    }
}

/// Replace `[method]descriptor.open-at` of `wasi:filesystem/types` (see the module docs).
pub(crate) fn add_guarded_open(linker: &mut Linker<HostState>) -> wasmtime::Result<()> {
    linker.allow_shadowing(true);
    linker
        .instance("wasi:filesystem/types@0.2.12")?
        .func_wrap("[method]descriptor.open-at", open_at)?;
    linker.allow_shadowing(false);
    Ok(())
}
