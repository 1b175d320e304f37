//! The system-prompt projection's conformance vectors P-A … P-K (replacing and in-history
//! routes, series starts, clearing, plain routes over history, compaction, non-simple and
//! dormant nodes), replayed against a real session log. Every scenario ends by reopening the
//! log and checking the replay rebuilds the same surface.

use serde_json::json;

use crate::projection::test_support::{s, Log, C, N, R, RN};
use crate::session::ContentBlock;

#[test]
fn p_a_replacing_route() {
    let mut log = Log::new();
    assert_eq!(log.admit("v1", R), s(&["app(\"v1\")"]));
    assert_eq!(log.surface(), s(&["0S\"v1\""]));
    assert_eq!(log.wire(), s(&["system:v1"]));

    log.user();
    assert!(log.admit("v1", R).is_empty());
    assert_eq!(log.wire(), s(&["system:v1", "user:u1"]));

    assert_eq!(log.admit("v2", R), s(&["rep(0,\"v2\")"]));
    assert_eq!(log.surface(), s(&["2S\"v2\"", "1U"]));
    assert_eq!(log.wire(), s(&["system:v2", "user:u1"]));

    assert_eq!(log.admit("", R), s(&["rep(2,\"\")"]));
    assert_eq!(log.surface(), s(&["3S\"\"", "1U"]));
    assert_eq!(log.wire(), s(&["user:u1"]));

    assert!(log.admit("", R).is_empty());
    assert_eq!(log.wire(), s(&["user:u1"]));

    assert_eq!(log.admit("v3", R), s(&["rep(3,\"v3\")"]));
    assert_eq!(log.surface(), s(&["4S\"v3\"", "1U"]));
    assert_eq!(log.wire(), s(&["system:v3", "user:u1"]));
    assert_eq!(log.session.surface().replace_generation(), 3);
    log.reopen();
}

#[test]
fn p_b_empty_first_head_reserves_the_slot() {
    let mut log = Log::new();
    assert_eq!(log.admit("", R), s(&["app(\"\")"]));
    assert_eq!(log.surface(), s(&["0S\"\""]));
    assert!(log.wire().is_empty());

    log.user();
    assert!(log.admit("", C).is_empty());
    assert_eq!(log.wire(), s(&["user:u1"]));

    let commits = log.project("Follow this guidance.", R);
    assert_eq!(commits.len(), 1);
    assert_eq!(
        serde_json::to_value(&commits[0].intent).unwrap(),
        json!({"surfaceOp":{"op":"replace","startSeq":0,"endSeq":0},"sourceEventSeqs":[0]})
    );
    assert_eq!(
        log.admit("Follow this guidance.", R),
        s(&["rep(0,\"Follow this guidance.\")"])
    );
    assert_eq!(log.surface(), s(&["2S\"Follow this guidance.\"", "1U"]));
    assert_eq!(log.wire(), s(&["system:Follow this guidance.", "user:u1"]));
    log.reopen();
}

#[test]
fn p_c_in_history_appends_and_compares_with_latest() {
    let mut log = Log::new();
    assert_eq!(log.admit("v1", C), s(&["app(\"v1\")"]));
    log.user();
    assert!(log.admit("v1", C).is_empty());
    assert_eq!(log.wire(), s(&["system:v1", "user:u1"]));

    assert_eq!(log.admit("v2", C), s(&["app(\"v2\")"]));
    assert_eq!(log.wire(), s(&["system:v1", "user:u1", "system:v2"]));
    assert!(log.admit("v2", C).is_empty());

    log.user();
    assert_eq!(log.admit("v3", C), s(&["app(\"v3\")"]));
    assert_eq!(
        log.wire(),
        s(&["system:v1", "user:u1", "system:v2", "user:u2", "system:v3"])
    );

    // Step 6: compared with latest ("v3"), not the head ("v1").
    assert_eq!(log.admit("v1", C), s(&["app(\"v1\")"]));
    assert_eq!(
        log.surface(),
        s(&["0S\"v1\"", "1U", "2S\"v2\"", "3U", "4S\"v3\"", "5S\"v1\""])
    );

    // Step 7: series start; the head already says "v1", so only the tails are emptied.
    assert_eq!(
        log.admit("v1", N),
        s(&["rep(2,\"\")", "rep(4,\"\")", "rep(5,\"\")"])
    );
    assert_eq!(log.wire(), s(&["system:v1", "user:u1", "user:u2"]));
    assert_eq!(
        log.surface(),
        s(&["0S\"v1\"", "1U", "6S\"\"", "3U", "7S\"\"", "8S\"\""])
    );

    // Step 8: tails are dormant, latest = head = "v1".
    assert!(log.admit("v1", C).is_empty());
    log.reopen();
}

#[test]
fn p_d_series_start_rebaselines_the_head() {
    let mut log = Log::new();
    assert_eq!(log.admit("v1", C), s(&["app(\"v1\")"]));
    log.user();
    assert_eq!(log.admit("v2", N), s(&["rep(0,\"v2\")"]));
    assert_eq!(log.surface(), s(&["2S\"v2\"", "1U"]));

    log.user();
    assert_eq!(log.admit("v3", C), s(&["app(\"v3\")"]));
    assert_eq!(log.surface(), s(&["2S\"v2\"", "1U", "3U", "4S\"v3\""]));

    // Tail first, then head.
    assert_eq!(log.admit("v4", N), s(&["rep(4,\"\")", "rep(2,\"v4\")"]));
    assert_eq!(log.wire(), s(&["system:v4", "user:u1", "user:u2"]));

    assert!(log.admit("v4", C).is_empty());
    log.reopen();
}

#[test]
fn p_e_clearing_in_history_empties_every_active_node() {
    let mut log = Log::new();
    assert_eq!(log.admit("v1", C), s(&["app(\"v1\")"]));
    log.user();
    assert_eq!(log.admit("v2", C), s(&["app(\"v2\")"]));
    assert_eq!(log.surface(), s(&["0S\"v1\"", "1U", "2S\"v2\""]));

    assert_eq!(log.admit("", C), s(&["rep(2,\"\")", "rep(0,\"\")"]));
    assert_eq!(log.wire(), s(&["user:u1"]));
    assert!(log.admit("", C).is_empty());

    let commits = log.project("v3", R);
    assert_eq!(commits.len(), 1);
    assert_eq!(
        serde_json::to_value(&commits[0].message.content).unwrap(),
        json!([{"type":"text","text":"v3"}])
    );
    assert_eq!(log.admit("v3", R), s(&["rep(4,\"v3\")"]));
    assert_eq!(log.wire(), s(&["system:v3", "user:u1"]));
    log.reopen();
}

#[test]
fn p_f_plain_route_normalises_capable_history() {
    let mut log = Log::new();
    assert_eq!(log.admit("p1", C), s(&["app(\"p1\")"]));
    log.user();
    assert_eq!(log.admit("p2", C), s(&["app(\"p2\")"]));
    log.user();
    assert_eq!(log.surface(), s(&["0S\"p1\"", "1U", "2S\"p2\"", "3U"]));

    assert_eq!(log.admit("p2", R), s(&["rep(2,\"\")", "rep(0,\"p2\")"]));
    assert_eq!(log.wire(), s(&["system:p2", "user:u1", "user:u2"]));
    assert!(log.admit("p2", R).is_empty());
    log.reopen();
}

#[test]
fn p_g_first_capable_request_after_plain_appends() {
    let mut log = Log::new();
    assert_eq!(log.admit("p1", R), s(&["app(\"p1\")"]));
    log.user();
    assert_eq!(log.admit("p2", C), s(&["app(\"p2\")"]));
    log.user();
    assert_eq!(
        log.wire(),
        s(&["system:p1", "user:u1", "system:p2", "user:u2"])
    );
    log.reopen();
}

#[test]
fn p_h_late_head_appends_again_after_compaction() {
    let mut log = Log::new();
    log.user();
    assert_eq!(log.admit("late", R), s(&["app(\"late\")"]));
    assert_eq!(log.surface(), s(&["0U", "1S\"late\""]));
    assert!(log.admit("late", R).is_empty());

    // A compaction summary shadows the system node (not surface node 0: no protection).
    log.compact(1, 1);
    assert_eq!(log.surface(), s(&["0U", "2U"]));
    assert_eq!(log.admit("late", R), s(&["app(\"late\")"]));
    assert_eq!(log.surface(), s(&["0U", "2U", "3S\"late\""]));
    log.reopen();
}

#[test]
fn p_i_non_simple_nodes_are_cleared_not_dormant() {
    let mut log = Log::new();
    log.raw_system(vec![ContentBlock::text("a"), ContentBlock::text("b")]);
    log.user();
    log.raw_system(vec![ContentBlock::Other(
        json!({"type":"reasoning","text":"why"}),
    )]);
    assert_eq!(log.surface(), s(&["0S*", "1U", "2S*"]));

    assert_eq!(log.admit("", C), s(&["rep(2,\"\")", "rep(0,\"\")"]));
    assert_eq!(log.wire(), s(&["user:u1"]));
    assert!(log.admit("", C).is_empty());
    log.reopen();
}

#[test]
fn p_j_non_simple_head_never_equals_the_prompt() {
    let mut log = Log::new();
    log.raw_system(vec![ContentBlock::text("a"), ContentBlock::text("b")]);
    log.user();
    assert_eq!(log.admit("ab", C), s(&["app(\"ab\")"]));
    assert_eq!(
        log.wire(),
        s(&[
            r#"system:[{"type":"text","text":"a"},{"type":"text","text":"b"}]"#,
            "user:u1",
            "system:ab"
        ])
    );
    log.reopen();
}

#[test]
fn p_k_dormant_tail_after_normalise() {
    let mut log = Log::new();
    assert_eq!(log.admit("v1", C), s(&["app(\"v1\")"]));
    log.user();
    assert_eq!(log.admit("v2", C), s(&["app(\"v2\")"]));

    assert_eq!(log.admit("v1", RN), s(&["rep(2,\"\")"]));
    assert_eq!(log.surface(), s(&["0S\"v1\"", "1U", "3S\"\""]));
    assert!(log.admit("v1", C).is_empty());
    assert_eq!(log.admit("v2", C), s(&["app(\"v2\")"]));
    assert_eq!(log.wire(), s(&["system:v1", "user:u1", "system:v2"]));
    log.reopen();
}
