//! The stand-in over a real loopback socket, spoken to with plain HTTP/1.1.

use super::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

async fn post(s: &Standin, body: &Value) -> (u16, String, String) {
    let mut c = tokio::net::TcpStream::connect(s.addr()).await.unwrap();
    let b = body.to_string();
    let req = format!(
        "POST /v1/messages?beta=true HTTP/1.1\r\nhost: x\r\nx-api-key: sk-secret\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{b}",
        b.len()
    );
    c.write_all(req.as_bytes()).await.unwrap();
    let mut out = String::new();
    c.read_to_string(&mut out).await.unwrap();
    let status = out[9..12].parse().unwrap();
    let (head, body) = out.split_once("\r\n\r\n").unwrap();
    (status, head.to_string(), body.to_string())
}

fn events(sse: &str) -> Vec<Value> {
    sse.lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter_map(|d| serde_json::from_str(d).ok())
        .collect()
}

fn user(text: &str) -> Value {
    json!({"model": "claude-opus-4-8", "stream": true,
           "messages": [{"role": "user", "content": [{"type": "text", "text": text}]}]})
}

#[tokio::test]
async fn streams_text_with_usage_in_the_api_event_order() {
    let s = Standin::spawn().await.unwrap();
    s.push(Reply::text("hello there").with_usage(Usage {
        input_tokens: 11,
        cache_creation_input_tokens: 22,
        cache_read_input_tokens: 33,
        output_tokens: 44,
    }));
    let (st, head, body) = post(&s, &user("hi")).await;
    assert_eq!(st, 200);
    assert!(head.to_ascii_lowercase().contains("text/event-stream"));
    let ev = events(&body);
    let kinds: Vec<&str> = ev.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(kinds.first(), Some(&"message_start"));
    assert_eq!(kinds.last(), Some(&"message_stop"));
    assert!(kinds.contains(&"content_block_start") && kinds.contains(&"content_block_stop"));
    let u = &ev[0]["message"]["usage"];
    assert_eq!(
        (
            u["input_tokens"].as_u64(),
            u["cache_creation_input_tokens"].as_u64(),
            u["cache_read_input_tokens"].as_u64()
        ),
        (Some(11), Some(22), Some(33))
    );
    let delta = ev.iter().find(|e| e["type"] == "message_delta").unwrap();
    assert_eq!(delta["delta"]["stop_reason"], "end_turn");
    assert_eq!(delta["usage"]["output_tokens"], 44);
    let text: String = ev
        .iter()
        .filter_map(|e| e["delta"]["text"].as_str())
        .collect();
    assert_eq!(text, "hello there");
    // The log keeps the body and drops the key.
    let r = &s.requests()[0];
    assert_eq!(r.path, "/v1/messages?beta=true");
    assert!(r.header("x-api-key").is_none());
    assert_eq!(r.last_user_text().trim(), "hi");
    s.shutdown().await;
}

#[tokio::test]
async fn bash_then_text_on_the_tool_result_without_consuming_the_queue() {
    let s = Standin::spawn().await.unwrap();
    s.push(Reply::bash("echo hi", "ran it"));
    s.push(Reply::text("next turn"));
    let (_, _, b1) = post(&s, &user("run")).await;
    let ev = events(&b1);
    let start = ev
        .iter()
        .find(|e| e["content_block"]["type"] == "tool_use")
        .unwrap();
    assert_eq!(start["content_block"]["name"], "Bash");
    let json: String = ev
        .iter()
        .filter_map(|e| e["delta"]["partial_json"].as_str())
        .collect();
    let input: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(input["command"], "echo hi");
    assert_eq!(
        ev.iter().find(|e| e["type"] == "message_delta").unwrap()["delta"]["stop_reason"],
        "tool_use"
    );
    let follow = json!({"messages": [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "hi"}]}]});
    let (_, _, b2) = post(&s, &follow).await;
    let text: String = events(&b2)
        .iter()
        .filter_map(|e| e["delta"]["text"].as_str())
        .collect();
    assert_eq!(text, "ran it");
    assert_eq!(s.queued(), 1);
    s.shutdown().await;
}

#[tokio::test]
async fn a_tool_call_chains_to_the_next_queued_reply() {
    let s = Standin::spawn().await.unwrap();
    s.push(Reply::tool(
        "mcp__hoop__work_task_finish",
        json!({"task_id": 7, "status": "done"}),
    ));
    s.push(Reply::tool(
        "mcp__hoop__work_task_take",
        json!({"task_id": 8}),
    ));
    s.push(Reply::text("both done"));
    s.push(Reply::text("next turn"));
    let tool_of = |b: &str| -> (String, Value) {
        let ev = events(b);
        let name = ev
            .iter()
            .find(|e| e["content_block"]["type"] == "tool_use")
            .map(|e| e["content_block"]["name"].as_str().unwrap().to_string())
            .unwrap_or_default();
        let json: String = ev
            .iter()
            .filter_map(|e| e["delta"]["partial_json"].as_str())
            .collect();
        (name, serde_json::from_str(&json).unwrap_or(Value::Null))
    };
    let (_, _, b1) = post(&s, &user("work")).await;
    assert_eq!(
        tool_of(&b1),
        (
            "mcp__hoop__work_task_finish".to_string(),
            json!({"task_id": 7, "status": "done"})
        )
    );
    let follow = json!({"messages": [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "ok"}]}]});
    let (_, _, b2) = post(&s, &follow).await;
    assert_eq!(
        tool_of(&b2),
        (
            "mcp__hoop__work_task_take".to_string(),
            json!({"task_id": 8})
        )
    );
    let (_, _, b3) = post(&s, &follow).await;
    let text: String = events(&b3)
        .iter()
        .filter_map(|e| e["delta"]["text"].as_str())
        .collect();
    assert_eq!(text, "both done");
    assert_eq!(s.queued(), 1, "the next turn's reply is still queued");
    s.shutdown().await;
}

#[tokio::test]
async fn summary_requests_get_analysis_and_summary_tags() {
    let s = Standin::spawn().await.unwrap();
    s.push(Reply::text("kept for the next turn"));
    let (_, _, b) = post(
        &s,
        &user("Your task is to create a detailed summary of the conversation so far"),
    )
    .await;
    let text: String = events(&b)
        .iter()
        .filter_map(|e| e["delta"]["text"].as_str())
        .collect();
    assert!(
        text.starts_with("<analysis>")
            && text.contains("<summary>")
            && text.ends_with("</summary>")
    );
    assert_eq!(s.queued(), 1);
    s.shutdown().await;
}

/// The CLI's summary prompt can share the last user message with the tool
/// result of the previous turn: it is still a compaction request (and takes
/// a queued summary), not a tool-result follow-up.
#[tokio::test]
async fn a_summary_request_next_to_a_tool_result_is_a_summary_request() {
    let s = Standin::spawn().await.unwrap();
    s.push(Reply::Summary("QUEUED-SUMMARY".into()));
    let body = json!({"model": "claude-opus-4-8", "stream": true,
    "messages": [{"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "sent #4"},
        {"type": "text", "text": "Your task is to create a detailed summary of the conversation so far"}
    ]}]});
    let (_, _, b) = post(&s, &body).await;
    let text: String = events(&b)
        .iter()
        .filter_map(|e| e["delta"]["text"].as_str())
        .collect();
    assert!(
        text.contains("<summary>\nQUEUED-SUMMARY\n</summary>"),
        "{text}"
    );
    assert_eq!(s.queued(), 0);
    s.shutdown().await;
}

#[tokio::test]
async fn errors_have_the_api_shape_and_headers() {
    let s = Standin::spawn().await.unwrap();
    s.push(Reply::prompt_too_long());
    s.push(Reply::rate_limited(Some(7)));
    s.push(Reply::auth_error());
    s.push(Reply::overloaded());
    let cases = [
        (
            400,
            "invalid_request_error",
            "prompt is too long: 250000 tokens > 200000 maximum",
        ),
        (429, "rate_limit_error", ""),
        (401, "authentication_error", "invalid x-api-key"),
        (529, "overloaded_error", "Overloaded"),
    ];
    for (status, kind, msg) in cases {
        let (st, head, body) = post(&s, &user("x")).await;
        assert_eq!(st, status);
        let v: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(v["type"], "error");
        assert_eq!(v["error"]["type"], kind);
        assert!(v["request_id"].as_str().unwrap().starts_with("req_"));
        if !msg.is_empty() {
            assert_eq!(v["error"]["message"], msg);
        }
        if status == 429 {
            assert!(head.to_ascii_lowercase().contains("retry-after: 7"));
        }
    }
    assert_eq!(s.request_count(), 4);
    s.shutdown().await;
}

#[tokio::test]
async fn default_echo_counts_requests_and_messages() {
    let s = Standin::spawn().await.unwrap();
    post(&s, &user("a")).await;
    let (_, _, b) = post(&s, &user("b")).await;
    let text: String = events(&b)
        .iter()
        .filter_map(|e| e["delta"]["text"].as_str())
        .collect();
    assert_eq!(text, "reply #2 (request carried 1 messages)");
    s.shutdown().await;
}

#[tokio::test]
async fn honest_usage_reads_the_cached_prefix_until_the_clock_passes_the_ttl() {
    let s = Standin::spawn().await.unwrap();
    let body = json!({"system": [{"type": "text", "text": "prompt ".repeat(100), "cache_control": {"type": "ephemeral"}}],
                      "messages": [{"role": "user", "content": "hi"}]});
    post(&s, &body).await;
    post(&s, &body).await;
    s.advance_clock(Duration::from_secs(6 * 60));
    post(&s, &body).await;
    let u: Vec<Usage> = s.requests().iter().map(|r| r.usage.unwrap()).collect();
    assert_eq!(u[0].cache_read_input_tokens, 0);
    assert!(u[0].cache_creation_input_tokens > 0);
    assert_eq!(
        u[1].cache_read_input_tokens,
        u[0].cache_creation_input_tokens
    );
    assert_eq!(
        u[2].cache_read_input_tokens, 0,
        "5-minute entries are gone after 6 minutes"
    );
    s.shutdown().await;
}

/// Each request records what answered it and from where, and the summary
/// names the sender's words (without the CLI's reminders), the answers and
/// what is still queued: what a test that timed out shows.
#[tokio::test]
async fn the_summary_says_what_answered_each_request() {
    let s = Standin::spawn().await.unwrap();
    s.push(Reply::bash("sleep 9", "slept"));
    s.push(Reply::server_error());
    s.push(Reply::text("later"));
    let asked = json!({"model": "m", "messages": [{"role": "user", "content": [
        {"type": "text", "text": "<system-reminder>\ncontext\n</system-reminder>"},
        {"type": "text", "text": "WORKER-PROMPT go"}
    ]}]});
    post(&s, &asked).await;
    let follow = json!({"messages": [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "hi"}]}]});
    post(&s, &follow).await;
    post(&s, &user("again")).await;
    let answers: Vec<String> = s.requests().into_iter().map(|r| r.answer).collect();
    assert_eq!(
        answers,
        [
            "queued: bash \"sleep 9\"",
            "tool-result follow-up: text \"slept\"",
            "queued: error 500 api_error",
        ]
    );
    let summary = s.summary();
    let lines: Vec<&str> = summary.lines().collect();
    assert_eq!(
        lines,
        [
            "#1 m msgs=1 last=\"WORKER-PROMPT go\" -> queued: bash \"sleep 9\"",
            "#2 ? msgs=1 last=tool_result -> tool-result follow-up: text \"slept\"",
            "#3 claude-opus-4-8 msgs=1 last=\"again\" -> queued: error 500 api_error",
            "still queued: [text \"later\"]",
        ]
    );
    s.shutdown().await;
}
