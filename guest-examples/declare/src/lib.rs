//! `declare`: registers whatever its JSON config says, so host tests can set up any registry
//! shape without writing a plugin per case. See README.md for the config schema.

mod spec;

use std::collections::BTreeMap;

use prompt_plugin::{
    declare, log, AssembleContext, Assembly, Entry, Error, Plugin, ToolSet, Version,
};
use serde_json::{json, Value};

use spec::{Source, Spec, Step, Texts, ToolsSpec, VariableValue};

/// What a dynamic entry does when the host calls it.
enum Dynamic {
    Text(String),
    Value(Option<String>),
    Fail(String),
}

/// A dynamic entry and how many times the host called it (for `${call}`), kept together so
/// a call looks its entry up once.
struct Counted {
    dynamic: Dynamic,
    calls: u64,
    /// Whether the value changes on every call (`${call}`, or a failure): decided once here,
    /// not by searching the template on every call.
    per_call: bool,
}

impl From<Dynamic> for Counted {
    fn from(dynamic: Dynamic) -> Self {
        let per_call = match &dynamic {
            Dynamic::Text(t) | Dynamic::Value(Some(t)) => t.contains("${call}"),
            Dynamic::Value(None) => false,
            Dynamic::Fail(_) => true,
        };
        Counted {
            dynamic,
            calls: 0,
            per_call,
        }
    }
}

impl Counted {
    /// The version of this entry's value under `keep_until_context_changes` (contract
    /// 0.2.0): a template without `${call}` expands to the same text until the context
    /// changes, so the host may keep it until then. `${call}` changes on every call and a
    /// failure is no value. Without the option the SDK's default applies: the value is
    /// computed on every call and answered "unchanged" when it equals the previous one.
    fn version(&self, keep: bool) -> Option<Version> {
        (keep && !self.per_call).then_some(Version::Context)
    }
}

/// Instance state: the dynamic entries and the listener script.
struct Declare {
    sections: BTreeMap<String, Counted>,
    contexts: BTreeMap<String, Counted>,
    variables: BTreeMap<String, Counted>,
    tools: BTreeMap<String, ToolSet>,
    listener: Option<spec::ListenerSpec>,
    /// `keep_until_context_changes` in the config.
    keep_until_context_changes: bool,
}

fn dynamic(source: Source) -> (Option<String>, Option<Dynamic>) {
    match source {
        Source::Fixed(text) => (Some(text), None),
        Source::Dynamic(text) => (None, Some(Dynamic::Text(text))),
        Source::Fail(message) => (None, Some(Dynamic::Fail(message))),
    }
}

impl Plugin for Declare {
    fn init(config: Value) -> Result<Self, Error> {
        let Spec {
            sections,
            contexts,
            variables,
            tools,
            suppress_runtime_context,
            keep_until_context_changes,
            listener,
        } = spec::parse(&config)?;
        let mut state = Declare {
            sections: BTreeMap::new(),
            contexts: BTreeMap::new(),
            variables: BTreeMap::new(),
            tools: BTreeMap::new(),
            listener: None,
            keep_until_context_changes,
        };
        for s in sections {
            let (fixed, dynamic) = dynamic(s.text);
            declare::section_raw(&prompt_plugin::SectionDecl {
                name: s.name.clone(),
                order: s.order,
                text: match fixed {
                    Some(text) => prompt_plugin::TextSource::Fixed(text),
                    None => prompt_plugin::TextSource::Dynamic,
                },
                complete: s.complete,
            })?;
            if let Some(d) = dynamic {
                state.sections.insert(s.name, d.into());
            }
        }
        for c in contexts {
            let (fixed, dynamic) = dynamic(c.text);
            match fixed {
                Some(text) => declare::context(&c.name, c.order, &text)?,
                None => declare::dynamic_context(&c.name, c.order)?,
            }
            if let Some(d) = dynamic {
                state.contexts.insert(c.name, d.into());
            }
        }
        for v in variables {
            match v.value {
                VariableValue::Fixed(value) => declare::variable(&v.name, value.as_deref())?,
                VariableValue::Dynamic(value) => {
                    declare::dynamic_variable(&v.name)?;
                    state.variables.insert(v.name, Dynamic::Value(value).into());
                }
                VariableValue::Fail(message) => {
                    declare::dynamic_variable(&v.name)?;
                    state
                        .variables
                        .insert(v.name, Dynamic::Fail(message).into());
                }
            }
        }
        for ToolsSpec {
            schemas,
            known_names,
            dynamic,
        } in tools
        {
            let set = ToolSet {
                schemas,
                known_names,
            };
            match dynamic {
                Some(key) => {
                    declare::dynamic_tools(&key)?;
                    state.tools.insert(key, set);
                }
                None => declare::tool_set(set)?,
            }
        }
        if suppress_runtime_context {
            declare::suppress_runtime_context()?;
        }
        if let Some(l) = listener {
            declare::listener_with(&l.key, l.prepend, l.global)?;
            state.listener = Some(l);
        }
        Ok(state)
    }

    fn section_text(&mut self, name: &str, cx: &AssembleContext) -> Result<String, Error> {
        match count(&mut self.sections, name) {
            Some((Dynamic::Text(t), call)) => Ok(expand(t, call, cx)),
            Some((Dynamic::Fail(m), _)) => Err(Error::failed(m.clone())),
            _ => Err(Error::invalid_input(format!(
                "no dynamic section \"{name}\""
            ))),
        }
    }

    fn context_text(&mut self, name: &str, cx: &AssembleContext) -> Result<String, Error> {
        match count(&mut self.contexts, name) {
            Some((Dynamic::Text(t), call)) => Ok(expand(t, call, cx)),
            Some((Dynamic::Fail(m), _)) => Err(Error::failed(m.clone())),
            _ => Err(Error::invalid_input(format!(
                "no dynamic context \"{name}\""
            ))),
        }
    }

    fn variable(&mut self, name: &str, cx: &AssembleContext) -> Result<Option<String>, Error> {
        match count(&mut self.variables, name) {
            Some((Dynamic::Value(v), call)) => Ok(v.as_ref().map(|t| expand(t, call, cx))),
            Some((Dynamic::Fail(m), _)) => Err(Error::failed(m.clone())),
            _ => Err(Error::invalid_input(format!(
                "no dynamic variable \"{name}\""
            ))),
        }
    }

    fn version(&mut self, entry: Entry<'_>, _cx: &AssembleContext) -> Option<Version> {
        let keep = self.keep_until_context_changes;
        match entry {
            Entry::Section(name) => self.sections.get(name)?.version(keep),
            Entry::Context(name) => self.contexts.get(name)?.version(keep),
            Entry::Variable(name) => self.variables.get(name)?.version(keep),
            // A tool set comes from the config and never changes.
            Entry::Tools(key) => (keep && self.tools.contains_key(key)).then_some(Version::Context),
        }
    }

    fn tools(&mut self, key: &str, _cx: &AssembleContext) -> Result<ToolSet, Error> {
        self.tools
            .get(key)
            .cloned()
            .ok_or_else(|| Error::invalid_input(format!("no dynamic tool provider \"{key}\"")))
    }

    fn on_assemble(&mut self, key: &str, a: &Assembly, cx: &AssembleContext) -> Result<(), Error> {
        let Some(listener) = &self.listener else {
            return Err(Error::invalid_input(format!("no listener \"{key}\"")));
        };
        for step in &listener.steps {
            match step {
                Step::PushSection(s) => a.push_section(s),
                Step::InsertSection(i, s) => a.insert_section(*i, s),
                Step::SetSection(s) => {
                    a.set_section(&s.name, &s.text);
                }
                Step::SetTextAt(texts, i, text) => {
                    let (found, record) = match texts {
                        Texts::Sections => (a.set_section_text_at(*i, text), "set_section_at"),
                        Texts::Contexts => (a.set_context_text_at(*i, text), "set_context_at"),
                    };
                    log::info(
                        json!({ "record": record, "listener": key, "value": found }).to_string(),
                    );
                }
                Step::RecordFind(texts, needle) => record_find(key, *texts, needle, a),
                Step::SetAll(Texts::Sections, all) => a.set_sections(all),
                Step::SetAll(Texts::Contexts, all) => a.set_contexts(all),
                Step::RemoveSection(n) => {
                    a.remove_section(n);
                }
                Step::PushContext(c) => a.push_context(c),
                Step::SetContext(c) => {
                    a.set_context(&c.name, &c.text);
                }
                Step::RemoveContext(n) => {
                    a.remove_context(n);
                }
                Step::PushTool(t) => a.push_tool(t)?,
                Step::RemoveTool(n) => {
                    a.remove_tool(n);
                }
                Step::SetVariable(n, v) => a.set_variable(n, v.as_deref()),
                Step::Record(what) => record(key, what, a, cx),
                Step::Next => a.next()?,
                Step::Clear => a.clear(),
                Step::Fail(m) => return Err(Error::failed(m.clone())),
            }
        }
        Ok(())
    }
}

/// Bump and return the 1-based call count of one dynamic entry.
/// Count one call of the entry `name`: the entry and its call number (1 for the first).
fn count<'a>(entries: &'a mut BTreeMap<String, Counted>, name: &str) -> Option<(&'a Dynamic, u64)> {
    let entry = entries.get_mut(name)?;
    entry.calls += 1;
    Some((&entry.dynamic, entry.calls))
}

/// Expand `${call}`, `${scope}`, `${scope_chain}` and `${fact:NAME}` in a dynamic template.
/// A `$`-syntax keeps clear of the host's `{{variable}}` references, which pass through.
fn expand(template: &str, call: u64, cx: &AssembleContext) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    // Look for `$` (a byte search) and then check for `{`: much cheaper in Wasm than a
    // substring search for `${`.
    while let Some(dollar) = rest.find('$') {
        if !rest[dollar + 1..].starts_with('{') {
            out.push_str(&rest[..=dollar]);
            rest = &rest[dollar + 1..];
            continue;
        }
        let start = dollar;
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[start..]);
            return out;
        };
        let name = &after[..end];
        match name {
            "call" => out.push_str(&call.to_string()),
            "scope" => out.push_str(cx.nearest_scope().unwrap_or("")),
            "scope_chain" => out.push_str(&cx.scope_chain.join(",")),
            _ => match name.strip_prefix("fact:") {
                Some(fact) => out.push_str(cx.fact(fact).unwrap_or("")),
                None => out.push_str(&rest[start..start + 3 + end]),
            },
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    out
}

/// Log `find-sections(needle)` (or `find-contexts`) and what `section-at` (`context-at`)
/// returns for each hit and for the position after the last entry (none).
fn record_find(key: &str, texts: Texts, needle: &str, a: &Assembly) {
    let (hits, len, record) = match texts {
        Texts::Sections => (a.find_sections(needle), a.section_names().len(), "find"),
        Texts::Contexts => (
            a.find_contexts(needle),
            a.context_names().len(),
            "find_contexts",
        ),
    };
    let end = u32::try_from(len).unwrap_or(u32::MAX);
    let at: Vec<Value> = hits
        .iter()
        .chain(std::iter::once(&end))
        .map(|i| {
            let entry = match texts {
                Texts::Sections => a.section_at(*i),
                Texts::Contexts => a.context_at(*i),
            };
            json!(entry.map(|t| (t.name, t.text)))
        })
        .collect();
    log::info(
        json!({ "record": record, "listener": key, "value": { "hits": hits, "at": at } })
            .to_string(),
    );
}

/// Log what the listener sees as one JSON line, so a test can read it from the host log.
fn record(key: &str, what: &str, a: &Assembly, cx: &AssembleContext) {
    let value = match what {
        "sections" => json!(a.section_names()),
        "contexts" => json!(a.context_names()),
        "tools" => json!(a.tool_names()),
        "variables" => json!(a.variables()),
        _ => json!({ "scope_chain": cx.scope_chain, "facts": cx.facts }),
    };
    log::info(json!({ "record": what, "listener": key, "value": value }).to_string());
}

prompt_plugin::export_plugin!(Declare);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expand_replaces_known_names_and_keeps_everything_else() {
        let cx = AssembleContext {
            scope_chain: vec!["agent:1".into(), "preset:coder".into()],
            facts: vec![("model".into(), "m1".into())],
        };
        assert_eq!(
            expand(
                "$ a$b ${scope} ${scope_chain} ${fact:model}|${fact:none}|${call} ${x} {{v}} $${scope} ${open",
                3,
                &cx
            ),
            "$ a$b agent:1 agent:1,preset:coder m1||3 ${x} {{v}} $agent:1 ${open"
        );
        assert_eq!(expand("", 1, &cx), "");
        assert_eq!(expand("tail $", 1, &cx), "tail $");
    }
}
