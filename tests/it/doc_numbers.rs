//! The documents quote the code's numbers. Each row of [`QUOTES`] is a phrase that
//! ARCHITECTURE.md, RELIABILITY.md, README.md, BENCHMARKS.md or a page of `format-spec/` or
//! `docs/` says, with `{}` where it gives a number (a schema version, a bound, a run length), and the place in
//! the code that holds the number. Every place a document says the phrase is compared with the
//! code, so a constant changed without its documents fails here, and so does a document that
//! quotes a wrong value.
//!
//! A phrase that no document says any more fails too: a reworded document updates its row, so
//! that a stale number cannot hide behind new words. Whitespace (line breaks included) counts
//! as one space; `65,536` reads as 65536; the number's unit (`KiB`, `MiB`) is part of the
//! phrase, and the row divides the code's value by it.

use std::path::{Path, PathBuf};

use treelog::format::{id_index, ids, page, record};
use treelog::limits;

const KIB: u64 = 1024;
const MIB: u64 = 1024 * 1024;

/// Where the code holds a quoted value.
enum Code {
    /// A public constant of the crate.
    Value(u64),
    /// `const NAME` in a source file, its expression evaluated (`1 << 16`, `96 << 20`).
    Const {
        file: &'static str,
        name: &'static str,
    },
    /// A number written in a source file, found by the text around it as a quote is.
    Literal {
        file: &'static str,
        phrase: &'static str,
    },
    /// A string value of a TOML file (`rust-version = "1.89"`).
    Toml {
        file: &'static str,
        key: &'static str,
    },
}

/// A number the documents quote.
struct Quote {
    /// The words around the number, `{}` standing for it.
    phrase: &'static str,
    /// What one of the document's units is in the code's (the code's value is divided by it).
    unit: u64,
    code: Code,
}

const fn value(phrase: &'static str, value: u64) -> Quote {
    Quote {
        phrase,
        unit: 1,
        code: Code::Value(value),
    }
}

const fn value_in(phrase: &'static str, unit: u64, value: u64) -> Quote {
    Quote {
        phrase,
        unit,
        code: Code::Value(value),
    }
}

const fn constant(phrase: &'static str, file: &'static str, name: &'static str) -> Quote {
    constant_in(phrase, 1, file, name)
}

const fn constant_in(
    phrase: &'static str,
    unit: u64,
    file: &'static str,
    name: &'static str,
) -> Quote {
    Quote {
        phrase,
        unit,
        code: Code::Const { file, name },
    }
}

const IDS: &str = "src/index/store/ids.rs";
const SEARCH_STORE: &str = "src/search/store.rs";

/// Every number the documents quote, by phrase.
const QUOTES: &[Quote] = &[
    // How many lines detection reads (format-spec/claude-code.md).
    value(
        "the first {} lines are read with the same test",
        treelog::agents::DETECT_LINES_MAX as u64,
    ),
    // How long a killed process's leftover waits before the next run removes it.
    value(
        "not links, and untouched for {} s",
        treelog::fs_safe::LEFTOVER_AGE_MIN.as_secs(),
    ),
    // The schema version.
    value(
        "`u32` schema version (currently {})",
        treelog::SCHEMA_VERSION as u64,
    ),
    value(
        "| version | change | |---|---| | {} |",
        treelog::SCHEMA_VERSION as u64,
    ),
    value(
        "HEAD's index is schema {} (`SCHEMA_VERSION`)",
        treelog::SCHEMA_VERSION as u64,
    ),
    // New entry ids: reserved runs.
    // Logs on an object store (format-spec/object-store.md).
    constant_in(
        "segments of at most {} MiB",
        MIB,
        "src/object_store/transfer.rs",
        "PUSH_SEGMENT_BYTES",
    ),
    constant(
        "the sessions are opened {} at a time",
        "src/object_store/listing.rs",
        "OPENED_AT_ONCE",
    ),
    constant(
        "At most {} such rounds",
        "src/session/append.rs",
        "APPEND_RACES_MAX",
    ),
    constant("runs of {} consecutive values", IDS, "RESERVED_IDS_LEN"),
    constant("runs of {} at random starts", IDS, "RESERVED_IDS_LEN"),
    constant("reserved runs of {}", IDS, "RESERVED_IDS_LEN"),
    constant("every one of their {} ids held", IDS, "RESERVED_IDS_LEN"),
    constant(
        "When {} runs in a row are used up",
        IDS,
        "RESERVE_TRIES_MAX",
    ),
    value("after {} collisions", ids::ENTRY_ID_TRIES_MAX as u64),
    // Pages of the index.
    value("holds fewer than {} records", page::PAGE_RECORDS_MAX as u64),
    value(
        "records in the page, 1 to {} |",
        page::PAGE_RECORDS_MAX as u64,
    ),
    value(
        "record page of up to {} records",
        page::PAGE_RECORDS_MAX as u64,
    ),
    value(
        "stays within {} bytes (one 4 KiB page",
        page::PAGE_LEN_MAX as u64,
    ),
    value(
        "keeps a page within {} bytes",
        id_index::ID_PAGE_LEN_MAX as u64,
    ),
    value("grown past {} bytes", id_index::ID_PAGE_LEN_MAX as u64),
    value("grow past {} bytes", id_index::ID_PAGE_LEN_MAX as u64),
    value(
        "new ids as pages of {}",
        id_index::ID_PAGE_ENTRIES_TYPICAL as u64,
    ),
    constant(
        "more than {} pages and more than an eighth",
        "src/index/id_table.rs",
        "RECENT_PAGES_MIN",
    ),
    value("**Snapshot** ({} bytes)", record::SNAPSHOT_LEN as u64),
    value("**State** ({} bytes)", record::STATE_LEN as u64),
    // Flushes, hash blocks and the open's checks.
    value(
        "the {} random ids of a flush",
        limits::FLUSH_ENTRIES_MAX as u64,
    ),
    value(
        "one transaction every {} records",
        limits::FLUSH_ENTRIES_MAX as u64,
    ),
    value_in("records or {} MiB of log", MIB, limits::FLUSH_BYTES_MAX),
    value(
        "the index commits every {} appends",
        limits::FLUSH_ENTRIES_MAX as u64,
    ),
    constant(
        "catch-up reached {} lines",
        "src/index/store/flush.rs",
        "READER_FLUSH_RECORDS_MIN",
    ),
    constant_in(
        "lines or {} MiB; and on",
        MIB,
        "src/index/store/flush.rs",
        "READER_FLUSH_BYTES_MIN",
    ),
    value("B = {}", limits::HASH_BLOCK_LEN),
    value_in("one {} KiB block of the log", KIB, limits::HASH_BLOCK_LEN),
    value_in("hash of the last {} KiB block", KIB, limits::HASH_BLOCK_LEN),
    value_in("one {} KiB hash block", KIB, limits::HASH_BLOCK_LEN),
    constant_in(
        "one longer than {} MiB is not read for this check",
        MIB,
        "src/index/store/open.rs",
        "CHECKED_LEN_MAX",
    ),
    value_in("`LINE_LEN_MAX` ({} MiB", MIB, limits::LINE_LEN_MAX as u64),
    constant(
        "the first {} hex digits of the blake3 hash",
        "src/index/location.rs",
        "KEY_HEX_LEN",
    ),
    // The search index.
    constant("{\"format\": {},", SEARCH_STORE, "CATALOG_FORMAT"),
    constant(
        "this treelog reads format {} |",
        SEARCH_STORE,
        "CATALOG_FORMAT",
    ),
    constant("`RemoveLongFilter({})`", SEARCH_STORE, "TOKEN_LEN_MAX"),
    constant("drops tokens over {} bytes", SEARCH_STORE, "TOKEN_LEN_MAX"),
    constant_in(
        "segments of up to {} MiB of the engine's memory",
        MIB,
        SEARCH_STORE,
        "BULK_WRITER_MEMORY_BYTES",
    ),
    constant_in(
        "engine's memory ({} MiB otherwise)",
        MIB,
        SEARCH_STORE,
        "WRITER_MEMORY_BYTES",
    ),
    constant(
        "when more than {} segments are searchable",
        "src/search/refresh.rs",
        "SEGMENTS_BEFORE_MERGE_WAIT",
    ),
    constant_in(
        "the first `min({} KiB",
        KIB,
        "src/search/refresh.rs",
        "PREFIX_SAMPLE_BYTES",
    ),
    constant_in(
        "the last {} KiB of the indexed bytes",
        KIB,
        "src/search/refresh.rs",
        "PREFIX_SAMPLE_BYTES",
    ),
    // The tools and the layout.
    Quote {
        phrase: "(`--sync batch`, n = {})",
        unit: 1,
        code: Code::Literal {
            file: "tools/src/commands/append.rs",
            phrase: "SyncPolicy::Batch => Durability::Batched({})",
        },
    },
    Quote {
        phrase: "a Rust toolchain ({} or newer)",
        unit: 1,
        code: Code::Toml {
            file: "Cargo.toml",
            key: "rust-version",
        },
    },
    constant(
        "at most {} lines outside its `#[cfg(test)]` modules",
        "tests/it/module_graph.rs",
        "NON_TEST_LINES_MAX",
    ),
];

/// The documents whose numbers are checked.
fn documents(root: &Path) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = [
        "ARCHITECTURE.md",
        "RELIABILITY.md",
        "README.md",
        "BENCHMARKS.md",
    ]
    .iter()
    .map(|name| root.join(name))
    .collect();
    for folder in ["format-spec", "docs"] {
        let folder = root.join(folder);
        let mut pages: Vec<PathBuf> = std::fs::read_dir(&folder)
            .unwrap_or_else(|e| panic!("{}: {e}", folder.display()))
            .map(|entry| entry.unwrap().path())
            .filter(|path| path.extension().is_some_and(|e| e == "md"))
            .collect();
        pages.sort();
        paths.extend(pages);
    }
    paths
}

/// `text` with every run of whitespace as one space.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Every number `text` gives where it says `phrase`, with the text around it: the digits (and
/// the commas and points between them) where `{}` stands, followed by the rest of the phrase.
fn quoted_numbers(text: &str, phrase: &str) -> Vec<(String, String)> {
    let (before, after) = phrase
        .split_once("{}")
        .unwrap_or_else(|| panic!("phrase without {{}}: {phrase}"));
    assert!(!before.is_empty(), "a phrase starts with words: {phrase}");
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(at) = text[from..].find(before) {
        let start = from + at + before.len();
        from = start;
        let token_len = text[start..]
            .find(|c: char| !(c.is_ascii_digit() || c == ',' || c == '.'))
            .unwrap_or(text.len() - start);
        let token = text[start..start + token_len].trim_end_matches([',', '.']);
        if token.is_empty() || !text[start + token.len()..].starts_with(after) {
            continue;
        }
        let context_start = text[..start]
            .char_indices()
            .rev()
            .nth(40)
            .map_or(0, |(i, _)| i);
        let context_end = start + token.len() + after.len();
        found.push((
            token.replace(',', ""),
            text[context_start..context_end].to_owned(),
        ));
    }
    found
}

/// The value of `const name` in the source text: an integer expression of literals, `*`, `+`,
/// `-` and `<<`.
fn const_value(source: &str, name: &str) -> u64 {
    let declaration = format!("const {name}:");
    let at = source
        .find(&declaration)
        .unwrap_or_else(|| panic!("no `{declaration}`"));
    let rest = &source[at..];
    let expression = &rest[rest.find('=').unwrap() + 1..rest.find(';').unwrap()];
    evaluate(expression).unwrap_or_else(|| panic!("`{name}`: cannot evaluate `{expression}`"))
}

/// Evaluates `a << b`, `a * b`, `a + b`, `a - b` over integer literals, with Rust's precedence
/// (`*` before `+` and `-`, those before `<<`), left to right; `None` for anything else.
fn evaluate(expression: &str) -> Option<u64> {
    let tokens = tokens(expression)?;
    let mut value: Option<u64> = None;
    for operand in tokens.split(|token| token == "<<") {
        let operand = sum(operand)?;
        value = Some(match value {
            None => operand,
            Some(value) => value.checked_shl(u32::try_from(operand).ok()?)?,
        });
    }
    value
}

/// The literals and operators of `expression`: `1 << 16` is `["1", "<<", "16"]`.
fn tokens(expression: &str) -> Option<Vec<String>> {
    let mut tokens = Vec::new();
    let mut rest = expression.trim_start();
    while !rest.is_empty() {
        let len = if rest.starts_with("<<") {
            tokens.push("<<".to_owned());
            2
        } else if rest.starts_with(['*', '+', '-']) {
            tokens.push(rest[..1].to_owned());
            1
        } else if rest.starts_with(|c: char| c.is_ascii_digit()) {
            let len = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            let literal = &rest[..len];
            let digits_len = literal
                .find(|c: char| !(c.is_ascii_digit() || c == '_'))
                .unwrap_or(len);
            let suffix = &literal[digits_len..];
            if !["", "u8", "u16", "u32", "u64", "usize", "i32", "i64"].contains(&suffix) {
                return None;
            }
            tokens.push(literal[..digits_len].replace('_', ""));
            len
        } else {
            return None;
        };
        rest = rest[len..].trim_start();
    }
    Some(tokens)
}

/// The value of a sum of products of literals.
fn sum(tokens: &[String]) -> Option<u64> {
    let (mut total, mut sign, mut term) = (0i128, 1i128, 1i128);
    let mut expect_number = true;
    for token in tokens {
        match (expect_number, token.as_str()) {
            (true, number) => {
                term = term.checked_mul(number.parse().ok()?)?;
                expect_number = false;
            }
            (false, "*") => expect_number = true,
            (false, operator @ ("+" | "-")) => {
                total += sign * term;
                (sign, term) = (if operator == "-" { -1 } else { 1 }, 1);
                expect_number = true;
            }
            _ => return None,
        }
    }
    if expect_number {
        return None;
    }
    u64::try_from(total + sign * term).ok()
}

/// The value the code holds for `code`, as the document writes it (in `unit`s).
fn code_value(root: &Path, code: &Code, unit: u64) -> String {
    let read = |file: &str| {
        std::fs::read_to_string(root.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"))
    };
    let number = match code {
        Code::Value(value) => *value,
        Code::Const { file, name } => const_value(&read(file), name),
        Code::Literal { file, phrase } => {
            let found = quoted_numbers(&one_line(&read(file)), phrase);
            assert_eq!(found.len(), 1, "{file}: `{phrase}` is not said once");
            found[0].0.parse().unwrap()
        }
        Code::Toml { file, key } => {
            let text = read(file);
            let line = text
                .lines()
                .find(|line| line.split('=').next().is_some_and(|k| k.trim() == *key))
                .unwrap_or_else(|| panic!("{file}: no `{key}`"));
            return line.split('"').nth(1).unwrap().to_owned();
        }
    };
    assert_eq!(
        number % unit,
        0,
        "{number} is not a whole number of units of {unit}"
    );
    (number / unit).to_string()
}

/// Every mismatch of `quotes` in `documents` (name, text), and every quote no document says.
fn mismatches(root: &Path, quotes: &[Quote], documents: &[(String, String)]) -> Vec<String> {
    let mut failures = Vec::new();
    for quote in quotes {
        let expected = code_value(root, &quote.code, quote.unit);
        let mut said = 0;
        for (name, text) in documents {
            for (number, context) in quoted_numbers(text, quote.phrase) {
                said += 1;
                if number != expected {
                    failures.push(format!(
                        "{name}: \"...{context}\" quotes {number}, the code holds {expected}"
                    ));
                }
            }
        }
        if said == 0 {
            failures.push(format!(
                "no document says \"{}\" any more: update its row in tests/it/doc_numbers.rs",
                quote.phrase
            ));
        }
    }
    failures
}

/// Every number the documents quote is the code's.
#[test]
fn documents_quote_the_code() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let documents: Vec<(String, String)> = documents(&root)
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let name = path.strip_prefix(&root).unwrap().display().to_string();
            (name, one_line(&text))
        })
        .collect();
    let failures = mismatches(&root, QUOTES, &documents);
    assert!(
        failures.is_empty(),
        "documents that do not quote the code:\n{}",
        failures.join("\n")
    );
}

/// The check finds what it looks for: a wrong number, one written across a line break or with
/// a thousands separator, a phrase that no document says; and it reads constants as Rust does.
#[test]
fn the_check_sees_a_wrong_number() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let quotes = [
        value("runs of {} ids", 65_536),
        value("pages of up to {} records", 255),
        value("a phrase nobody says {}", 1),
    ];
    let document = one_line("ids come in runs of\n65,536 ids; pages of up to 256 records.");
    let failures = mismatches(&root, &quotes, &[("DOC.md".to_owned(), document)]);
    assert_eq!(failures.len(), 2, "{failures:#?}");
    assert!(
        failures[0].contains("quotes 256, the code holds 255"),
        "{}",
        failures[0]
    );
    assert!(failures[1].contains("no document says"), "{}", failures[1]);
    assert_eq!(evaluate(" 1 << 16"), Some(65_536));
    assert_eq!(evaluate("4096 - 16"), Some(4_080));
    assert_eq!(evaluate("64 * 1024 * 1024"), Some(64 * MIB));
    assert_eq!(evaluate("96 << 20"), Some(96 * MIB));
    assert_eq!(evaluate("1 + 2 * 3 << 1"), Some(14));
    assert_eq!(evaluate("32_768usize"), Some(32_768));
    assert_eq!(evaluate("u64::MAX"), None);
    assert_eq!(evaluate("0x80"), None);
}
