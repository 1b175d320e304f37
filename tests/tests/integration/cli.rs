//! The `prompt-host` command line: each command and error class, what a new user meets, `new`'s
//! projects, `dev`'s loop, child processes attacked, and the outputs held to recorded ones.

pub(crate) mod attacked_processes;
pub(crate) mod commands;
pub(crate) mod details;
pub(crate) mod dev_loop;
pub(crate) mod inspect_page;
pub(crate) mod outputs_unchanged;
pub(crate) mod scaffold;
pub(crate) mod sessions;
