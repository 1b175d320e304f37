//! The JSON-RPC 2.0 envelope: reading a request line into calls, and writing responses.
//!
//! A request id is kept as the JSON text it was sent as and echoed byte for byte: a number
//! read into a JSON value would come back rounded (`123456789012345678901234567890` as
//! `1.2345678901234568e+29`), and a client could no longer match its answer.

use serde::de::{Deserialize, Deserializer};
use serde_json::value::RawValue;
use serde_json::Value;

use super::{code, RpcError};
use prompt_host::prompt::CancelToken;

/// A request id exactly as sent: the JSON text of a string or a number.
#[derive(Debug, Clone)]
pub(crate) struct Id(Box<RawValue>);

impl Id {
    /// The id's JSON text.
    pub(crate) fn text(&self) -> &str {
        self.0.get()
    }

    /// What identifies the request among those in flight: the number's text, or the string
    /// decoded (so `"a"` and `"\u0061"` name the same request).
    pub(crate) fn key(&self) -> String {
        key_of(&self.0)
    }
}

fn key_of(raw: &RawValue) -> String {
    match serde_json::from_str::<String>(raw.get()) {
        Ok(s) => format!("s:{s}"),
        Err(_) => format!("n:{}", raw.get()),
    }
}

/// A request ready to run.
pub(crate) struct Call {
    /// Absent for a notification.
    pub(crate) id: Option<Id>,
    pub(crate) method: String,
    pub(crate) params: Value,
    pub(crate) signal: CancelToken,
    /// For `$/cancelRequest`: the key of the request to cancel, if the params name one.
    pub(crate) cancels: Option<String>,
}

/// A request refused before it ran, with the id to answer with (`None`: `null`).
pub(crate) struct Refused {
    pub(crate) id: Option<Id>,
    pub(crate) error: RpcError,
}

/// What one input line holds.
pub(crate) enum Input {
    /// One request (or its refusal).
    Single(Result<Call, Refused>),
    /// A non-empty batch.
    Batch(Vec<Result<Call, Refused>>),
    /// Not a request at all: the error to answer with (id `null`).
    Invalid(RpcError),
}

/// Read one non-blank input line.
pub(crate) fn parse_line(line: &str) -> Input {
    let trimmed = line.trim_start();
    if trimmed.starts_with('[') {
        return match serde_json::from_str::<Vec<&RawValue>>(line) {
            Ok(items) if items.is_empty() => Input::Invalid(RpcError::new(
                code::INVALID_REQUEST,
                "invalid request: empty batch",
            )),
            Ok(items) => Input::Batch(items.into_iter().map(|raw| parse_call(raw.get())).collect()),
            Err(e) => Input::Invalid(parse_error(&e)),
        };
    }
    if !trimmed.starts_with('{') {
        return Input::Invalid(match serde_json::from_str::<serde::de::IgnoredAny>(line) {
            Ok(_) => not_an_object(),
            Err(e) => parse_error(&e),
        });
    }
    Input::Single(parse_call(line))
}

fn parse_error(e: &serde_json::Error) -> RpcError {
    RpcError::new(code::PARSE, format!("parse error: {e}"))
}

fn not_an_object() -> RpcError {
    RpcError::new(code::INVALID_REQUEST, "invalid request: expected an object")
}

/// The envelope's fields; anything else in the request is ignored.
#[derive(serde::Deserialize)]
struct Envelope<'a> {
    #[serde(default)]
    jsonrpc: Option<Value>,
    #[serde(default, borrow, deserialize_with = "present")]
    id: Option<&'a RawValue>,
    #[serde(default)]
    method: Option<Value>,
    #[serde(default, borrow)]
    params: Option<&'a RawValue>,
}

/// A present field, even `null` (which `Option` alone would read as absent).
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(d).map(Some)
}

/// Check the JSON-RPC envelope of one request's text; a refusal carries the id to answer
/// with.
fn parse_call(text: &str) -> Result<Call, Refused> {
    if !text.trim_start().starts_with('{') {
        return Err(Refused {
            id: None,
            error: not_an_object(),
        });
    }
    let envelope: Envelope<'_> = serde_json::from_str(text).map_err(|e| Refused {
        id: None,
        error: if e.is_syntax() || e.is_eof() {
            parse_error(&e)
        } else {
            RpcError::new(code::INVALID_REQUEST, format!("invalid request: {e}"))
        },
    })?;
    // A null id is refused: JSON-RPC 2.0 answers with a null id only when the request's id
    // could not be read, so a response to `"id": null` could not be told from that, and a
    // success response's id must be a string or a number.
    let id = envelope
        .id
        .map(|raw| (raw, raw.get().as_bytes().first().copied()));
    let valid_id = match id {
        None => true,
        Some((_, first)) => matches!(first, Some(b'"' | b'-' | b'0'..=b'9')),
    };
    let id = id.map(|(raw, _)| Id(raw.to_owned()));
    let version_ok = matches!(&envelope.jsonrpc, Some(Value::String(v)) if v == "2.0");
    if !version_ok || !valid_id {
        return Err(Refused {
            id: if valid_id { id } else { None },
            error: RpcError::new(
                code::INVALID_REQUEST,
                "invalid request: expected \"jsonrpc\": \"2.0\" and a string or number id (or no id, for a notification; null is not an id)",
            ),
        });
    }
    let method = match envelope.method {
        Some(Value::String(m)) => m,
        _ => {
            return Err(Refused {
                id,
                error: RpcError::new(
                    code::INVALID_REQUEST,
                    "invalid request: \"method\" must be a string",
                ),
            })
        }
    };
    let cancels = (method == "$/cancelRequest")
        .then(|| envelope.params.and_then(cancel_target))
        .flatten();
    let params = match envelope.params {
        None => Value::Object(Default::default()),
        Some(raw) => serde_json::from_str(raw.get()).map_err(|e| Refused {
            id: id.clone(),
            error: parse_error(&e),
        })?,
    };
    Ok(Call {
        id,
        method,
        params,
        signal: CancelToken::new(),
        cancels,
    })
}

/// The key of the request `$/cancelRequest {id}` names.
fn cancel_target(params: &RawValue) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Target<'a> {
        #[serde(borrow)]
        id: &'a RawValue,
    }
    let target: Target<'_> = serde_json::from_str(params.get()).ok()?;
    Some(key_of(target.id))
}

/// A success response, around the result's JSON text.
pub(crate) fn result(id: &Id, result: &RawValue) -> String {
    result_text(id, result.get())
}

/// A success response around `result`, which is JSON text.
pub(crate) fn result_text(id: &Id, result: &str) -> String {
    let mut line = String::with_capacity(result.len() + id.text().len() + 32);
    line.push_str(r#"{"jsonrpc":"2.0","id":"#);
    line.push_str(id.text());
    line.push_str(r#","result":"#);
    line.push_str(result);
    line.push('}');
    line
}

/// An error response (id `null` when the request's id is unknown).
pub(crate) fn error(id: Option<&Id>, e: &RpcError) -> String {
    let error = serde_json::to_string(&e.to_value()).unwrap_or_else(|_| "null".into());
    let mut line = String::with_capacity(error.len() + 48);
    line.push_str(r#"{"jsonrpc":"2.0","id":"#);
    line.push_str(id.map_or("null", Id::text));
    line.push_str(r#","error":"#);
    line.push_str(&error);
    line.push('}');
    line
}

/// A batch's responses as one line.
pub(crate) fn batch(responses: &[String]) -> String {
    let mut line = String::with_capacity(responses.iter().map(|r| r.len() + 1).sum::<usize>() + 2);
    line.push('[');
    for (i, response) in responses.iter().enumerate() {
        if i > 0 {
            line.push(',');
        }
        line.push_str(response);
    }
    line.push(']');
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    fn single(line: &str) -> Result<Call, Refused> {
        match parse_line(line) {
            Input::Single(call) => call,
            _ => panic!("not a single request: {line}"),
        }
    }

    #[test]
    fn ids_are_echoed_as_sent() {
        for id in [
            "123456789012345678901234567890",
            "-0.0",
            "1e400",
            "7",
            r#""a\u0062c""#,
        ] {
            let line = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"describe"}}"#);
            let call = single(&line).ok().unwrap();
            let id_of = call.id.unwrap();
            assert_eq!(id_of.text(), id);
            let response = result_text(&id_of, "{}");
            assert_eq!(
                response,
                format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{}}}}"#)
            );
        }
    }

    #[test]
    fn a_cancel_names_its_target_by_the_same_key() {
        let request = single(r#"{"jsonrpc":"2.0","id":"\u0061","method":"step"}"#)
            .ok()
            .unwrap();
        let cancel = single(r#"{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":"a"}}"#)
            .ok()
            .unwrap();
        assert_eq!(cancel.cancels, Some(request.id.unwrap().key()));
        let big = single(r#"{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":123456789012345678901234567891}}"#)
            .ok()
            .unwrap();
        assert_eq!(
            big.cancels.as_deref(),
            Some("n:123456789012345678901234567891")
        );
    }

    #[test]
    fn refusals_keep_the_id_they_can() {
        let null = single(r#"{"jsonrpc":"2.0","id":null,"method":"x"}"#)
            .err()
            .unwrap();
        assert!(null.id.is_none());
        let no_method = single(r#"{"jsonrpc":"2.0","id":5}"#).err().unwrap();
        assert_eq!(no_method.id.unwrap().text(), "5");
        assert!(matches!(parse_line("[]"), Input::Invalid(e) if e.code == code::INVALID_REQUEST));
        assert!(matches!(parse_line("3"), Input::Invalid(e) if e.code == code::INVALID_REQUEST));
        assert!(matches!(parse_line("{"), Input::Single(Err(r)) if r.error.code == code::PARSE));
        assert!(matches!(parse_line("nope"), Input::Invalid(e) if e.code == code::PARSE));
    }
}
