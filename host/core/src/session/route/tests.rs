//! Each route's mapping of the same conversation, and the errors of resolving a route.

use serde_json::{json, Value};

use super::*;
use crate::session::conversation::{
    assistant_event, tool_result_event, AssistantReply, ToolCall, ToolResult,
};
use crate::session::event::{NewEvent, SYSTEM_MESSAGE, USER_MESSAGE};
use crate::session::message::{Message, MessageData};
use crate::session::{ModelRequest, Session, SurfaceIntent};

struct Log {
    _dir: tempfile::TempDir,
    session: Session,
}

impl Log {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let (session, _) = Session::open(dir.path().join("log.jsonl")).unwrap();
        Self { _dir: dir, session }
    }

    fn system(&mut self, text: &str) -> &mut Self {
        let data = MessageData::new(Message::system(text, "p"));
        self.session
            .append(NewEvent::message(
                SYSTEM_MESSAGE,
                data,
                SurfaceIntent::append(),
            ))
            .unwrap();
        self
    }

    fn user(&mut self, text: &str) -> &mut Self {
        let data = MessageData::new(Message::user_text(text));
        self.session
            .append(NewEvent::message(
                USER_MESSAGE,
                data,
                SurfaceIntent::append(),
            ))
            .unwrap();
        self
    }

    fn reply(&mut self, reply: AssistantReply) -> &mut Self {
        let event = assistant_event(&self.session, &reply).unwrap();
        self.session.append(event).unwrap();
        self
    }

    fn result(&mut self, id: &str, content: &str, is_error: bool) -> &mut Self {
        let result = ToolResult {
            call_id: id.into(),
            content: content.into(),
            is_error,
        };
        let event = tool_result_event(&self.session, &result).unwrap();
        self.session.append(event).unwrap();
        self
    }

    fn request(&self, ctx: &RouteContext) -> Value {
        let tools = [crate::prompt::ToolSchema::new(
            "bash",
            "Run a command",
            json!({"type": "object", "properties": {"command": {"type": "string"}}}),
        )];
        serde_json::to_value(ModelRequest::derive(&self.session, &tools, ctx)).unwrap()
    }
}

fn route(spec: RouteSpec) -> RouteContext {
    RouteContext::resolve(Some(&spec), None, false).unwrap()
}

/// A turn with a tool call given as JSON text, a failed result, and a reasoning reply.
fn conversation(log: &mut Log) {
    let call = ToolCall::new("call_1", "bash", json!("{\"command\": \"ls\"}"));
    log.system("You are terse.")
        .user("List the files.")
        .reply(AssistantReply::calls(vec![call]).with_reasoning("I should look."))
        .result("call_1", "permission denied", true)
        .reply(AssistantReply::text("I cannot list them."))
        .user("Why?");
}

#[test]
fn chat_completions_states_errors_and_keeps_argument_text() {
    let mut log = Log::new();
    conversation(&mut log);
    let ctx = route(RouteSpec::new(RouteName::ChatCompletions).model("gpt-test"));
    assert_eq!(
        log.request(&ctx),
        json!({
            "model": "gpt-test",
            "messages": [
                {"role": "system", "content": "You are terse."},
                {"role": "user", "content": "List the files."},
                {"role": "assistant", "tool_calls": [{"id": "call_1", "type": "function",
                    "function": {"name": "bash", "arguments": "{\"command\": \"ls\"}"}}]},
                {"role": "tool", "tool_call_id": "call_1", "content": "Error: permission denied"},
                {"role": "assistant", "content": "I cannot list them."},
                {"role": "user", "content": "Why?"},
            ],
            "tools": [{"type": "function", "function": {"name": "bash", "description": "Run a command",
                "parameters": {"type": "object", "properties": {"command": {"type": "string"}}}}}],
        })
    );
    // DeepSeek's thinking mode: reasoning back on the turn that made calls.
    let ctx = route(
        RouteSpec::new(RouteName::ChatCompletions)
            .model("deepseek-v4")
            .reasoning(Reasoning::Send),
    );
    let request = log.request(&ctx);
    assert_eq!(
        request["messages"][2]["reasoning_content"],
        "I should look."
    );
    assert!(request["messages"][4].get("reasoning_content").is_none());
}

#[test]
fn a_reasoning_only_reply_has_empty_content_not_null() {
    let mut log = Log::new();
    log.user("hi")
        .reply(AssistantReply::default().with_reasoning("thinking"));
    let request = log.request(&RouteContext::default());
    assert_eq!(
        request["messages"][1],
        json!({"role": "assistant", "content": ""})
    );
}

#[test]
fn anthropic_messages_puts_system_on_top_results_in_user_turns_and_breakpoints() {
    let mut log = Log::new();
    conversation(&mut log);
    let ctx = route(
        RouteSpec::new(RouteName::AnthropicMessages)
            .model("claude-sonnet-4-5")
            .option("max_tokens", json!(1024)),
    );
    assert!(!ctx.in_history);
    let request = log.request(&ctx);
    assert_eq!(
        request,
        json!({
            "model": "claude-sonnet-4-5",
            "max_tokens": 1024,
            "system": [{"type": "text", "text": "You are terse.", "cache_control": {"type": "ephemeral"}}],
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "List the files."}]},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "call_1", "name": "bash",
                    "input": {"command": "ls"}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_1",
                    "content": "permission denied", "is_error": true}]},
                {"role": "assistant", "content": [{"type": "text", "text": "I cannot list them."}]},
                {"role": "user", "content": [{"type": "text", "text": "Why?", "cache_control": {"type": "ephemeral"}}]},
            ],
            "tools": [{"name": "bash", "description": "Run a command",
                "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}}}],
        })
    );
    let breakpoints = ModelRequest::derive(&log.session, &[], &ctx).cache_breakpoints;
    assert_eq!(
        breakpoints,
        [
            Breakpoint {
                at: "system",
                index: 0
            },
            Breakpoint {
                at: "message",
                index: 4
            }
        ]
    );
}

#[test]
fn anthropic_in_history_updates_go_after_the_user_turn() {
    let ctx = route(
        RouteSpec::new(RouteName::AnthropicMessages)
            .model("claude-opus-4-8")
            .option("max_tokens", json!(64))
            .cache(false),
    );
    assert!(
        ctx.in_history,
        "Opus 4.8 takes mid-conversation system messages"
    );
    let mut log = Log::new();
    log.system("v1")
        .user("a")
        .reply(AssistantReply::text("b"))
        .system("v2")
        .user("c");
    let request = log.request(&ctx);
    assert_eq!(request["system"], json!([{"type": "text", "text": "v1"}]));
    assert_eq!(
        request["messages"],
        json!([
            {"role": "user", "content": [{"type": "text", "text": "a"}]},
            {"role": "assistant", "content": [{"type": "text", "text": "b"}]},
            {"role": "user", "content": [{"type": "text", "text": "c"}]},
            {"role": "system", "content": "v2"},
        ])
    );
    // An update with no user turn after an assistant turn joins the top-level system.
    let mut log = Log::new();
    log.system("v1")
        .user("a")
        .reply(AssistantReply::text("b"))
        .system("v2");
    let request = log.request(&ctx);
    assert_eq!(
        request["system"],
        json!([{"type": "text", "text": "v1"}, {"type": "text", "text": "v2"}])
    );
    // A run of updates with no turn between them (a retry's re-rendering): the newest alone,
    // right after the user turn.
    let mut log = Log::new();
    log.system("v1").user("a").system("v2").system("v3");
    let request = log.request(&ctx);
    assert_eq!(
        request["messages"],
        json!([
            {"role": "user", "content": [{"type": "text", "text": "a"}]},
            {"role": "system", "content": "v3"},
        ])
    );
}

#[test]
fn openai_responses_uses_instructions_and_items() {
    let mut log = Log::new();
    conversation(&mut log);
    let ctx = route(RouteSpec::new(RouteName::OpenaiResponses).model("gpt-test"));
    assert_eq!(
        log.request(&ctx),
        json!({
            "model": "gpt-test",
            "instructions": "You are terse.",
            "input": [
                {"role": "user", "content": "List the files."},
                {"type": "function_call", "call_id": "call_1", "name": "bash", "arguments": "{\"command\": \"ls\"}"},
                {"type": "function_call_output", "call_id": "call_1", "output": "Error: permission denied"},
                {"role": "assistant", "content": "I cannot list them."},
                {"role": "user", "content": "Why?"},
            ],
            "tools": [{"type": "function", "name": "bash", "description": "Run a command",
                "parameters": {"type": "object", "properties": {"command": {"type": "string"}}}, "strict": false}],
        })
    );
}

#[test]
fn replies_recorded_from_a_provider_go_back_as_it_sent_them() {
    // Anthropic: the thinking block with its signature, unchanged.
    let message = json!({
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-opus-4-8",
        "content": [
            {"type": "thinking", "thinking": "Let me see.", "signature": "sig=="},
            {"type": "tool_use", "id": "toolu_1", "name": "bash", "input": {"command": "ls"}},
        ],
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 10, "output_tokens": 5, "cache_read_input_tokens": 90, "cache_creation_input_tokens": 0},
    });
    let reply = reply::parse(RouteName::AnthropicMessages, &message).unwrap();
    assert_eq!(reply.reasoning.as_deref(), Some("Let me see."));
    assert_eq!(reply.tool_calls[0].arguments, json!({"command": "ls"}));
    let usage = reply.usage.clone().unwrap();
    assert_eq!(
        (usage.input_tokens, usage.cached_input_tokens),
        (Some(100), Some(90))
    );
    let mut log = Log::new();
    log.system("s").user("u").reply(reply);
    let ctx = route(
        RouteSpec::new(RouteName::AnthropicMessages)
            .model("claude-opus-4-8")
            .option("max_tokens", json!(64))
            .cache(false),
    );
    assert_eq!(
        log.request(&ctx)["messages"][1]["content"],
        message["content"]
    );
    // The same reply read by another route: its call, without the signed thinking.
    let chat = log.request(&route(RouteSpec::new(RouteName::ChatCompletions)));
    assert_eq!(
        chat["messages"][2]["tool_calls"][0]["function"],
        json!({"name": "bash", "arguments": "{\"command\":\"ls\"}"})
    );

    // Chat: the arguments text exactly as sent.
    let completion = json!({"choices": [{"index": 0, "message": {
        "role": "assistant", "content": null, "refusal": null, "annotations": [],
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{ \"command\" : \"pwd\" }"}}]}}],
        "usage": {"prompt_tokens": 50, "completion_tokens": 7, "prompt_tokens_details": {"cached_tokens": 32}}});
    let reply = reply::parse(RouteName::ChatCompletions, &completion).unwrap();
    assert_eq!(reply.usage.as_ref().unwrap().cached_input_tokens, Some(32));
    let mut log = Log::new();
    log.user("u").reply(reply);
    let request = log.request(&route(RouteSpec::new(RouteName::ChatCompletions)));
    assert_eq!(
        request["messages"][1],
        json!({"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
            "function": {"name": "bash", "arguments": "{ \"command\" : \"pwd\" }"}}]})
    );

    // Responses: the output items, reasoning included.
    let response = json!({"id": "resp_1", "object": "response", "output": [
        {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Plan."}]},
        {"type": "function_call", "id": "fc_1", "call_id": "call_9", "name": "bash", "arguments": "{}", "status": "completed"},
    ], "usage": {"input_tokens": 20, "output_tokens": 3, "input_tokens_details": {"cached_tokens": 0}}});
    let reply = reply::parse(RouteName::OpenaiResponses, &response).unwrap();
    assert_eq!(reply.tool_calls[0].id, "call_9");
    let mut log = Log::new();
    log.user("u").reply(reply);
    let request = log.request(&route(
        RouteSpec::new(RouteName::OpenaiResponses).model("m"),
    ));
    assert_eq!(
        request["input"].as_array().unwrap()[1..],
        response["output"].as_array().unwrap()[..]
    );
}

#[test]
fn bad_replies_are_refused_naming_what_is_wrong() {
    let e = reply::parse(
        RouteName::ChatCompletions,
        &json!({"type": "message", "role": "assistant", "content": [{"type": "text", "text": "hi"}]}),
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "route chat-completions cannot read this reply: it is shaped like a reply of the anthropic-messages route"
    );
    let e = reply::parse(
        RouteName::ChatCompletions,
        &json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": "c", "type": "function", "function": {"name": "bash", "arguments": "[1, 2]"}}]}),
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "tool call 0 (\"bash\"): its arguments are JSON text of an array, not of an object"
    );
    let e = reply::parse(
        RouteName::AnthropicMessages,
        &json!({"role": "assistant", "content": "hi"}),
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "route anthropic-messages cannot read this reply: it is shaped like a reply of the chat-completions route"
    );
}

#[test]
fn resolving_a_route_refuses_what_its_api_would() {
    let err = |spec: RouteSpec, model: Option<&str>| {
        RouteContext::resolve(Some(&spec), model, false)
            .unwrap_err()
            .to_string()
    };
    assert_eq!(
        RouteName::parse("anthropic-message").unwrap_err().to_string(),
        "unknown route \"anthropic-message\" (did you mean \"anthropic-messages\"?); routes: chat-completions, anthropic-messages, openai-responses"
    );
    assert_eq!(
        err(
            RouteSpec::new(RouteName::AnthropicMessages).option("max_tokens", json!(8)),
            None
        ),
        "route anthropic-messages needs a model: give the \"model\" fact or the route's \"model\""
    );
    assert_eq!(
        err(RouteSpec::new(RouteName::AnthropicMessages), Some("claude")),
        "route anthropic-messages needs the option \"max_tokens\" (the Messages API requires it: a positive integer)"
    );
    assert_eq!(
        err(RouteSpec::new(RouteName::OpenaiResponses).option("input", json!([])), Some("m")),
        "route openai-responses: the option \"input\" is built from the log and cannot be given; options are the request's other keys (max_tokens, temperature, …)"
    );
    assert!(
        err(RouteSpec::new(RouteName::ChatCompletions).cache(true), None)
            .contains("only anthropic-messages")
    );
    // The model fact names the model; an explicit one wins.
    let ctx = RouteContext::resolve(
        Some(&RouteSpec::new(RouteName::OpenaiResponses)),
        Some("m1"),
        false,
    )
    .unwrap();
    assert_eq!(ctx.model.as_deref(), Some("m1"));
    let ctx = RouteContext::resolve(
        Some(&RouteSpec::new(RouteName::OpenaiResponses).model("m2")),
        Some("m1"),
        false,
    )
    .unwrap();
    assert_eq!(ctx.model.as_deref(), Some("m2"));
}

#[test]
fn a_context_reads_back_from_its_log_form() {
    for spec in [
        RouteSpec::default(),
        RouteSpec::new(RouteName::AnthropicMessages)
            .option("max_tokens", json!(512))
            .option("temperature", json!(0.5))
            .system_updates(SystemUpdates::InHistory),
        RouteSpec::new(RouteName::OpenaiResponses).reasoning(Reasoning::Omit),
    ] {
        let ctx = RouteContext::resolve(Some(&spec), Some("m"), false).unwrap();
        assert_eq!(RouteContext::from_log(&ctx.to_log()), Some(ctx));
    }
    let spec: RouteSpec = serde_json::from_value(json!("openai-responses")).unwrap();
    assert_eq!(spec.name, Some(RouteName::OpenaiResponses));
    let spec: Result<RouteSpec, _> =
        serde_json::from_value(json!({"name": "chat-completions", "modle": "x"}));
    assert!(spec
        .unwrap_err()
        .to_string()
        .contains("unknown field `modle`"));
}

#[test]
fn a_recorded_blocks_cache_control_adds_no_breakpoint_while_the_route_places_them() {
    let spec = || {
        RouteSpec::new(RouteName::AnthropicMessages)
            .model("claude-sonnet-4-5")
            .option("max_tokens", json!(64))
    };
    let marked = json!({"type": "text", "text": "b", "cache_control": {"type": "ephemeral"}});
    let blocks = json!([marked, marked, marked, marked]);
    let mut log = Log::new();
    log.system("v1").user("a");
    log.reply(reply::parse(RouteName::AnthropicMessages, &blocks).unwrap())
        .user("c");
    let request = log.request(&route(spec()));
    assert_eq!(
        request.to_string().matches("cache_control").count(),
        2,
        "{request}"
    );
    assert_eq!(
        request["messages"][1]["content"][0],
        json!({"type": "text", "text": "b"})
    );
    // With the route's breakpoints off, the blocks go back exactly as recorded.
    let request = log.request(&route(spec().cache(false)));
    assert_eq!(request["messages"][1]["content"], blocks);
}

#[test]
fn recorded_blocks_go_back_without_the_nulls_an_sdk_dump_adds() {
    let anthropic = route(
        RouteSpec::new(RouteName::AnthropicMessages)
            .model("claude-sonnet-4-5")
            .option("max_tokens", json!(64))
            .cache(false),
    );
    let mut log = Log::new();
    log.system("v1").user("a");
    let dumped = json!([{"type": "tool_use", "id": "t1", "name": "bash", "caller": null,
                         "toolset_name": null, "input": {"command": "ls", "cwd": null}}]);
    log.reply(reply::parse(RouteName::AnthropicMessages, &dumped).unwrap())
        .result("t1", "ok", false);
    let request = log.request(&anthropic);
    // The model's own `input` keeps its null; the dump's fields are gone.
    assert_eq!(
        request["messages"][1]["content"][0],
        json!({"type": "tool_use", "id": "t1", "name": "bash", "input": {"command": "ls", "cwd": null}})
    );
    let responses = route(RouteSpec::new(RouteName::OpenaiResponses).model("gpt-5.2"));
    let mut log = Log::new();
    log.system("v1").user("a");
    let dumped = json!([
        {"type": "reasoning", "id": "rs_1", "summary": [], "content": null, "status": null, "encrypted_content": null},
        {"type": "function_call", "call_id": "c1", "name": "bash", "arguments": "{}", "id": "fc_1", "namespace": null, "status": "completed"},
        {"type": "message", "id": "m1", "role": "assistant", "status": "completed",
         "content": [{"type": "output_text", "text": "Done.", "annotations": [], "logprobs": null}]}]);
    log.reply(reply::parse(RouteName::OpenaiResponses, &dumped).unwrap())
        .result("c1", "ok", false);
    let request = log.request(&responses);
    assert_eq!(
        request["input"][1],
        json!({"type": "reasoning", "id": "rs_1", "summary": []})
    );
    assert_eq!(
        request["input"][2],
        json!({"type": "function_call", "call_id": "c1", "name": "bash", "arguments": "{}", "id": "fc_1", "status": "completed"})
    );
    // Nested nulls too.
    assert_eq!(
        request["input"][3]["content"],
        json!([{"type": "output_text", "text": "Done.", "annotations": []}])
    );
}

#[test]
fn the_system_breakpoint_stays_on_the_stable_prefix_when_an_update_joins_the_system() {
    let ctx = route(
        RouteSpec::new(RouteName::AnthropicMessages)
            .model("claude-opus-4-8")
            .option("max_tokens", json!(64)),
    );
    let mut log = Log::new();
    // An update after a reply, no user turn after it: it joins the top-level system for
    // this request; the breakpoint stays on the prompt proper.
    log.system("v1")
        .user("a")
        .reply(AssistantReply::text("b"))
        .system("v2");
    let request = log.request(&ctx);
    assert_eq!(
        request["system"],
        json!([{"type": "text", "text": "v1", "cache_control": {"type": "ephemeral"}}, {"type": "text", "text": "v2"}])
    );
}

#[test]
fn a_providers_compaction_goes_back_in_place_and_its_report_stays_in_the_log() {
    // OpenAI: the compaction item, as a Response's output or bare output items (whose
    // first item alone says which provider sent it).
    let responses = route(RouteSpec::new(RouteName::OpenaiResponses).model("gpt-5.2"));
    let item = json!({"type": "compaction", "id": "cmp_1", "encrypted_content": "gAAAAB…"});
    let said = json!({"type": "message", "id": "m1", "role": "assistant", "status": "completed",
                      "content": [{"type": "output_text", "text": "Done.", "annotations": []}]});
    for reply in [
        json!({"object": "response", "output": [item, said]}),
        json!([item, said]),
    ] {
        let mut log = Log::new();
        log.system("v1").user("a");
        let read = reply::parse(RouteName::OpenaiResponses, &reply).unwrap();
        assert_eq!(read.text.as_deref(), Some("Done."));
        log.reply(read).user("b");
        let request = log.request(&responses);
        assert_eq!(request["input"][1], item, "{request}");
        assert_eq!(request["input"][2], said);
        assert_eq!(request["input"][3]["content"], "b");
    }
    // Anthropic: the compaction block, and the context edits it reports.
    let anthropic = route(
        RouteSpec::new(RouteName::AnthropicMessages)
            .model("claude-opus-4-8")
            .option("max_tokens", json!(64))
            .cache(false),
    );
    let block = json!({"type": "compaction", "content": "The user asked for a website; it is built.",
                       "signature": "EqQB…", "encrypted_content": "opaque"});
    let report = json!({"applied_edits": [{"type": "clear_tool_uses_20250919",
                                           "cleared_tool_uses": 3, "cleared_input_tokens": 9000}]});
    let message = json!({"type": "message", "role": "assistant", "content": [block, {"type": "text", "text": "Done."}],
                         "context_management": report});
    let read = reply::parse(RouteName::AnthropicMessages, &message).unwrap();
    assert_eq!(
        read.provider.as_ref().unwrap().context_management,
        Some(report.clone())
    );
    let mut log = Log::new();
    log.system("v1").user("a").reply(read).user("b");
    let request = log.request(&anthropic);
    assert_eq!(
        request["messages"][1]["content"],
        json!([block, {"type": "text", "text": "Done."}])
    );
    assert!(!request.to_string().contains("applied_edits"), "{request}");
    let recorded = log
        .session
        .events()
        .iter()
        .find(|e| e.kind == crate::session::event::ASSISTANT_MESSAGE)
        .unwrap();
    assert_eq!(
        recorded.message().unwrap().extra["provider"]["context_management"],
        report
    );
    // A bare compaction block is Anthropic's, and the Responses route refuses it.
    let bare = json!([block]);
    assert!(reply::parse(RouteName::AnthropicMessages, &bare).is_ok());
    let refused = reply::parse(RouteName::OpenaiResponses, &bare).unwrap_err();
    assert!(
        refused
            .to_string()
            .contains("shaped like a reply of the anthropic-messages route"),
        "{refused}"
    );
}
