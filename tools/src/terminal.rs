//! Text from logs on a terminal: a transcript can hold escape sequences (a title change, a
//! screen clear, a cursor move) that a terminal would obey. Every line the CLI writes to a
//! terminal goes through [`escape_controls`]; output to a pipe or a file is left byte for
//! byte, so that `export` and `--json` stay exact. Every line the CLI writes to stderr goes
//! through [`eprint_line`], which escapes the same way when stderr is a terminal: an error or
//! a notice names files, ids and values read from logs.

use std::borrow::Cow;
use std::io::{IsTerminal, Write};

/// Writes `treelog: {line}` and a newline to stderr, its control characters escaped when stderr
/// is a terminal (best effort: stderr may be closed).
pub fn eprint_line(line: &str) {
    let stderr = std::io::stderr();
    let shown = if stderr.is_terminal() {
        escape_controls(line)
    } else {
        Cow::Borrowed(line)
    };
    let _ = writeln!(stderr.lock(), "treelog: {shown}");
}

/// `text` with every control character but newline and tab (C0, DEL and C1, ESC included)
/// written as `\uXXXX`, as JSON writes it: a JSON text stays valid and means the same (such
/// characters stand only inside its strings), and plain text shows what was there.
pub fn escape_controls(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_escaped) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if is_escaped(c) {
            out.push_str(&format!("\\u{:04x}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

fn is_escaped(c: char) -> bool {
    c.is_control() && c != '\n' && c != '\t'
}

#[cfg(test)]
mod tests {
    use super::*;

    /// ESC, CR, BEL, DEL and C1 controls are escaped; newline, tab and other text are not.
    #[test]
    fn controls_but_newline_and_tab_are_escaped() {
        assert_eq!(
            escape_controls("a\x1b]0;pwned\x07b\r\x7f\u{9b}2J\n\tü"),
            "a\\u001b]0;pwned\\u0007b\\u000d\\u007f\\u009b2J\n\tü"
        );
        assert!(matches!(escape_controls("plain"), Cow::Borrowed("plain")));
    }
}
