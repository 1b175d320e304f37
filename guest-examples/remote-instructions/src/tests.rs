use std::time::{Duration, Instant};

use super::*;

fn config(value: serde_json::Value) -> Result<RemoteInstructions, Error> {
    RemoteInstructions::from_config(serde_json::from_value(value).expect("a config"))
}

#[test]
fn a_url_is_split_as_wasi_http_takes_it() {
    let t = Target::parse("https://docs.example.com:8443/team/AGENTS.md?v=2").unwrap();
    assert_eq!(
        t.to_string(),
        "https://docs.example.com:8443/team/AGENTS.md"
    );
    assert_eq!(
        Target::parse("http://127.0.0.1:9000").unwrap().to_string(),
        "http://127.0.0.1:9000/"
    );
    assert_eq!(
        Target::parse("https://h?x=1").unwrap(),
        Target::parse("https://h/?x=1").unwrap()
    );
    for bad in [
        "ftp://h/x",
        "https://",
        "https://user@h/",
        "https://h/#frag",
        "h/x",
    ] {
        assert!(Target::parse(bad).is_err(), "{bad}");
    }
}

#[test]
fn cache_control_sets_freshness_under_the_operators_refresh() {
    assert_eq!(freshness::max_age("public, max-age=60"), Some(60));
    assert_eq!(freshness::max_age("no-cache"), Some(0));
    assert_eq!(freshness::max_age("private, No-Store"), Some(0));
    assert_eq!(freshness::max_age("public"), None);
    assert_eq!(freshness::max_age("max-age=x"), None);
    let refresh = Duration::from_secs(300);
    assert_eq!(
        freshness::fresh_for(Some(60), refresh),
        Duration::from_secs(60)
    );
    assert_eq!(freshness::fresh_for(Some(86400), refresh), refresh);
    assert_eq!(freshness::fresh_for(None, refresh), refresh);
}

#[test]
fn the_servers_max_age_at_its_extremes_never_overflows_the_clock() {
    let mut p = config(serde_json::json!({
        "url": "https://docs.example.com/x", "refresh_seconds": 31_536_000,
    }))
    .unwrap();
    let now = Instant::now();
    for max_age in [Some(0), Some(u64::MAX), None] {
        p.take(Fetched::NotModified { max_age }, now);
        assert!(p.fresh_until <= now + Duration::from_secs(31_536_000));
    }
    assert_eq!(
        freshness::max_age("max-age=18446744073709551615"),
        Some(u64::MAX)
    );
    assert_eq!(freshness::max_age("max-age=18446744073709551616"), None);
    assert_eq!(freshness::max_age("max-age=-1"), None);
}

#[test]
fn a_304_keeps_the_text_and_a_200_replaces_it() {
    let mut p = config(serde_json::json!({"url": "https://docs.example.com/x"})).unwrap();
    let now = Instant::now();
    p.take(
        Fetched::Text {
            text: "Be terse. {{not_a_variable}}".into(),
            etag: Some("\"v1\"".into()),
            max_age: Some(60),
        },
        now,
    );
    assert_eq!(p.fresh_until, now + Duration::from_secs(60));
    assert_eq!(p.section(), "{{remote_instructions}}");
    p.take(Fetched::NotModified { max_age: None }, now);
    assert_eq!(p.text, "Be terse. {{not_a_variable}}");
    assert_eq!(p.etag.as_deref(), Some("\"v1\""));
    assert_eq!(p.fresh_until, now + Duration::from_secs(300));
    p.take(
        Fetched::Text {
            text: String::new(),
            etag: None,
            max_age: None,
        },
        now,
    );
    assert_eq!(p.section(), "", "an empty document drops the section");
}

#[test]
fn a_bad_config_is_refused_naming_the_key() {
    let cases = [
        (
            serde_json::json!({"url": "ftp://x"}),
            "invalid config: url: \"ftp://x\" is not an https:// (or http://) URL",
        ),
        (
            serde_json::json!({"url": "https://x/", "refresh_seconds": 0}),
            "invalid config: refresh_seconds: 0 is not between 1 and 31536000",
        ),
        (
            serde_json::json!({"url": "https://x/", "refresh_seconds": u64::MAX}),
            "invalid config: refresh_seconds: 18446744073709551615 is not between 1 and 31536000",
        ),
        (
            serde_json::json!({"url": "https://x/", "max_bytes": 0}),
            "invalid config: max_bytes: 0 is not between 1 and 262144",
        ),
        (
            serde_json::json!({"url": "https://x/", "variable": "Bad"}),
            "invalid config: variable: \"Bad\" is not a variable name (^[a-z][a-z0-9_]*$)",
        ),
    ];
    for (value, expected) in cases {
        let err = config(value).err().expect("refused");
        assert_eq!(err.message(), expected);
    }
}
