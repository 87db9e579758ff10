//! pi's `buildSessionContext` over the model, literally: the messages from the latest
//! compaction on the path to the leaf, the thinking level and the model.

use serde_json::{Map, Value, json};

use super::Model;

impl Model {
    /// pi's `buildSessionContext`, literally.
    pub fn context(&self, leaf: Option<usize>) -> Value {
        let path = self.path(leaf);
        let mut thinking = json!("off");
        let mut model = Value::Null;
        let mut compaction = None;
        for (position, index) in path.iter().enumerate() {
            let entry = &self.entries[*index];
            let v = &entry.value;
            match entry.kind.as_str() {
                "thinking_level_change" => {
                    thinking = v.get("thinkingLevel").cloned().unwrap_or(Value::Null)
                }
                "model_change" => model = provider_model(v.get("provider"), v.get("modelId")),
                "message" if v["message"]["role"] == "assistant" => {
                    model = provider_model(v["message"].get("provider"), v["message"].get("model"))
                }
                "compaction" => compaction = Some(position),
                _ => {}
            }
        }
        let mut messages = Vec::new();
        match compaction {
            Some(at) => {
                let c = &self.entries[path[at]];
                let mut summary = Map::new();
                summary.insert("role".into(), json!("compactionSummary"));
                summary.insert("summary".into(), c.value["summary"].clone());
                if let Some(tokens) = c.value.get("tokensBefore") {
                    summary.insert("tokensBefore".into(), tokens.clone());
                }
                summary.insert("timestamp".into(), json!(c.timestamp_ms));
                messages.push(Value::Object(summary));
                let mut found = false;
                for index in &path[..at] {
                    if Some(self.entries[*index].id.as_str())
                        == c.value.get("firstKeptEntryId").and_then(Value::as_str)
                    {
                        found = true;
                    }
                    if found {
                        messages.extend(self.message(*index));
                    }
                }
                for index in &path[at + 1..] {
                    messages.extend(self.message(*index));
                }
            }
            None => {
                for index in &path {
                    messages.extend(self.message(*index));
                }
            }
        }
        json!({"messages": messages, "thinkingLevel": thinking, "model": model})
    }

    pub fn message(&self, index: usize) -> Option<Value> {
        let entry = &self.entries[index];
        let v = &entry.value;
        let mut out = Map::new();
        match entry.kind.as_str() {
            "message" => return v.get("message").cloned(),
            "custom_message" => {
                out.insert("role".into(), json!("custom"));
                for key in ["customType", "content", "display", "details"] {
                    if let Some(value) = v.get(key) {
                        out.insert(key.into(), value.clone());
                    }
                }
            }
            "branch_summary" => {
                let summary = v.get("summary")?;
                if matches!(summary, Value::Null | Value::Bool(false))
                    || summary == &json!("")
                    || summary == &json!(0)
                {
                    return None;
                }
                out.insert("role".into(), json!("branchSummary"));
                out.insert("summary".into(), summary.clone());
                if let Some(from) = v.get("fromId") {
                    out.insert("fromId".into(), from.clone());
                }
            }
            _ => return None,
        }
        out.insert("timestamp".into(), json!(entry.timestamp_ms));
        Some(Value::Object(out))
    }
}

fn provider_model(provider: Option<&Value>, model_id: Option<&Value>) -> Value {
    let mut out = Map::new();
    if let Some(provider) = provider {
        out.insert("provider".into(), provider.clone());
    }
    if let Some(model_id) = model_id {
        out.insert("modelId".into(), model_id.clone());
    }
    Value::Object(out)
}
