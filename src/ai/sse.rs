//! Server-sent events of the OpenAI streaming API: each event's data is a
//! JSON chunk or `[DONE]`. Kept apart from the HTTP code so that it can be
//! tested on its own.

use eventsource_stream::{EventStreamError, Eventsource};
use futures_util::{Stream, StreamExt};
use serde_json::Value;

/// What one event of the stream says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Event {
    /// A piece of the answer (may be empty).
    Delta(String),
    /// The model said it finished (`finish_reason` set).
    Finished,
    /// `data: [DONE]`.
    Done,
    /// The service reported an error inside the stream.
    Error(String),
    /// A piece of a tool call: its name (in its first piece) and a piece
    /// of its JSON arguments, by the call's index in the answer.
    ToolCall {
        index: u64,
        name: Option<String>,
        arguments: String,
    },
    /// What the answer cost, as the service counted it (`usage`: in the
    /// last chunk when asked for with `stream_options`, or in a whole
    /// answer).
    Usage { prompt: u64, completion: u64 },
}

/// The events of a server-sent-event byte stream, one batch per SSE
/// event (parsed by `eventsource-stream`, so a split anywhere in the bytes
/// changes nothing); an error is the reason the stream broke.
pub(crate) fn events<S, B>(bytes: S) -> impl Stream<Item = Result<Vec<Event>, String>>
where
    S: Stream<Item = Result<B, String>>,
    B: AsRef<[u8]>,
{
    bytes.eventsource().map(|event| match event {
        Ok(event) => Ok(data_events(&event.data)),
        Err(EventStreamError::Transport(reason)) => Err(reason),
        Err(other) => Err(other.to_string()),
    })
}

/// The events of one SSE event's data: a JSON chunk or `[DONE]`.
fn data_events(data: &str) -> Vec<Event> {
    let data = data.trim();
    if data == "[DONE]" {
        return vec![Event::Done];
    }
    if data.is_empty() {
        return Vec::new();
    }
    match serde_json::from_str::<Value>(data) {
        Ok(chunk) => chunk_events(&chunk),
        Err(err) => vec![Event::Error(format!("unreadable event ({err}): {data}"))],
    }
}

/// The events of one JSON chunk.
pub(crate) fn chunk_events(chunk: &Value) -> Vec<Event> {
    if let Some(error) = chunk.get("error") {
        return vec![Event::Error(error_text(error))];
    }
    let mut events = Vec::new();
    let Some(choice) = chunk.get("choices").and_then(|c| c.get(0)) else {
        events.extend(usage_event(chunk));
        return events;
    };
    let content = choice
        .get("delta")
        .or_else(|| choice.get("message"))
        .and_then(|d| d.get("content"))
        .and_then(Value::as_str);
    if let Some(text) = content {
        events.push(Event::Delta(text.to_string()));
    }
    let calls = choice
        .get("delta")
        .or_else(|| choice.get("message"))
        .and_then(|d| d.get("tool_calls"))
        .and_then(Value::as_array);
    for (position, call) in calls.into_iter().flatten().enumerate() {
        let function = call.get("function");
        events.push(Event::ToolCall {
            index: call
                .get("index")
                .and_then(Value::as_u64)
                .unwrap_or(position as u64),
            name: function
                .and_then(|f| f.get("name"))
                .and_then(Value::as_str)
                .map(str::to_string),
            arguments: function
                .and_then(|f| f.get("arguments"))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
        });
    }
    if choice
        .get("finish_reason")
        .is_some_and(|reason| !reason.is_null())
    {
        events.push(Event::Finished);
    }
    events.extend(usage_event(chunk));
    events
}

/// The chunk's `usage`, when it has one with both counts.
fn usage_event(chunk: &Value) -> Option<Event> {
    let usage = chunk.get("usage")?;
    Some(Event::Usage {
        prompt: usage.get("prompt_tokens")?.as_u64()?,
        completion: usage.get("completion_tokens")?.as_u64()?,
    })
}

/// The message of an OpenAI-style error value (`{"message": …}` or text).
pub(crate) fn error_text(error: &Value) -> String {
    match error {
        Value::String(text) => text.clone(),
        other => other
            .get("message")
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or_else(|| other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The events of `pieces` of bytes, fed in that order.
    fn parse(pieces: Vec<Vec<u8>>) -> Vec<Event> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        runtime.block_on(async {
            let bytes = futures_util::stream::iter(pieces.into_iter().map(Ok::<_, String>));
            let batches: Vec<_> = events(bytes).collect().await;
            batches
                .into_iter()
                .flat_map(|batch| batch.unwrap())
                .collect()
        })
    }

    #[test]
    fn deltas_come_from_data_lines_split_anywhere() {
        let events = parse(vec![
            b": comment\r\ndata: {\"choices\":[{\"delta\":{\"content\":\"Hel".to_vec(),
            b"lo\"}}]}\r\n\r\ndata: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n"
                .to_vec(),
            b"data: [DONE]\n\n".to_vec(),
        ]);
        assert_eq!(
            events,
            vec![Event::Delta("Hello".into()), Event::Finished, Event::Done]
        );
    }

    proptest::proptest! {
        #[test]
        fn events_do_not_depend_on_where_the_bytes_split(
            pieces in proptest::collection::vec(".{0,12}", 0..8),
            cuts in proptest::collection::vec(0usize..400, 0..6),
        ) {
            let mut body = String::new();
            for piece in &pieces {
                let chunk = serde_json::json!({"choices":[{"delta":{"content":piece}}]});
                body.push_str(&format!("data: {chunk}\r\n\r\n"));
            }
            body.push_str("data: [DONE]\n\n");
            let bytes = body.as_bytes();
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(bytes.len())).collect();
            cuts.sort();
            let mut split = Vec::new();
            let mut start = 0;
            for cut in cuts.into_iter().chain([bytes.len()]) {
                split.push(bytes[start..cut].to_vec());
                start = cut;
            }
            let mut expected: Vec<Event> = pieces.into_iter().map(Event::Delta).collect();
            expected.push(Event::Done);
            proptest::prop_assert_eq!(parse(split), expected);
        }
    }

    #[test]
    fn tool_calls_come_in_pieces_by_index() {
        let events = parse(vec![
            b"data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c\",\"type\":\"function\",\"function\":{\"name\":\"run\",\"arguments\":\"{\\\"cmd\"}}]}}]}\n\n".to_vec(),
            b"data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"\\\":\\\"ls\\\"}\"}}]}}]}\n\n".to_vec(),
        ]);
        assert_eq!(
            events,
            vec![
                Event::ToolCall {
                    index: 0,
                    name: Some("run".into()),
                    arguments: "{\"cmd".into()
                },
                Event::ToolCall {
                    index: 0,
                    name: None,
                    arguments: "\":\"ls\"}".into()
                },
            ]
        );
    }

    #[test]
    fn usage_comes_from_the_last_chunk_or_one_with_choices() {
        let events = parse(vec![
            b"data: {\"choices\":[{\"delta\":{\"content\":\"hi\"},\"finish_reason\":\"stop\"}]}\n\n".to_vec(),
            b"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":3,\"total_tokens\":15}}\n\n".to_vec(),
            b"data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":1}}\n\n".to_vec(),
            b"data: {\"choices\":[],\"usage\":null}\n\n".to_vec(),
        ]);
        assert_eq!(
            events,
            vec![
                Event::Delta("hi".into()),
                Event::Finished,
                Event::Usage {
                    prompt: 12,
                    completion: 3
                },
                Event::Finished,
                Event::Usage {
                    prompt: 5,
                    completion: 1
                },
            ]
        );
    }

    #[test]
    fn errors_inside_the_stream_are_reported() {
        assert_eq!(
            parse(vec![
                b"data: {\"error\":{\"message\":\"overloaded\"}}\n\n".to_vec()
            ]),
            vec![Event::Error("overloaded".into())]
        );
        assert!(matches!(
            parse(vec![b"data: {oops\n\n".to_vec()])[..],
            [Event::Error(_)]
        ));
    }
}
