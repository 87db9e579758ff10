//! The seeded randomness of the generator and what it draws from: the PRNG, the word lists
//! (tools, file extensions, thinking levels, models) and the corpus of word soup that message
//! texts are sliced from. Knows nothing of entries or sessions.

/// splitmix64 seeding a xorshift64* stream: tiny, fast and the same on every platform.
pub struct Rng {
    state: u64,
}

impl Rng {
    pub fn new(seed: u64) -> Rng {
        let mut z = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        Rng { state: z.max(1) }
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.state;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.state = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform in `0..bound` (`bound` > 0).
    pub fn below(&mut self, bound: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(bound)) >> 64) as u64
    }

    /// Uniform in `low..=high`.
    pub fn between(&mut self, low: u64, high: u64) -> u64 {
        low + self.below(high - low + 1)
    }

    pub fn chance(&mut self, probability: f64) -> bool {
        let uniform = (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        uniform < probability
    }

    /// A uniformly chosen item of `items` (which must not be empty).
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }
}

pub(super) const WORDS: &[&str] = &[
    "the",
    "index",
    "append",
    "session",
    "leaf",
    "branch",
    "tree",
    "parent",
    "entry",
    "context",
    "model",
    "thinking",
    "level",
    "compaction",
    "summary",
    "label",
    "header",
    "cwd",
    "path",
    "json",
    "line",
    "parse",
    "write",
    "read",
    "fsync",
    "crash",
    "torn",
    "tail",
    "lock",
    "retry",
    "cache",
    "snapshot",
    "rebuild",
    "verify",
    "repair",
    "migrate",
    "version",
    "schema",
    "id",
    "uuid",
    "timestamp",
    "latency",
    "throughput",
    "p50",
    "p99",
    "memory",
    "rss",
    "heap",
    "buffer",
    "stream",
    "tokio",
    "serde",
    "redb",
    "rust",
    "crate",
    "function",
    "return",
    "error",
    "warning",
    "test",
    "benchmark",
    "check",
    "fix",
    "build",
    "we",
    "it",
    "should",
    "could",
    "is",
    "not",
    "and",
    "as",
    "at",
    "then",
    "because",
    "user",
    "assistant",
    "tool",
    "call",
    "result",
    "input",
    "output",
    "usage",
    "cost",
    "token",
    "request",
    "response",
    "directory",
    "file",
    "open",
    "close",
    "list",
    "resume",
    "fork",
    "value",
    "arguments",
    "expected",
    "me",
    "this",
    "let",
    "café",
    "日本語",
    "Ωmega",
    "naïve",
    "🚀",
];

pub(super) const TOOLS: &[&str] = &["read", "write", "edit", "bash"];
pub(super) const EXTENSIONS: &[&str] = &["rs", "ts", "md", "toml", "json"];
pub(super) const LEVELS: &[&str] = &["off", "minimal", "low", "medium", "high"];
/// (provider, model, api)
pub(super) const MODELS: &[(&str, &str, &str)] = &[
    ("anthropic", "claude-sonnet-4-5", "anthropic-messages"),
    ("openai", "gpt-5.1-codex", "openai-responses"),
    ("google", "gemini-2.5-pro", "google-generative-ai"),
];

/// Appends `text` as a JSON string literal.
pub(super) fn push_json_str(out: &mut String, text: &str) {
    out.reserve(text.len() + 2);
    out.push('"');
    let mut start = 0;
    for (position, byte) in text.bytes().enumerate() {
        let escaped = match byte {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\t' => "\\t",
            b'\r' => "\\r",
            0..=0x1f => "",
            _ => continue,
        };
        // `position` is at an ASCII byte, so both slices end on character boundaries.
        out.push_str(&text[start..position]);
        if escaped.is_empty() {
            out.push_str(&format!("\\u{byte:04x}"));
        } else {
            out.push_str(escaped);
        }
        start = position + 1;
    }
    out.push_str(&text[start..]);
    out.push('"');
}

/// Bytes of word soup generated once per run; message texts are slices of it, so building a
/// payload costs a copy, not a word-by-word walk. Small enough to stay in the CPU cache.
const CORPUS_LEN: usize = 512 * 1024;

/// Random words, already escaped as the inside of a JSON string literal (line breaks are
/// `\n`), with the byte range of every word so slices start and end on whole words.
pub(super) struct Corpus {
    text: String,
    /// Start and end of each word in `text`, in order.
    words: Vec<(u32, u32)>,
}

impl Corpus {
    pub(super) fn new(rng: &mut Rng) -> Corpus {
        let mut text = String::with_capacity(CORPUS_LEN + 64);
        let mut words = Vec::with_capacity(CORPUS_LEN / 5);
        while text.len() < CORPUS_LEN {
            if !text.is_empty() {
                text.push_str(if rng.below(12) == 0 { "\\n" } else { " " });
            }
            let start = text.len() as u32;
            let word: &&str = rng.pick(WORDS);
            text.push_str(word);
            if rng.below(10) == 0 {
                text.push('.');
            }
            words.push((start, text.len() as u32));
        }
        Corpus { text, words }
    }

    /// A run of whole words of about `low..=high` bytes (escaped), starting at a random word.
    pub(super) fn slice(&self, rng: &mut Rng, low: usize, high: usize) -> &str {
        let target = rng.between(low as u64, high.max(low) as u64) as u32;
        let last = self.words.len() - 1;
        let first = rng.below(last as u64 / 2) as usize;
        let start = self.words[first].0;
        // The first word ending at or past `start + target`; every word takes at least one
        // byte, so it is within `target` words (a short, cache-friendly search).
        let window_end = (first + target as usize + 1).min(last);
        let end_index =
            self.words[first..window_end].partition_point(|(_, end)| *end < start + target) + first;
        &self.text[start as usize..self.words[end_index].1 as usize]
    }
}
