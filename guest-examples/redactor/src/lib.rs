//! `redactor`: an assembly listener that lets the rest of the chain run, then rewrites the
//! result, replacing every configured word with `[redacted]`. Running outermost (prepended)
//! means it sees what every inner listener added.

use prompt_plugin::{config, declare, AssembleContext, Assembly, Error, Plugin};
use serde::Deserialize;

const KEY: &str = "redactor";
const MARK: &str = "[redacted]";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    /// Words to redact (exact, case-sensitive substrings).
    #[serde(default = "default_words")]
    words: Vec<String>,
    /// Redact runtime contexts too, not only sections.
    #[serde(default)]
    contexts: bool,
    /// Run before listeners registered without `prepend` (outermost), so the rewrite sees
    /// their contributions. Default true.
    #[serde(default = "yes")]
    prepend: bool,
    /// Receive every assembly, whatever its scope.
    #[serde(default)]
    global: bool,
}

fn default_words() -> Vec<String> {
    vec!["SECRET".to_owned()]
}

fn yes() -> bool {
    true
}

struct Redactor {
    words: Vec<String>,
    contexts: bool,
}

impl Redactor {
    /// The text with every word replaced, or `None` when nothing matched (so untouched
    /// entries are not copied back across the boundary).
    fn redact(&self, text: &str) -> Option<String> {
        let mut out: Option<String> = None;
        for word in &self.words {
            let current = out.as_deref().unwrap_or(text);
            if current.contains(word.as_str()) {
                out = Some(current.replace(word.as_str(), MARK));
            }
        }
        out
    }

    /// The positions `find` reports for any of the words, in order, each once.
    fn hits(&self, find: impl Fn(&str) -> Vec<u32>) -> Vec<u32> {
        let mut hits: Vec<u32> = self.words.iter().flat_map(|w| find(w)).collect();
        hits.sort_unstable();
        hits.dedup();
        hits
    }
}

impl Plugin for Redactor {
    fn init(config: serde_json::Value) -> Result<Self, Error> {
        let Config {
            words,
            contexts,
            prepend,
            global,
        } = config::parse(config)?;
        if words.iter().any(String::is_empty) {
            return Err(Error::invalid_input(
                "invalid config: words: an empty word would redact everything",
            ));
        }
        declare::listener_with(KEY, prepend, global)?;
        Ok(Redactor { words, contexts })
    }

    fn on_assemble(
        &mut self,
        _key: &str,
        a: &Assembly,
        _cx: &AssembleContext,
    ) -> Result<(), Error> {
        a.next()?;
        // Let the host find the sections to rewrite, then copy only those across the
        // boundary.
        for index in self.hits(|word| a.find_sections(word)) {
            if let Some(section) = a.section_at(index) {
                if let Some(text) = self.redact(&section.text) {
                    a.set_section_text_at(index, &text);
                }
            }
        }
        if self.contexts {
            for index in self.hits(|word| a.find_contexts(word)) {
                if let Some(context) = a.context_at(index) {
                    if let Some(text) = self.redact(&context.text) {
                        a.set_context_text_at(index, &text);
                    }
                }
            }
        }
        Ok(())
    }
}

prompt_plugin::export_plugin!(Redactor);
