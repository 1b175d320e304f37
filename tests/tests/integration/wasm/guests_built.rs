//! tests/build.rs built every guest plugin into a Wasm component and told us where.

include!(concat!(env!("OUT_DIR"), "/guests.rs"));

/// A component starts with the Wasm magic and the component-model layer/version bytes (a core
/// module would have `01 00 00 00` instead).
const COMPONENT_HEADER: [u8; 8] = [0x00, 0x61, 0x73, 0x6d, 0x0d, 0x00, 0x01, 0x00];

#[test]
fn every_guest_is_a_component() {
    assert!(!GUESTS.is_empty(), "build.rs found no guests");
    for (name, path) in GUESTS {
        let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("guest {name} at {path}: {e}"));
        assert!(
            bytes.starts_with(&COMPONENT_HEADER),
            "guest {name} at {path} is not a component: starts with {:02x?}",
            &bytes[..bytes.len().min(8)]
        );
    }
}

#[test]
fn the_example_guests_are_all_there() {
    let names: Vec<&str> = GUESTS.iter().map(|(name, _)| *name).collect();
    for expected in [
        "declare",
        "persona",
        "clock",
        "tool_guide",
        "runtime_policy",
        "redactor",
        "hostile",
        "mcp_instructions",
        "project_instructions",
        "git_context",
        "remote_instructions",
        "wit_future",
        "declare_v2",
        "persona_v2",
        "tool_guide_v2",
        "redactor_v2",
        "clock_v2",
        "answers_probe",
    ] {
        assert!(
            names.contains(&expected),
            "guest {expected} missing from {names:?}"
        );
    }
    // The compile-time variables name the same files as guests.rs.
    assert_eq!(env!("GUEST_DECLARE"), GUEST_DECLARE);
}
