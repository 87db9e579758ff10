//! JavaScript's string rules that pi's code applies to text read from the log: what `trim()`
//! and `/\s/` take for white space, and `slice(0, n)` counted in UTF-16 code units. Pure.

/// Whether JavaScript's `String.prototype.trim` and `/\s/` take `c` for white space: its
/// WhiteSpace and LineTerminator code points (U+FEFF too; U+0085 not).
pub fn is_js_whitespace(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\u{b}' | '\u{c}' | '\r' | ' ' | '\u{a0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200a}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202f}'
                | '\u{205f}'
                | '\u{3000}'
                | '\u{feff}'
    )
}

/// JavaScript's `String.prototype.trim`: its white space and line terminators.
pub fn js_trim(text: &str) -> &str {
    text.trim_matches(is_js_whitespace)
}

/// `text.slice(0, units)` in JavaScript, where `units` counts UTF-16 code units: the longest
/// prefix of whole characters within `units`, and whether a character was cut in half (the
/// JavaScript string then ends in a lone high surrogate, which matches no text typed).
pub fn js_slice_units(text: &str, units: usize) -> (&str, bool) {
    let mut used = 0;
    for (at, c) in text.char_indices() {
        let width = c.len_utf16();
        if used + width > units {
            return (&text[..at], used < units);
        }
        used += width;
    }
    (text, false)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// trim takes U+FEFF and the line separators, as JavaScript's does, and keeps U+0085.
    #[test]
    fn trim_is_javascripts() {
        assert_eq!(js_trim("\u{feff} a\u{2028}"), "a");
        assert_eq!(js_trim("\u{85}a"), "\u{85}a");
    }

    /// A slice counts UTF-16 units: an astral character is two, and cutting it is reported.
    #[test]
    fn slice_counts_utf16_units() {
        assert_eq!(js_slice_units("ab😀c", 3), ("ab", true));
        assert_eq!(js_slice_units("ab😀c", 4), ("ab😀", false));
        assert_eq!(js_slice_units("abc", 200), ("abc", false));
    }
}
