//! The native half of `SessionManager.list` / `listAll`: what pi's `buildSessionInfo` reads
//! from one session file (`treelog::listing::pi_summary`), computed on a libuv worker thread so
//! that a listing never holds the event loop while a file is read. The JS side builds pi's
//! `SessionInfo` from it, and answers a file this cannot (`{"irregular":...}`) with pi's own
//! algorithm.

use napi::bindgen_prelude::AsyncTask;
use napi::{Env, Task};
use napi_derive::napi;
use serde_json::json;
use treelog::listing::pi_summary::{Summary, Texts, summarize_file};
use treelog::listing::summary_cache::summarize_file_cached;

/// The summary of `path` as JSON: `null` when pi lists no session for it (not a session, or
/// unreadable: pi's `buildSessionInfo` returns null on any error), `{"irregular": reason}`, or
/// `{"header", "messageCount", "name", "lastActivity", "firstMessage", "allMessagesText"}`.
fn summary_json(path: &str, texts: Texts, cache: Option<&str>) -> String {
    let path = std::path::Path::new(path);
    let summary = match cache {
        Some(dir) if texts == Texts::Skip => summarize_file_cached(path, std::path::Path::new(dir)),
        _ => summarize_file(path, texts),
    };
    match summary {
        Ok(Summary::Session(summary)) => json!({
            "header": summary.header_json,
            "messageCount": summary.message_count,
            "name": summary.name,
            "lastActivity": summary.last_activity_ms,
            "firstMessage": summary.first_user_text,
            "allMessagesText": summary.all_texts,
        })
        .to_string(),
        Ok(Summary::Irregular(reason)) => json!({ "irregular": reason }).to_string(),
        Ok(Summary::NotASession) | Err(_) => "null".into(),
    }
}

/// One file's summary, computed off the event loop.
pub struct Summarize {
    path: String,
    texts: Texts,
    /// The folder of kept summaries (`treelog::listing::summary_cache`), if any.
    cache: Option<String>,
}

impl Task for Summarize {
    type Output = String;
    type JsValue = String;

    fn compute(&mut self) -> napi::Result<String> {
        // A panic must not cross into libuv: it lists as pi lists a file it cannot read.
        let (path, texts, cache) = (self.path.as_str(), self.texts, self.cache.as_deref());
        Ok(
            std::panic::catch_unwind(|| summary_json(path, texts, cache))
                .unwrap_or_else(|_| "null".into()),
        )
    }

    fn resolve(&mut self, _env: Env, output: String) -> napi::Result<String> {
        Ok(output)
    }
}

/// The eager fields of `path`'s listing entry (no texts), on a worker thread; a big file's
/// kept in and read from the folder `cache` when one is given.
#[napi(ts_return_type = "Promise<string>")]
pub fn summarize_session(path: String, cache: Option<String>) -> AsyncTask<Summarize> {
    AsyncTask::new(Summarize {
        path,
        texts: Texts::Skip,
        cache,
    })
}

/// Every user and assistant text of `path`, joined as pi's `allMessagesText` is, now: what a
/// listing entry's lazy `allMessagesText` reads the first time it is asked for. `null` when the
/// file is no longer a session this reads as pi does (the JS side then runs pi's own loop).
#[napi]
pub fn summarize_session_texts(path: String) -> Option<String> {
    std::panic::catch_unwind(
        || match summarize_file(std::path::Path::new(&path), Texts::Collect) {
            Ok(Summary::Session(summary)) => summary.all_texts,
            _ => None,
        },
    )
    .unwrap_or(None)
}
