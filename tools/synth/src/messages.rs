//! The message payloads of generated entries: user messages, assistant messages with
//! thinking and tool calls, tool results, shaped like pi's and sized by the options.

use crate::Generator;
use crate::words::{EXTENSIONS, MODELS, TOOLS, WORDS, push_json_str};

impl Generator<'_> {
    /// Random words making about `low..=high` bytes, as plain text.
    pub(super) fn words(&mut self, low: usize, high: usize) -> String {
        let escaped = self.corpus.slice(&mut self.rng, low, high);
        serde_json::from_str::<String>(&format!("\"{escaped}\"")).unwrap_or_default()
    }

    /// Appends random words making about `low..=high` bytes as a JSON string literal.
    pub(super) fn push_words(&mut self, out: &mut String, low: usize, high: usize) {
        out.push('"');
        out.push_str(self.corpus.slice(&mut self.rng, low, high));
        out.push('"');
    }

    fn next_message_ms(&mut self) -> i64 {
        self.message_ms += self.rng.between(1_000, 60_000) as i64;
        self.message_ms
    }

    fn payload(&mut self, share_percent: usize) -> (usize, usize) {
        let mean = self.options.payload_bytes * share_percent / 100;
        (mean / 2, mean + mean / 2)
    }

    pub(super) fn user_message(&mut self) -> String {
        let (low, high) = self.payload(40);
        let mut out = String::from("{\"role\":\"user\",\"content\":");
        if self.rng.below(2) == 0 {
            self.push_words(&mut out, low, high);
        } else {
            out.push_str("[{\"type\":\"text\",\"text\":");
            self.push_words(&mut out, low, high);
            out.push_str("}]");
        }
        out.push_str(",\"timestamp\":");
        out.push_str(&self.next_message_ms().to_string());
        out.push('}');
        out
    }

    /// An assistant message with `calls` tool calls; returns it and the (call id, tool) pairs.
    pub(super) fn assistant_message(
        &mut self,
        calls: usize,
    ) -> (String, Vec<(String, &'static str)>) {
        let (provider, model, api) = MODELS[self.model];
        let (low, high) = self.payload(80);
        let mut out = String::from("{\"role\":\"assistant\",\"content\":[");
        let mut blocks = 0;
        if self.rng.below(3) > 0 {
            out.push_str("{\"type\":\"thinking\",\"thinking\":");
            self.push_words(&mut out, low / 3, high / 3);
            out.push_str(",\"thinkingSignature\":\"c2lnbmF0dXJl\"}");
            blocks += 1;
        }
        if calls == 0 || self.rng.below(2) == 0 {
            if blocks > 0 {
                out.push(',');
            }
            out.push_str("{\"type\":\"text\",\"text\":");
            self.push_words(&mut out, low, high);
            out.push('}');
            blocks += 1;
        }
        let mut tool_calls = Vec::with_capacity(calls);
        for _ in 0..calls {
            self.tool_calls += 1;
            let call_id = format!("toolu_{:012}", self.tool_calls);
            let tool = *self.rng.pick(TOOLS);
            let file = format!(
                "src/{}/{}_{}.{}",
                self.rng.pick(WORDS),
                self.rng.pick(WORDS),
                self.rng.pick(WORDS),
                self.rng.pick(EXTENSIONS)
            );
            if blocks > 0 {
                out.push(',');
            }
            out.push_str("{\"type\":\"toolCall\",\"id\":\"");
            out.push_str(&call_id);
            out.push_str("\",\"name\":\"");
            out.push_str(tool);
            out.push_str("\",\"arguments\":{");
            match tool {
                "bash" => {
                    out.push_str("\"command\":");
                    let command = format!("cargo test -p {}", self.rng.pick(WORDS));
                    push_json_str(&mut out, &command);
                }
                "write" | "edit" => {
                    out.push_str("\"path\":");
                    push_json_str(&mut out, &file);
                    out.push_str(",\"content\":");
                    self.push_words(&mut out, low / 4, high / 4);
                }
                _ => {
                    out.push_str("\"path\":");
                    push_json_str(&mut out, &file);
                }
            }
            out.push_str("}}");
            blocks += 1;
            tool_calls.push((call_id, tool));
        }
        let input = self.rng.between(100, 5_000);
        let output = self.rng.between(50, 3_000);
        let cache_read = self.rng.between(0, 150_000);
        let cost_input = input as f64 * 3e-6;
        let cost_output = output as f64 * 15e-6;
        let cost_cache = cache_read as f64 * 3e-7;
        out.push_str(&format!(
            "],\"api\":\"{api}\",\"provider\":\"{provider}\",\"model\":\"{model}\",\"usage\":{{\"input\":{input},\"output\":{output},\"cacheRead\":{cache_read},\"cacheWrite\":0,\"totalTokens\":{},\"cost\":{{\"input\":{cost_input:.6},\"output\":{cost_output:.6},\"cacheRead\":{cost_cache:.6},\"cacheWrite\":0,\"total\":{:.6}}}}},\"stopReason\":\"{}\",\"timestamp\":{}}}",
            input + output + cache_read,
            cost_input + cost_output + cost_cache,
            if calls > 0 { "toolUse" } else { "stop" },
            self.next_message_ms()
        ));
        (out, tool_calls)
    }

    pub(super) fn tool_result(&mut self, call_id: &str, tool: &str) -> String {
        let (low, high) = self.payload(120);
        let target = self.rng.between(low as u64, high as u64) as usize;
        let mut out = String::with_capacity(target + 256);
        out.push_str("{\"role\":\"toolResult\",\"toolCallId\":\"");
        out.push_str(call_id);
        out.push_str("\",\"toolName\":\"");
        out.push_str(tool);
        out.push_str("\",\"content\":[{\"type\":\"text\",\"text\":\"");
        // Numbered lines, as a read tool shows a file: `   1\t...\n`, escaped.
        let text_start = out.len();
        let mut line_number = 1;
        while out.len() - text_start < target {
            let number = line_number.to_string();
            for _ in number.len()..4 {
                out.push(' ');
            }
            out.push_str(&number);
            out.push_str("\\t");
            out.push_str(self.corpus.slice(&mut self.rng, 10, 60));
            out.push_str("\\n");
            line_number += 1;
        }
        let is_error = self.rng.below(20) == 0;
        out.push_str("\"}],\"isError\":");
        out.push_str(if is_error { "true" } else { "false" });
        out.push_str(",\"timestamp\":");
        out.push_str(&self.next_message_ms().to_string());
        out.push('}');
        out
    }
}
