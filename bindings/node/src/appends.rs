//! The appends of a session: each takes the id and timestamp the JS side drew, as pi draws
//! them, and a pending log is written to its file by the append that brings a conversation
//! (`crate::pending`).

use std::panic::{AssertUnwindSafe, catch_unwind};

use napi_derive::napi;
use treelog::{NewEntry, Session};

use crate::errors::{Result, js_error, not_found, to_js};
use crate::pending::{State, append_in};
use crate::session::NativeSession;

#[napi]
impl NativeSession {
    /// Appends with `append`, stamped, then writes a pending log to its file when it now
    /// holds a conversation (`conversation`: the entry is a user or assistant message).
    fn appended(
        &mut self,
        id: String,
        timestamp: String,
        conversation: bool,
        append: impl FnOnce(&mut Session) -> treelog::Result<String>,
    ) -> Result<String> {
        let state = std::mem::replace(&mut self.state, State::Broken);
        let options = &self.options;
        let result = catch_unwind(AssertUnwindSafe(move || {
            append_in(state, options, id, timestamp, conversation, append)
        }));
        match result {
            Ok((state, result)) => {
                self.state = state;
                result.map_err(to_js)
            }
            Err(_) => Err(js_error(
                "TREELOG_PANIC",
                "treelog panicked during an append; this session handle is closed",
            )),
        }
    }

    #[napi]
    pub fn append_message(
        &mut self,
        id: String,
        timestamp: String,
        message: String,
        conversation: bool,
    ) -> Result<String> {
        self.appended(id, timestamp, conversation, |session| {
            session.append_message(&message)
        })
    }

    #[napi]
    pub fn append_thinking_level_change(
        &mut self,
        id: String,
        timestamp: String,
        thinking_level: String,
    ) -> Result<String> {
        self.appended(id, timestamp, false, |session| {
            session.append_thinking_level_change(&thinking_level)
        })
    }

    #[napi]
    pub fn append_model_change(
        &mut self,
        id: String,
        timestamp: String,
        provider: String,
        model_id: String,
    ) -> Result<String> {
        self.appended(id, timestamp, false, |session| {
            session.append_model_change(&provider, &model_id)
        })
    }

    #[napi]
    #[allow(clippy::too_many_arguments)]
    pub fn append_usage(
        &mut self,
        id: String,
        timestamp: String,
        kind: String,
        provider: String,
        model: String,
        usage: String,
        note: Option<String>,
    ) -> Result<String> {
        self.appended(id, timestamp, false, |session| {
            session.append_usage(&kind, &provider, &model, &usage, note.as_deref())
        })
    }

    #[napi]
    #[allow(clippy::too_many_arguments)]
    pub fn append_compaction(
        &mut self,
        id: String,
        timestamp: String,
        summary: String,
        first_kept_entry_id: Option<String>,
        tokens_before: String,
        details: Option<String>,
        from_hook: Option<bool>,
        usage: Option<String>,
    ) -> Result<String> {
        self.appended(id, timestamp, false, |session| {
            session.append_compaction(
                &summary,
                first_kept_entry_id.as_deref(),
                &tokens_before,
                details.as_deref(),
                from_hook,
                usage.as_deref(),
            )
        })
    }

    #[napi]
    pub fn append_custom_entry(
        &mut self,
        id: String,
        timestamp: String,
        custom_type: String,
        data: Option<String>,
    ) -> Result<String> {
        self.appended(id, timestamp, false, |session| {
            session.append_custom_entry(&custom_type, data.as_deref())
        })
    }

    #[napi]
    pub fn append_custom_message_entry(
        &mut self,
        id: String,
        timestamp: String,
        custom_type: String,
        content: String,
        display: bool,
        details: Option<String>,
    ) -> Result<String> {
        self.appended(id, timestamp, false, |session| {
            session.append_custom_message_entry(&custom_type, &content, display, details.as_deref())
        })
    }

    /// `name` as pi sanitises it (the JS side does that).
    #[napi]
    pub fn append_session_info(
        &mut self,
        id: String,
        timestamp: String,
        name: String,
    ) -> Result<String> {
        self.appended(id, timestamp, false, |session| {
            session.append(NewEntry::SessionInfo { name })
        })
    }

    /// `label` as pi writes it: absent when undefined, kept when empty.
    #[napi]
    pub fn append_label_change(
        &mut self,
        id: String,
        timestamp: String,
        target_id: String,
        label: Option<String>,
    ) -> Result<String> {
        self.appended(id, timestamp, false, |session| {
            if session.entry(&target_id)?.is_none() {
                return Err(not_found(session, &target_id));
            }
            session.append(NewEntry::Label { target_id, label })
        })
    }

    #[napi]
    pub fn append_context_edit(
        &mut self,
        id: String,
        timestamp: String,
        target_id: String,
        replacement: Option<String>,
    ) -> Result<String> {
        self.appended(id, timestamp, false, |session| {
            session.append_context_edit(&target_id, replacement.as_deref())
        })
    }

    #[napi]
    #[allow(clippy::too_many_arguments)]
    pub fn branch_with_summary(
        &mut self,
        id: String,
        timestamp: String,
        from_id: Option<String>,
        summary: String,
        details: Option<String>,
        from_hook: Option<bool>,
        usage: Option<String>,
    ) -> Result<String> {
        self.appended(id, timestamp, false, |session| {
            if let Some(from) = &from_id
                && session.entry(from)?.is_none()
            {
                return Err(not_found(session, from));
            }
            session.branch_with_summary(
                from_id.as_deref(),
                &summary,
                details.as_deref(),
                from_hook,
                usage.as_deref(),
            )
        })
    }
}
