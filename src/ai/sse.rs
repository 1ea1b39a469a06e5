//! Server-sent events of the OpenAI streaming API: `data:` lines, each a
//! JSON chunk or `[DONE]`. Kept apart from the HTTP code so that it can be
//! tested on its own.

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
}

/// Splits a byte stream into lines and lines into events.
#[derive(Debug, Default)]
pub(crate) struct SseParser {
    buffer: Vec<u8>,
}

impl SseParser {
    /// Feeds bytes; returns the events of every complete line.
    pub(crate) fn feed(&mut self, bytes: &[u8]) -> Vec<Event> {
        self.buffer.extend_from_slice(bytes);
        let mut events = Vec::new();
        while let Some(newline) = self.buffer.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = self.buffer.drain(..=newline).collect();
            events.extend(parse_line(&String::from_utf8_lossy(&line)));
        }
        events
    }

    /// The events of a last line that had no line end.
    pub(crate) fn finish(&mut self) -> Vec<Event> {
        let line = std::mem::take(&mut self.buffer);
        parse_line(&String::from_utf8_lossy(&line))
    }
}

/// The events of one line (`data: …`); other fields and comments say nothing.
fn parse_line(line: &str) -> Vec<Event> {
    let line = line.trim_end_matches(['\r', '\n']);
    let Some(data) = line.strip_prefix("data:") else {
        return Vec::new();
    };
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
    if choice
        .get("finish_reason")
        .is_some_and(|reason| !reason.is_null())
    {
        events.push(Event::Finished);
    }
    events
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

    #[test]
    fn deltas_come_from_data_lines_split_anywhere() {
        let mut parser = SseParser::default();
        let mut events =
            parser.feed(b": comment\r\ndata: {\"choices\":[{\"delta\":{\"content\":\"Hel");
        assert!(events.is_empty());
        events.extend(parser.feed(
            b"lo\"}}]}\r\n\r\ndata: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n",
        ));
        events.extend(parser.feed(b"data: [DONE]"));
        events.extend(parser.finish());
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
            let mut parser = SseParser::default();
            let mut events = Vec::new();
            let mut start = 0;
            for cut in cuts.into_iter().chain([bytes.len()]) {
                events.extend(parser.feed(&bytes[start..cut]));
                start = cut;
            }
            events.extend(parser.finish());
            let mut expected: Vec<Event> = pieces.into_iter().map(Event::Delta).collect();
            expected.push(Event::Done);
            proptest::prop_assert_eq!(events, expected);
        }
    }

    #[test]
    fn errors_inside_the_stream_are_reported() {
        let mut parser = SseParser::default();
        assert_eq!(
            parser.feed(b"data: {\"error\":{\"message\":\"overloaded\"}}\n"),
            vec![Event::Error("overloaded".into())]
        );
        assert!(matches!(
            parser.feed(b"data: {oops\n")[..],
            [Event::Error(_)]
        ));
    }
}
