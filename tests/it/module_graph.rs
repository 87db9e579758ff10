//! The layout rules of ARCHITECTURE.md ("Layout rules"), checked on the source itself: no two
//! files of a crate (`src/`, `tools/src/`, `tools/synth/src/`, `dev/src/`, `testkit/src/`,
//! `bindings/node/src/`)
//! import each other in a circle, directly or through others, no file holds more than
//! [`NON_TEST_LINES_MAX`] lines outside its `#[cfg(test)]` modules, and no comment cites an
//! issue or its items (comments state rules; the history of a choice lives in docs/decisions/).
//!
//! An import is any `crate::`, `super::` or `self::` path, or a path through a module the file
//! declares (`mod x;` then `x::...`), in a `use` or in the code, outside comments, string
//! literals and `#[cfg(test)]` modules (tests may reach into the helpers of another file; a
//! file declared `#[cfg(test)] mod x;` is test code too, and neither counted nor followed). A
//! path names the file of its longest module prefix: `crate::index::store::Store` is
//! `src/index/store.rs` (or `src/index/store/mod.rs`), `crate::index::Store` is
//! `src/index/mod.rs`, which re-exports it. A method defined in an `impl` block of another
//! file is not an import: only paths are.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The most lines of code (comments and blank lines included) a file may hold outside its
/// `#[cfg(test)]` modules.
const NON_TEST_LINES_MAX: usize = 800;

/// One source file of a crate.
struct SourceFile {
    /// As printed in failures, relative to the workspace: `src/index/store/mod.rs`.
    name: String,
    /// The module the file defines, from the crate root: `["index", "store"]`.
    module: Vec<String>,
    text: String,
}

/// What a stretch of source text that is not code holds.
#[derive(Clone, Copy, PartialEq, Eq)]
enum NotCode {
    Comment,
    /// The contents of a string or character literal.
    Literal,
}

/// The source text with comments and the contents of string and character literals replaced
/// by spaces (line breaks kept), so that only code is searched for paths and braces.
fn code_only(text: &str) -> String {
    keep_only(text, |_| true, false)
}

/// The comments of the source text, everything else replaced by spaces (line breaks kept).
fn comments_only(text: &str) -> String {
    keep_only(text, |kind| kind == NotCode::Comment, true)
}

/// `text` with the spans of [`not_code_spans`] that `chosen` picks blanked (`keep` false) or
/// kept alone (`keep` true); blanked bytes become spaces, line breaks stay.
fn keep_only(text: &str, chosen: impl Fn(NotCode) -> bool, keep: bool) -> String {
    let bytes = text.as_bytes();
    let blank = |byte: u8| if byte == b'\n' { b'\n' } else { b' ' };
    let mut out: Vec<u8> = if keep {
        bytes.iter().map(|&byte| blank(byte)).collect()
    } else {
        bytes.to_vec()
    };
    for (from, to, kind) in not_code_spans(bytes) {
        if chosen(kind) {
            for at in from..to {
                out[at] = if keep { bytes[at] } else { blank(bytes[at]) };
            }
        }
    }
    String::from_utf8(out).expect("only whole spans of ASCII-delimited text were replaced")
}

/// The comments and the contents of string and character literals, as byte ranges.
fn not_code_spans(bytes: &[u8]) -> Vec<(usize, usize, NotCode)> {
    let mut spans = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let rest = &bytes[at..];
        if rest.starts_with(b"//") {
            let end = rest
                .iter()
                .position(|&b| b == b'\n')
                .map_or(bytes.len(), |n| at + n);
            spans.push((at, end, NotCode::Comment));
            at = end;
        } else if rest.starts_with(b"/*") {
            // Block comments nest in Rust.
            let mut depth = 0;
            let mut end = at;
            while end < bytes.len() {
                if bytes[end..].starts_with(b"/*") {
                    depth += 1;
                    end += 2;
                } else if bytes[end..].starts_with(b"*/") {
                    depth -= 1;
                    end += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    end += 1;
                }
            }
            spans.push((at, end, NotCode::Comment));
            at = end;
        } else if let Some(hashes) = raw_string_start(rest) {
            // r"..", r#".."#, br#".."#: no escapes, ends at the quote and as many #s.
            let open = rest.iter().position(|&b| b == b'"').unwrap() + 1;
            let closing: Vec<u8> = std::iter::once(b'"')
                .chain(std::iter::repeat_n(b'#', hashes))
                .collect();
            let body = at + open;
            let end = bytes[body..]
                .windows(closing.len())
                .position(|w| w == closing.as_slice())
                .map_or(bytes.len(), |n| body + n + closing.len());
            let body_end = end.saturating_sub(closing.len()).max(body);
            spans.push((body, body_end, NotCode::Literal));
            at = end;
        } else if rest[0] == b'"' && !preceded_by_ident(bytes, at) || rest.starts_with(b"b\"") {
            let body = at + if rest[0] == b'"' { 1 } else { 2 };
            let mut end = body;
            while end < bytes.len() && bytes[end] != b'"' {
                end += if bytes[end] == b'\\' { 2 } else { 1 };
            }
            spans.push((body, end.min(bytes.len()), NotCode::Literal));
            at = end + 1;
        } else if rest[0] == b'\'' {
            // A character literal ('x', '\n', '\u{..}', '{') or a lifetime ('a).
            let end = if rest.get(1) == Some(&b'\\') {
                rest[2..]
                    .iter()
                    .position(|&b| b == b'\'')
                    .map(|n| at + 2 + n + 1)
            } else {
                let char_len = std::str::from_utf8(&rest[1..rest.len().min(5)])
                    .or_else(|e| std::str::from_utf8(&rest[1..1 + e.valid_up_to()]))
                    .ok()
                    .and_then(|s| s.chars().next())
                    .map_or(1, char::len_utf8);
                (rest.get(1 + char_len) == Some(&b'\'')).then_some(at + 2 + char_len)
            };
            match end {
                Some(end) => {
                    spans.push((at + 1, end - 1, NotCode::Literal));
                    at = end;
                }
                None => at += 1,
            }
        } else {
            at += 1;
        }
    }
    spans
}

/// The number of `#`s of a raw string literal starting here, if one does.
fn raw_string_start(rest: &[u8]) -> Option<usize> {
    let after_prefix = if rest.starts_with(b"br") {
        2
    } else if rest.starts_with(b"r") {
        1
    } else {
        return None;
    };
    let hashes = rest[after_prefix..]
        .iter()
        .take_while(|&&b| b == b'#')
        .count();
    (rest.get(after_prefix + hashes) == Some(&b'"')).then_some(hashes)
}

fn preceded_by_ident(bytes: &[u8], at: usize) -> bool {
    at > 0 && (bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'_')
}

fn is_ident_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_'
}

/// The byte ranges of the `#[cfg(test)] mod name { .. }` blocks of `code` (from the attribute
/// to the closing brace).
fn test_module_spans(code: &str) -> Vec<(usize, usize)> {
    let bytes = code.as_bytes();
    let mut spans = Vec::new();
    let mut from = 0;
    while let Some(found) = code[from..].find("#[cfg(test)]") {
        let start = from + found;
        let after = start + "#[cfg(test)]".len();
        let rest = code[after..].trim_start();
        // Other attributes may sit between the cfg and the module.
        let mut rest = rest;
        while rest.starts_with("#[") {
            rest = rest[rest.find(']').map_or(rest.len(), |n| n + 1)..].trim_start();
        }
        let rest_at = code.len() - rest.len();
        let is_module = rest.starts_with("mod ") || rest.starts_with("pub(crate) mod ");
        let open = rest.find(['{', ';']).map(|n| rest_at + n);
        match (is_module, open) {
            (true, Some(open)) if bytes[open] == b'{' => {
                let mut depth = 0usize;
                let mut end = open;
                for (offset, &byte) in bytes[open..].iter().enumerate() {
                    match byte {
                        b'{' => depth += 1,
                        b'}' => {
                            depth -= 1;
                            if depth == 0 {
                                end = open + offset + 1;
                                break;
                            }
                        }
                        _ => {}
                    }
                }
                spans.push((start, end));
                from = end;
            }
            _ => from = after,
        }
    }
    spans
}

/// Lines of `text` outside its test modules.
fn non_test_lines(text: &str) -> usize {
    let code = code_only(text);
    let test_lines: usize = test_module_spans(&code)
        .iter()
        .map(|&(start, end)| code[start..end].matches('\n').count() + 1)
        .sum();
    text.lines().count() - test_lines
}

/// Expands a `use` tree (`a::{b, c::{d, e as f}}`, `self`, globs) into its paths.
fn expand_use_tree(tree: &str) -> Vec<Vec<String>> {
    let mut paths = Vec::new();
    expand_into(tree, &mut Vec::new(), &mut paths);
    paths
}

fn expand_into(tree: &str, prefix: &mut Vec<String>, paths: &mut Vec<Vec<String>>) {
    let Some(brace) = tree.find('{') else {
        // `a::b as c`: the path is the first word.
        let path = tree.split_whitespace().next().unwrap_or("");
        let mut full = prefix.clone();
        full.extend(
            path.split("::")
                .map(str::trim)
                .filter(|s| !s.is_empty() && *s != "*" && *s != "self")
                .map(str::to_owned),
        );
        paths.push(full);
        return;
    };
    let head: Vec<String> = tree[..brace]
        .split("::")
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect();
    let inner = &tree[brace + 1..tree.rfind('}').unwrap_or(tree.len())];
    let depth_before = prefix.len();
    prefix.extend(head);
    let mut depth = 0;
    let mut item_start = 0;
    for (at, c) in inner
        .char_indices()
        .chain(std::iter::once((inner.len(), ',')))
    {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                let item = inner[item_start..at].trim();
                if !item.is_empty() {
                    expand_into(item, prefix, paths);
                }
                item_start = at + 1;
            }
            _ => {}
        }
    }
    prefix.truncate(depth_before);
}

/// The `mod name;` declarations of a file (its child modules).
fn declared_modules(code: &str) -> BTreeSet<String> {
    let mut modules = BTreeSet::new();
    for line in code.lines() {
        let line = line.trim();
        let line = line.strip_prefix("pub ").unwrap_or(line);
        let line = line.strip_prefix("pub(crate) ").unwrap_or(line);
        if let Some(name) = line.strip_prefix("mod ").and_then(|l| l.strip_suffix(';')) {
            modules.insert(name.trim().to_owned());
        }
    }
    modules
}

/// Every path of the non-test code of `file`, relative as written (`["super", "store", "Store"]`).
fn written_paths(file: &SourceFile) -> Vec<Vec<String>> {
    let mut code = code_only(&file.text);
    for (start, end) in test_module_spans(&code).into_iter().rev() {
        code.replace_range(start..end, "");
    }
    let children = declared_modules(&code);
    let mut paths = Vec::new();
    // `use` trees first, blanked out so that their prefixes are not read again below.
    let mut rest = code.clone();
    let mut search_from = 0;
    while let Some(found) = rest[search_from..].find("use ") {
        let at = search_from + found;
        if preceded_by_ident(rest.as_bytes(), at) {
            search_from = at + 4;
            continue;
        }
        let end = rest[at..].find(';').map_or(rest.len(), |n| at + n);
        paths.extend(expand_use_tree(&rest[at + 4..end]));
        rest.replace_range(at..end, &" ".repeat(end - at));
        search_from = end;
    }
    // Paths written in the code: `crate::a::b`, `super::x`, `child::f`.
    let bytes = rest.as_bytes();
    let mut at = 0;
    while at < bytes.len() {
        if !is_ident_byte(bytes[at]) || preceded_by_ident(bytes, at) || preceded_by_path(bytes, at)
        {
            at += 1;
            continue;
        }
        let mut segments = Vec::new();
        let mut end = at;
        loop {
            let word_end = end
                + bytes[end..]
                    .iter()
                    .take_while(|&&b| is_ident_byte(b))
                    .count();
            if word_end == end {
                break;
            }
            segments.push(rest[end..word_end].to_owned());
            end = word_end;
            if bytes[end..].starts_with(b"::") {
                end += 2;
            } else {
                break;
            }
        }
        let first = segments[0].as_str();
        if segments.len() > 1
            && (matches!(first, "crate" | "super" | "self") || children.contains(first))
        {
            paths.push(segments);
        }
        at = end.max(at + 1);
    }
    paths
        .into_iter()
        .filter(|path| {
            path.first().is_some_and(|first| {
                matches!(first.as_str(), "crate" | "super" | "self") || children.contains(first)
            })
        })
        .collect()
}

fn preceded_by_path(bytes: &[u8], at: usize) -> bool {
    at >= 2 && &bytes[at - 2..at] == b"::"
}

/// The source files of the crate whose root file is `root` (`src/lib.rs`, `tools/src/main.rs`).
fn crate_files(workspace: &Path, root: &str) -> Vec<SourceFile> {
    let src = workspace.join(Path::new(root).parent().unwrap());
    let mut files = Vec::new();
    for path in rust_paths_under(&src) {
        let relative = path.strip_prefix(&src).unwrap();
        let mut module: Vec<String> = relative
            .with_extension("")
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        if relative == Path::new(root).file_name().map(PathBuf::from).unwrap()
            || module.last().is_some_and(|m| m == "mod")
        {
            module.pop();
        }
        files.push(SourceFile {
            name: path.strip_prefix(workspace).unwrap().display().to_string(),
            module,
            text: std::fs::read_to_string(&path).unwrap(),
        });
    }
    files.sort_by(|a, b| a.name.cmp(&b.name));
    // A file declared `#[cfg(test)] mod x;` is test code, as a test module written inline.
    let test_only: BTreeSet<Vec<String>> = files
        .iter()
        .flat_map(|file| {
            test_module_declarations(&code_only(&file.text))
                .into_iter()
                .map(|name| file.module.iter().cloned().chain([name]).collect())
        })
        .collect();
    files.retain(|file| !test_only.contains(&file.module));
    files
}

/// The names of the modules `code` declares as files under `#[cfg(test)]` (`mod tests;`).
fn test_module_declarations(code: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut lines = code.lines().map(str::trim).peekable();
    while let Some(line) = lines.next() {
        if line != "#[cfg(test)]" {
            continue;
        }
        let Some(next) = lines.peek() else { break };
        let declaration = next.rsplit_once("mod ").map(|(_, rest)| rest);
        if let Some(name) = declaration.and_then(|rest| rest.strip_suffix(';')) {
            names.push(name.trim().to_owned());
        }
    }
    names
}

/// The file each file imports from, by index into `files`.
fn import_graph(files: &[SourceFile]) -> Vec<BTreeSet<usize>> {
    let by_module: BTreeMap<&[String], usize> = files
        .iter()
        .enumerate()
        .map(|(index, file)| (file.module.as_slice(), index))
        .collect();
    files
        .iter()
        .enumerate()
        .map(|(index, file)| {
            let mut imports = BTreeSet::new();
            for path in written_paths(file) {
                let mut absolute: Vec<String> = file.module.clone();
                let mut segments = path.as_slice();
                match segments[0].as_str() {
                    "crate" => {
                        absolute.clear();
                        segments = &segments[1..];
                    }
                    "self" => segments = &segments[1..],
                    "super" => {
                        while segments.first().is_some_and(|s| s == "super") {
                            absolute.pop();
                            segments = &segments[1..];
                        }
                    }
                    _ => {}
                }
                absolute.extend(segments.iter().cloned());
                let target = (0..=absolute.len())
                    .rev()
                    .find_map(|len| by_module.get(&absolute[..len]).copied());
                if let Some(target) = target
                    && target != index
                {
                    imports.insert(target);
                }
            }
            imports
        })
        .collect()
}

/// The import circles of the graph: each strongly connected set of more than one file, as one
/// cycle through some of its files (`a -> b -> a`).
fn circles(files: &[SourceFile], graph: &[BTreeSet<usize>]) -> Vec<String> {
    let mut found = Vec::new();
    let mut reported: BTreeSet<usize> = BTreeSet::new();
    for start in 0..files.len() {
        if reported.contains(&start) {
            continue;
        }
        // Breadth-first from `start` to find the shortest way back to it.
        let mut came_from: BTreeMap<usize, usize> = BTreeMap::new();
        let mut queue = std::collections::VecDeque::from([start]);
        let mut back = None;
        'search: while let Some(at) = queue.pop_front() {
            for &next in &graph[at] {
                if next == start {
                    back = Some(at);
                    break 'search;
                }
                if let std::collections::btree_map::Entry::Vacant(e) = came_from.entry(next) {
                    e.insert(at);
                    queue.push_back(next);
                }
            }
        }
        if let Some(mut at) = back {
            let mut cycle = vec![start];
            while at != start {
                cycle.push(at);
                at = came_from[&at];
            }
            cycle.reverse();
            cycle.rotate_right(1);
            reported.extend(cycle.iter().copied());
            let mut names: Vec<&str> = cycle.iter().map(|&i| files[i].name.as_str()).collect();
            names.push(&files[start].name);
            found.push(names.join(" -> "));
        }
    }
    found
}

/// The comments of `text` that cite an issue or its items (`issue 21`, `Item 3's`, `items 4
/// and 5`, `issue #7`), as (line number, the comment's line).
fn issue_citations(text: &str) -> Vec<(usize, String)> {
    let comments = comments_only(text);
    let mut found = Vec::new();
    for (index, line) in comments.lines().enumerate() {
        let lower = line.to_ascii_lowercase();
        let cites = ["issue", "issues", "item", "items"].iter().any(|word| {
            lower.match_indices(word).any(|(at, _)| {
                let rest = &lower[at + word.len()..];
                !preceded_by_ident(lower.as_bytes(), at)
                    && rest.strip_prefix(' ').is_some_and(|rest| {
                        rest.starts_with(|c: char| c.is_ascii_digit() || c == '#')
                    })
            })
        });
        if cites {
            found.push((index + 1, line.trim().to_owned()));
        }
    }
    found
}

/// Every `.rs` file under `dir`, test modules included, as (path relative to the workspace,
/// text).
fn rust_files_under(workspace: &Path, dir: &str) -> Vec<(String, String)> {
    let mut files: Vec<(String, String)> = rust_paths_under(&workspace.join(dir))
        .into_iter()
        .map(|path| {
            let name = path.strip_prefix(workspace).unwrap().display().to_string();
            (name, std::fs::read_to_string(&path).unwrap())
        })
        .collect();
    files.sort();
    files
}

/// The paths of every `.rs` file under `dir`, subdirectories included.
fn rust_paths_under(dir: &Path) -> Vec<PathBuf> {
    let mut paths = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let entries = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        for entry in entries {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                paths.push(path);
            }
        }
    }
    paths
}

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The library, the CLI, its generator, the developer tool, the test kit and the Node binding.
const CRATE_ROOTS: [&str; 6] = [
    "src/lib.rs",
    "tools/src/main.rs",
    "tools/synth/src/lib.rs",
    "dev/src/main.rs",
    "testkit/src/lib.rs",
    "bindings/node/src/lib.rs",
];

/// The source directories of `CRATE_ROOTS`.
const SOURCE_DIRS: [&str; 6] = [
    "src",
    "tools/src",
    "tools/synth/src",
    "dev/src",
    "testkit/src",
    "bindings/node/src",
];

/// No file of the library or the CLI imports, directly or through others, a file that imports
/// it back.
#[test]
fn no_import_circles() {
    let mut failures = Vec::new();
    for root in CRATE_ROOTS {
        let files = crate_files(&workspace(), root);
        assert!(files.len() > 3, "{root}: found only {} files", files.len());
        failures.extend(circles(&files, &import_graph(&files)));
    }
    assert!(
        failures.is_empty(),
        "import circles (ARCHITECTURE.md, Layout rules):\n{}",
        failures.join("\n")
    );
}

/// No file of the library or the CLI holds more than 800 lines outside its test modules.
#[test]
fn no_file_over_the_line_limit() {
    let mut failures = Vec::new();
    for root in CRATE_ROOTS {
        for file in crate_files(&workspace(), root) {
            let lines = non_test_lines(&file.text);
            if lines > NON_TEST_LINES_MAX {
                failures.push(format!("{}: {lines} non-test lines", file.name));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "files over {NON_TEST_LINES_MAX} non-test lines (ARCHITECTURE.md, Layout rules):\n{}",
        failures.join("\n")
    );
}

/// No comment of the library or the CLI (test modules included) cites an issue or its items:
/// a comment states the rule, and why it is so goes to docs/decisions/ when it needs more than
/// the comment says.
#[test]
fn no_issue_citations_in_comments() {
    let mut failures = Vec::new();
    for dir in SOURCE_DIRS {
        for (name, text) in rust_files_under(&workspace(), dir) {
            for (line, comment) in issue_citations(&text) {
                failures.push(format!("{name}:{line}: {comment}"));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "comments that cite an issue (ARCHITECTURE.md, Layout rules):\n{}",
        failures.join("\n")
    );
}

/// The places of `use super::*;` in `text` outside its test modules: a file says what it
/// takes from its parent, so that the parent imports nothing for it and its dependencies show.
fn glob_imports_of_parent(text: &str) -> Vec<usize> {
    let code = code_only(text);
    let tests = test_module_spans(&code);
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(at) = code[from..].find("use super::*") {
        let at = from + at;
        if !tests.iter().any(|&(start, end)| (start..end).contains(&at)) {
            found.push(code[..at].matches('\n').count() + 1);
        }
        from = at + 1;
    }
    found
}

/// No file of the library or the CLI imports its parent with `use super::*` outside tests.
#[test]
fn no_glob_imports_of_a_parent() {
    let mut failures = Vec::new();
    for dir in SOURCE_DIRS {
        for (name, text) in rust_files_under(&workspace(), dir) {
            // A file declared `#[cfg(test)] mod tests;` is a test module of its own.
            if name.ends_with("/tests.rs") {
                continue;
            }
            for line in glob_imports_of_parent(&text) {
                failures.push(format!("{name}:{line}"));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "`use super::*` outside tests (ARCHITECTURE.md, Layout rules):\n{}",
        failures.join("\n")
    );
    // The check sees a glob import, and not one inside a test module.
    assert_eq!(glob_imports_of_parent("use super::*;\n"), vec![1]);
    assert!(glob_imports_of_parent("#[cfg(test)]\nmod tests {\n    use super::*;\n}\n").is_empty());
}

/// The library's public face is `src/lib.rs`'s list: these modules and these re-exports,
/// nothing else public at the root. A change to it is a change of the API, made here too.
#[test]
fn the_public_items_are_the_listed_ones() {
    const PUBLIC_MODULES: &[&str] = &[
        "agents",
        "audit",
        "directory",
        "format",
        "fs_safe",
        "limits",
        "listing",
        "object_store",
        "openclaw",
        "path_component",
        "quiet_panics",
        "repair",
        "search",
        "secrets",
        "stats",
        "storage",
        "verify",
    ];
    let text = std::fs::read_to_string(workspace().join("src/lib.rs")).unwrap();
    let code = code_only(&text);
    let modules: Vec<&str> = code
        .lines()
        .filter_map(|line| line.trim().strip_prefix("pub mod "))
        .map(|rest| rest.trim_end_matches(';'))
        .collect();
    assert_eq!(modules, PUBLIC_MODULES, "the public modules of src/lib.rs");
    // `format` holds the codecs: hidden from the documentation.
    assert!(
        text.contains("#[doc(hidden)]\npub mod format;"),
        "format is #[doc(hidden)]"
    );
    let uses = code.matches("pub use ").count();
    assert_eq!(uses, 9, "the `pub use` lines of src/lib.rs");
}

/// The checks above find what they look for: a circle written in two files, paths in `use`
/// trees and in code, comments and strings ignored, test modules not counted, an issue cited
/// in a comment but not in code or a string.
#[test]
fn the_checks_see_circles_and_test_modules() {
    let file = |name: &str, module: &[&str], text: &str| SourceFile {
        name: name.to_owned(),
        module: module.iter().map(|s| s.to_string()).collect(),
        text: text.to_owned(),
    };
    let files = [
        file("src/lib.rs", &[], "mod a;\nmod b;\nmod c;\n"),
        file(
            "src/a.rs",
            &["a"],
            "use crate::{b::{One, Two as Three}, x};\n// crate::c::f\nfn f() { let s = \"crate::c\"; }\n",
        ),
        file(
            "src/b.rs",
            &["b"],
            "fn g() { crate::c::h(); }\n#[cfg(test)]\nmod tests {\n    use crate::a::f;\n}\n",
        ),
        file(
            "src/c.rs",
            &["c"],
            "fn h() { let c = '{'; super::a::f() }\n",
        ),
    ];
    let graph = import_graph(&files);
    assert_eq!(
        graph[1],
        BTreeSet::from([0, 2]),
        "a imports b (and x from the root)"
    );
    assert_eq!(
        graph[2],
        BTreeSet::from([3]),
        "b imports c; its tests' import of a is not one"
    );
    assert_eq!(graph[3], BTreeSet::from([1]), "c imports a");
    assert_eq!(
        circles(&files, &graph),
        ["src/a.rs -> src/b.rs -> src/c.rs -> src/a.rs"]
    );
    assert_eq!(non_test_lines(&files[2].text), 1);
    assert_eq!(non_test_lines(&files[3].text), 1);
    let cited = concat!(
        "//! Search (issue 21).\n",
        "fn f() {\n",
        "    // Item 3's rule.\n",
        "    let s = \"issue 4\";\n",
        "    /* items 1 and 2 */\n",
        "    let issue_5 = 0; // an issue, 6 items\n",
        "}\n",
    );
    let lines: Vec<usize> = issue_citations(cited)
        .iter()
        .map(|(line, _)| *line)
        .collect();
    assert_eq!(lines, [1, 3, 5]);
}
