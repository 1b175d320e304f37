//! What each kind of template declares, in words every language's README and test share.
//! Entry names are the same in every language.

use super::Kind;

/// The kind-specific text of a project (with placeholders, see [`super::Names::fill`]).
pub(super) struct KindText {
    /// A Markdown list of what the plugin declares, for the README.
    pub entries: &'static str,
    /// A line `prompt-host check` prints for the plugin.
    pub check: &'static [&'static str],
    /// What `prompt-host render --config host.toml --fact cwd=/work` prints of the plugin's,
    /// for the README.
    pub sample: &'static str,
    /// Text `prompt-host render --config host.toml --fact cwd=/work` prints.
    pub render: &'static [&'static str],
    /// Text `prompt-host assemble --config host.toml --fact cwd=/work` prints.
    pub assemble: &'static [&'static str],
}

pub(super) fn text(kind: Kind) -> KindText {
    match kind {
        Kind::Section => KindText {
            entries: "\
- `__NAME__:rules`, a **fixed section** (order 150): its text is stored by the host at
  `init`, so assemblies never call the plugin for it. It references the host variable
  `{{cwd}}`, filled from the caller's `cwd` fact. Config: `rules` (the text).
- `__NAME__:scope`, a **dynamic section** (order 160): the host asks the plugin for its text
  once per assembly; it names the scope the assembly is for.",
            check: &[
                "section  \"__NAME__:rules\" order 150 (fixed",
                "section  \"__NAME__:scope\" order 160 (dynamic)",
            ],
            sample: "Work in /work. Keep answers short.\n\nThis assembly is for the global scope.",
            render: &[
                "Work in /work. Keep answers short.",
                "This assembly is for the global scope.",
            ],
            assemble: &["\"__NAME__:scope\""],
        },
        Kind::Variable => KindText {
            entries: "\
- `__SNAKE___scope`, a **dynamic variable**: the host asks the plugin for its value once per
  assembly; any section may reference it as `{{__SNAKE___scope}}`. Its value is the scope
  chain, or the config's `unscoped` (default `the global scope`) for a global assembly.
- `__NAME__:where`, a **fixed section** (order 150) that references it: `This prompt is
  assembled for {{__SNAKE___scope}}.`",
            check: &[
                "variable \"__SNAKE___scope\" (dynamic)",
                "section  \"__NAME__:where\" order 150 (fixed",
            ],
            sample: "This prompt is assembled for the global scope.",
            render: &["This prompt is assembled for the global scope."],
            assemble: &["\"__SNAKE___scope\""],
        },
        Kind::Tools => KindText {
            entries: "\
- a **dynamic tool provider** (key `__NAME__`): the host asks the plugin for its tools once
  per assembly. It offers one tool, `__SNAKE___word_count`, whose parameters are a JSON
  Schema object; a parameter's description names the caller's `cwd` fact. Config:
  `max_bytes` (in the tool's description).
- `__NAME__:tools`, a **fixed section** (order 150, the tool-guidance band) telling the model
  when to use the tool. Tools are not part of the prompt's text: `prompt-host assemble`
  shows them.",
            check: &["tools    dynamic provider \"__NAME__\""],
            sample: "Use __SNAKE___word_count to measure a text file instead of reading it whole.",
            render: &[
                "Use __SNAKE___word_count to measure a text file instead of reading it whole.",
            ],
            assemble: &["\"__SNAKE___word_count\"", "relative to /work."],
        },
        Kind::Listener => KindText {
            entries: "\
- `__NAME__:outline`, a **fixed section** (order 190).
- an **assembly listener** (key `__NAME__`): for every assembly it calls `next()` to let the
  rest of the listener chain run, then rewrites `__NAME__:outline` to list the sections the
  prompt ends up with. Config: `intro` (the words before the list).",
            check: &["listener \"__NAME__\""],
            sample:
                "Sections of this prompt: harness:identity, deployment:persona, __NAME__:outline.",
            render: &["Sections of this prompt: ", "__NAME__:outline."],
            assemble: &["\"__NAME__:outline\""],
        },
    }
}
