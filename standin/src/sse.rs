//! The Messages API's streaming wire format: `event:`/`data:` pairs in the
//! order the API sends them (message_start with the prompt usage and
//! `output_tokens: 1`, one content_block_start/delta/stop triple per block,
//! message_delta with the stop reason and the final output tokens,
//! message_stop).

use serde_json::{Value, json};

use crate::Usage;

/// One content block of a streamed reply.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Block {
    Text(String),
    ToolUse {
        id: String,
        name: String,
        input: Value,
    },
}

impl Block {
    /// Output tokens the block is reported to cost (about four bytes a token).
    pub(crate) fn tokens(&self) -> u64 {
        let bytes = match self {
            Block::Text(t) => t.len(),
            Block::ToolUse { input, .. } => input.to_string().len() + 16,
        };
        (bytes as u64).div_ceil(4)
    }
}

fn event(out: &mut String, name: &str, data: &Value) {
    out.push_str("event: ");
    out.push_str(name);
    out.push_str("\ndata: ");
    out.push_str(&data.to_string());
    out.push_str("\n\n");
}

/// Split `s` into pieces of at most `n` chars (deltas arrive in pieces).
fn chunks(s: &str, n: usize) -> Vec<String> {
    let chars: Vec<char> = s.chars().collect();
    if chars.is_empty() {
        return vec![String::new()];
    }
    chars.chunks(n).map(|c| c.iter().collect()).collect()
}

pub(crate) fn render(
    id: &str,
    model: &str,
    blocks: &[Block],
    usage: Usage,
    stop_reason: &str,
) -> String {
    let mut out = String::new();
    event(
        &mut out,
        "message_start",
        &json!({"type": "message_start", "message": {
            "id": id, "type": "message", "role": "assistant", "model": model,
            "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": {
                "input_tokens": usage.input_tokens,
                "cache_creation_input_tokens": usage.cache_creation_input_tokens,
                "cache_read_input_tokens": usage.cache_read_input_tokens,
                "output_tokens": 1,
                "service_tier": "standard",
            }
        }}),
    );
    for (i, b) in blocks.iter().enumerate() {
        match b {
            Block::Text(t) => {
                event(
                    &mut out,
                    "content_block_start",
                    &json!({"type": "content_block_start", "index": i,
                            "content_block": {"type": "text", "text": ""}}),
                );
                if i == 0 {
                    event(&mut out, "ping", &json!({"type": "ping"}));
                }
                for piece in chunks(t, 40) {
                    event(
                        &mut out,
                        "content_block_delta",
                        &json!({"type": "content_block_delta", "index": i,
                                "delta": {"type": "text_delta", "text": piece}}),
                    );
                }
            }
            Block::ToolUse { id, name, input } => {
                event(
                    &mut out,
                    "content_block_start",
                    &json!({"type": "content_block_start", "index": i,
                            "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}}),
                );
                event(
                    &mut out,
                    "content_block_delta",
                    &json!({"type": "content_block_delta", "index": i,
                            "delta": {"type": "input_json_delta", "partial_json": ""}}),
                );
                for piece in chunks(&input.to_string(), 40) {
                    event(
                        &mut out,
                        "content_block_delta",
                        &json!({"type": "content_block_delta", "index": i,
                                "delta": {"type": "input_json_delta", "partial_json": piece}}),
                    );
                }
            }
        }
        event(
            &mut out,
            "content_block_stop",
            &json!({"type": "content_block_stop", "index": i}),
        );
    }
    event(
        &mut out,
        "message_delta",
        &json!({"type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": null},
                "usage": {"output_tokens": usage.output_tokens}}),
    );
    event(&mut out, "message_stop", &json!({"type": "message_stop"}));
    out
}
