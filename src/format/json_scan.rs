//! One pass over a JSON text that validates it and finds the top-level fields of an object.
//!
//! Pure code: no I/O, no `unsafe`, no allocation unless values nest more than 64 levels deep,
//! no recursion, and no panic on any input. It exists because reading a line is the per-line
//! cost of indexing, and serde_json, skipping the payloads, runs at a fraction of memory speed.
//!
//! **Validity is exactly serde_json's**, as `serde_json::from_str::<serde::de::IgnoredAny>`
//! decides it (serde_json 1.0.154, `Deserializer::ignore_value`), which is RFC 8259 with:
//! - whitespace: space, tab, LF and CR only, before and after any token and around the value;
//! - strings: no byte below 0x20; escapes are `\" \\ \/ \b \f \n \r \t` and `\u` with four hex
//!   digits of either case. Surrogates are **not** paired: `"\ud800"` is valid, as a value
//!   and as a key (as in `JSON.parse`; serde_json reads such a key as bytes, in WTF-8). A key
//!   with an unpaired surrogate escape equals none of the wanted names, which are ASCII;
//! - numbers: `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`, of any magnitude;
//! - literals `true`, `false`, `null`; no trailing commas; any depth.
//!
//! The time goes into strings, searched for `"`, `\` and bytes below 0x20 many bytes at once
//! with 16-byte vectors (`wide`: safe SSE2 on x86_64, plain code elsewhere). A short string is
//! found whole in one vector. A longer one is read 64 bytes a step into bit masks, and its
//! escapes resolved with bit arithmetic, so that the cost does not grow with the number of
//! escapes: a transcript's text has a `\n` every few dozen bytes. The last bytes of a text,
//! fewer than a vector, are read eight at a time (SWAR: one `u64` searched at once).

/// The text is not JSON as serde_json reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Invalid;

/// What a scan of a valid JSON text found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Scan<'a, const N: usize> {
    /// The value is an object (after optional whitespace). Otherwise `fields` are all `None`.
    pub is_object: bool,
    /// For each wanted name, the raw text of the value of the last top-level key equal to it
    /// after unescaping (`"typ\u0065"` is `type`): the last one wins, as in `JSON.parse`.
    pub fields: [Option<&'a str>; N],
}

/// Whether `text` is one JSON value, with optional whitespace around it, as serde_json reads it.
pub fn is_valid(text: &str) -> bool {
    scan(text, &[]).is_ok()
}

/// Validates `text` as one JSON value with optional whitespace around it and, when it is an
/// object, returns the raw values of its top-level keys named in `names`. A name longer than
/// [`NAME_LEN_MAX`] bytes never matches a key that has escapes.
pub fn scan<'a, const N: usize>(text: &'a str, names: &[&str; N]) -> Result<Scan<'a, N>, Invalid> {
    debug_assert!(names.iter().all(|name| name.len() <= NAME_LEN_MAX));
    let bytes = text.as_bytes();
    let mut found = Scan {
        is_object: false,
        fields: [None; N],
    };
    let mut at = skip_whitespace(bytes, 0);
    if bytes.get(at) == Some(&b'{') {
        found.is_object = true;
        at = scan_members(text, at + 1, names, &mut found)?;
    } else {
        at = skip_value(bytes, at)?;
    }
    if skip_whitespace(bytes, at) != bytes.len() {
        return Err(Invalid);
    }
    Ok(found)
}

/// Names longer than this never match an escaped key (see [`scan`]); unescaped keys are
/// compared directly, whatever their length.
pub const NAME_LEN_MAX: usize = 32;

/// Reads the members of the top-level object from `at` (just after its `{`) to just after its
/// `}`, recording the wanted fields.
fn scan_members<'a, const N: usize>(
    text: &'a str,
    mut at: usize,
    names: &[&str; N],
    found: &mut Scan<'a, N>,
) -> Result<usize, Invalid> {
    let bytes = text.as_bytes();
    at = skip_whitespace(bytes, at);
    if bytes.get(at) == Some(&b'}') {
        return Ok(at + 1);
    }
    loop {
        // Invariant: `at` is at the first byte of a member, after whitespace.
        if bytes.get(at) != Some(&b'"') {
            return Err(Invalid);
        }
        let key_end = skip_string(bytes, at + 1)?;
        let key = bytes.get(at + 1..key_end - 1).ok_or(Invalid)?;
        at = skip_whitespace(bytes, key_end);
        if bytes.get(at) != Some(&b':') {
            return Err(Invalid);
        }
        let value_start = skip_whitespace(bytes, at + 1);
        at = skip_value(bytes, value_start)?;
        if let Some(slot) = wanted_slot(key, names) {
            found.fields[slot] = Some(text.get(value_start..at).ok_or(Invalid)?);
        }
        at = skip_whitespace(bytes, at);
        match bytes.get(at) {
            Some(b',') => at = skip_whitespace(bytes, at + 1),
            Some(b'}') => return Ok(at + 1),
            _ => return Err(Invalid),
        }
    }
}

/// The index in `names` of the key whose raw text (between its quotes, escapes well formed)
/// is `key`, if any. A key with an unpaired surrogate escape is none of them.
fn wanted_slot(key: &[u8], names: &[&str]) -> Option<usize> {
    if !key.contains(&b'\\') {
        return names.iter().position(|name| name.as_bytes() == key);
    }
    let mut decoded = [0u8; NAME_LEN_MAX];
    let len = decode_key(key, &mut decoded)?;
    let decoded = decoded.get(..len)?;
    names.iter().position(|name| name.as_bytes() == decoded)
}

/// Decodes an escaped key into `out`. Returns the decoded length in bytes (when longer than
/// `out`, `out` holds only a prefix), or `None` for an unpaired surrogate escape (a high
/// surrogate not followed at once by `\u` and a low one, or a low one not after a high one):
/// such a key is not UTF-8, so it is no wanted name.
fn decode_key(raw: &[u8], out: &mut [u8; NAME_LEN_MAX]) -> Option<usize> {
    let mut len = 0;
    let mut push = |bytes: &[u8]| {
        for &byte in bytes {
            if let Some(slot) = out.get_mut(len) {
                *slot = byte;
            }
            len += 1;
        }
    };
    let mut at = 0;
    while let Some(&byte) = raw.get(at) {
        if byte != b'\\' {
            push(&[byte]);
            at += 1;
            continue;
        }
        let escape = *raw.get(at + 1)?;
        at += 2;
        let unit = match escape {
            b'u' => {
                let unit = hex4(raw.get(at..at + 4)?)?;
                at += 4;
                unit
            }
            b'b' => 0x08,
            b'f' => 0x0c,
            b'n' => u32::from(b'\n'),
            b'r' => u32::from(b'\r'),
            b't' => u32::from(b'\t'),
            other => u32::from(other), // `"`, `\` or `/`
        };
        let scalar = match unit {
            0xD800..=0xDBFF => {
                if raw.get(at..at + 2) != Some(&b"\\u"[..]) {
                    return None;
                }
                let low = hex4(raw.get(at + 2..at + 6)?)?;
                if !(0xDC00..=0xDFFF).contains(&low) {
                    return None;
                }
                at += 6;
                0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)
            }
            0xDC00..=0xDFFF => return None,
            _ => unit,
        };
        push(char::from_u32(scalar)?.encode_utf8(&mut [0; 4]).as_bytes());
    }
    Some(len)
}

/// The value of four hex digits.
fn hex4(digits: &[u8]) -> Option<u32> {
    digits.iter().try_fold(0, |value, &digit| {
        Some(value << 4 | char::from(digit).to_digit(16)?)
    })
}

/// JSON's whitespace: space, tab, LF and CR (RFC 8259), for `str::trim_matches` and kin.
pub const WHITESPACE: [char; 4] = [' ', '\t', '\n', '\r'];

/// The index of the first byte at or after `at` that is not JSON whitespace.
#[inline(always)]
pub(crate) fn skip_whitespace(bytes: &[u8], mut at: usize) -> usize {
    // Lines are mostly compact: one comparison decides the common case.
    while let Some(&byte) = bytes.get(at) {
        if byte > b' ' || !matches!(byte, b' ' | b'\t' | b'\n' | b'\r') {
            break;
        }
        at += 1;
    }
    at
}

/// The kinds of the containers open around the current point of [`skip_value`], innermost
/// last, one bit each (set: object). The first 64 levels live in a word, deeper ones on the
/// heap, so that any depth works and ordinary payloads never allocate.
#[derive(Default)]
struct Nesting {
    depth: usize,
    low: u64,
    high: Vec<u64>,
    /// The kind of the innermost open container (the bit at `depth - 1`), kept at hand:
    /// it is asked after every value.
    innermost_is_object: Option<bool>,
}

impl Nesting {
    fn push(&mut self, object: bool) {
        let (word, bit) = (self.depth / 64, self.depth % 64);
        let slot = match word.checked_sub(1) {
            None => &mut self.low,
            Some(index) => {
                if self.high.len() <= index {
                    self.high.resize(index + 1, 0);
                }
                &mut self.high[index]
            }
        };
        *slot = (*slot & !(1 << bit)) | (u64::from(object) << bit);
        self.depth += 1;
        self.innermost_is_object = Some(object);
    }

    fn pop(&mut self) {
        self.depth = self.depth.saturating_sub(1);
        self.innermost_is_object = self.depth.checked_sub(1).and_then(|top| {
            let word = match (top / 64).checked_sub(1) {
                None => self.low,
                Some(index) => *self.high.get(index)?,
            };
            Some(word >> (top % 64) & 1 == 1)
        });
    }
}

/// The raw items of `text`, one JSON array with optional whitespace around it, in order;
/// `Invalid` when it is not one (validity as in [`scan`]).
pub fn array_items(text: &str) -> Result<Vec<&str>, Invalid> {
    let bytes = text.as_bytes();
    let mut at = skip_whitespace(bytes, 0);
    if bytes.get(at) != Some(&b'[') {
        return Err(Invalid);
    }
    at = skip_whitespace(bytes, at + 1);
    let mut items = Vec::new();
    if bytes.get(at) == Some(&b']') {
        at += 1;
    } else {
        loop {
            let end = skip_value(bytes, at)?;
            items.push(&text[at..end]);
            at = skip_whitespace(bytes, end);
            match bytes.get(at) {
                Some(b',') => at = skip_whitespace(bytes, at + 1),
                Some(b']') => {
                    at += 1;
                    break;
                }
                _ => return Err(Invalid),
            }
        }
    }
    if skip_whitespace(bytes, at) != bytes.len() {
        return Err(Invalid);
    }
    Ok(items)
}

/// The raw members of `text`, one JSON object with optional whitespace around it, in order:
/// each key as written (quotes included) and its raw value, repeated keys kept (the caller
/// decides which counts); `Invalid` when it is not one (validity as in [`scan`]).
pub fn object_members(text: &str) -> Result<Vec<(&str, &str)>, Invalid> {
    let bytes = text.as_bytes();
    let mut at = skip_whitespace(bytes, 0);
    if bytes.get(at) != Some(&b'{') {
        return Err(Invalid);
    }
    at = skip_whitespace(bytes, at + 1);
    let mut members = Vec::new();
    if bytes.get(at) == Some(&b'}') {
        at += 1;
    } else {
        loop {
            if bytes.get(at) != Some(&b'"') {
                return Err(Invalid);
            }
            let key_end = skip_string(bytes, at + 1)?;
            let key = text.get(at..key_end).ok_or(Invalid)?;
            at = skip_whitespace(bytes, key_end);
            if bytes.get(at) != Some(&b':') {
                return Err(Invalid);
            }
            let value_start = skip_whitespace(bytes, at + 1);
            at = skip_value(bytes, value_start)?;
            members.push((key, text.get(value_start..at).ok_or(Invalid)?));
            at = skip_whitespace(bytes, at);
            match bytes.get(at) {
                Some(b',') => at = skip_whitespace(bytes, at + 1),
                Some(b'}') => {
                    at += 1;
                    break;
                }
                _ => return Err(Invalid),
            }
        }
    }
    if skip_whitespace(bytes, at) != bytes.len() {
        return Err(Invalid);
    }
    Ok(members)
}

/// The index just after the value that starts at `at` (no whitespace before it).
fn skip_value(bytes: &[u8], mut at: usize) -> Result<usize, Invalid> {
    let mut nesting = Nesting::default();
    loop {
        // Invariant: a value starts at `at`.
        match *bytes.get(at).ok_or(Invalid)? {
            b'"' => at = skip_string(bytes, at + 1)?,
            b'-' | b'0'..=b'9' => at = skip_number(bytes, at)?,
            b't' => at = skip_literal(bytes, at, b"true")?,
            b'f' => at = skip_literal(bytes, at, b"false")?,
            b'n' => at = skip_literal(bytes, at, b"null")?,
            open @ (b'{' | b'[') => {
                let object = open == b'{';
                at = skip_whitespace(bytes, at + 1);
                if bytes.get(at) == Some(if object { &b'}' } else { &b']' }) {
                    at += 1;
                } else {
                    nesting.push(object);
                    at = if object { skip_key(bytes, at)? } else { at };
                    continue;
                }
            }
            _ => return Err(Invalid),
        }
        // A value ended at `at`: close the containers it ends, until a comma starts the next.
        loop {
            let Some(object) = nesting.innermost_is_object else {
                return Ok(at);
            };
            at = skip_whitespace(bytes, at);
            match (bytes.get(at), object) {
                (Some(b','), false) => {
                    at = skip_whitespace(bytes, at + 1);
                    break;
                }
                (Some(b','), true) => {
                    at = skip_key(bytes, skip_whitespace(bytes, at + 1))?;
                    break;
                }
                (Some(b']'), false) | (Some(b'}'), true) => {
                    at += 1;
                    nesting.pop();
                }
                _ => return Err(Invalid),
            }
        }
    }
}

/// From the `"` of a key at `at` to the start of its value (after the `:` and whitespace).
#[inline(always)]
fn skip_key(bytes: &[u8], at: usize) -> Result<usize, Invalid> {
    if bytes.get(at) != Some(&b'"') {
        return Err(Invalid);
    }
    let at = skip_whitespace(bytes, skip_string(bytes, at + 1)?);
    if bytes.get(at) != Some(&b':') {
        return Err(Invalid);
    }
    Ok(skip_whitespace(bytes, at + 1))
}

const ONES: u64 = u64::MAX / 255; // 0x0101..01
const HIGHS: u64 = ONES << 7; // 0x8080..80

/// The high bit of each byte of `word` that is `"`, `\` or below 0x20. Bytes above the first
/// such byte may be marked falsely (a borrow propagates upwards), the first never is.
fn special_bytes(word: u64) -> u64 {
    let below_space = word.wrapping_sub(ONES * 0x20) & !word;
    let quote = word ^ (ONES * u64::from(b'"'));
    let quote = quote.wrapping_sub(ONES) & !quote;
    let backslash = word ^ (ONES * u64::from(b'\\'));
    let backslash = backslash.wrapping_sub(ONES) & !backslash;
    (below_space | quote | backslash) & HIGHS
}

/// The index just after the closing quote of the string whose content starts at `at`.
#[inline(always)]
fn skip_string(bytes: &[u8], at: usize) -> Result<usize, Invalid> {
    // Most strings are keys and short values that end within 16 bytes: no call for them.
    if let Some(chunk) = bytes.get(at..).and_then(|rest| rest.first_chunk::<16>()) {
        use wide::u8x16;
        let chunk = u8x16::new(*chunk);
        let below_space = u8x16::splat(0x1f);
        let special = chunk.cmp_eq(u8x16::splat(b'"'))
            | chunk.cmp_eq(u8x16::splat(b'\\'))
            | chunk.max(below_space).cmp_eq(below_space);
        let special = special.move_mask() as u32;
        let end = at + special.trailing_zeros() as usize;
        if special != 0 && bytes.get(end) == Some(&b'"') {
            return Ok(end + 1);
        }
    }
    skip_long_string(bytes, at)
}

/// [`skip_string`] for strings that do not end within their first 16 bytes: 64 bytes a step
/// while 64 remain, then word by word.
///
/// A block is read whole, its escapes resolved with bit arithmetic (no branch per escape), so
/// that the next read never waits on the previous one: an escape every few dozen bytes, as in
/// transcripts, costs nothing more.
#[inline(never)]
fn skip_long_string(bytes: &[u8], mut at: usize) -> Result<usize, Invalid> {
    // Invariant: `at` is inside the string; the byte at `at` is the letter of an escape iff
    // `letter_first`.
    let mut letter_first = false;
    while let Some(block) = bytes.get(at..).and_then(|rest| rest.first_chunk::<64>()) {
        let masks = BlockMasks::of(block);
        let letters = masks.escape_letters(&mut letter_first);
        let end = masks.quote & !letters;
        // The bytes of the string in this block: up to its closing quote, if here.
        let inside = if end == 0 {
            u64::MAX
        } else {
            (end & end.wrapping_neg()) - 1
        };
        if masks.control & inside != 0 {
            return Err(Invalid);
        }
        let rare_letters = letters & inside & !masks.common_letter;
        if rare_letters != 0 {
            check_escapes(bytes, at, rare_letters)?;
        }
        if end != 0 {
            return Ok(at + end.trailing_zeros() as usize + 1);
        }
        at += 64;
    }
    if letter_first {
        at = skip_escape(bytes, at)?;
    }
    loop {
        // Invariant: `at` is inside the string, after any escape.
        at += special_offset(bytes.get(at..).ok_or(Invalid)?).ok_or(Invalid)?;
        match bytes.get(at) {
            Some(b'"') => return Ok(at + 1),
            Some(b'\\') => at = skip_escape(bytes, at + 1)?,
            _ => return Err(Invalid), // a control character
        }
    }
}

/// One bit per byte of a 64-byte block (bit `i` for byte `i`).
struct BlockMasks {
    quote: u64,
    backslash: u64,
    /// Bytes below 0x20.
    control: u64,
    /// The letters of the common escapes: `"`, `\`, `n` and `t`. Other letters are checked
    /// one by one.
    common_letter: u64,
}

impl BlockMasks {
    fn of(block: &[u8; 64]) -> BlockMasks {
        use wide::u8x16;
        let (quote, backslash) = (u8x16::splat(b'"'), u8x16::splat(b'\\'));
        let (n, t, below_space) = (u8x16::splat(b'n'), u8x16::splat(b't'), u8x16::splat(0x1f));
        let mut masks = BlockMasks {
            quote: 0,
            backslash: 0,
            control: 0,
            common_letter: 0,
        };
        let bits = |lanes: u8x16, index: usize| u64::from(lanes.move_mask() as u16) << (16 * index);
        for (index, chunk) in block.as_chunks::<16>().0.iter().enumerate() {
            let chunk = u8x16::new(*chunk);
            let is_quote = chunk.cmp_eq(quote);
            let is_backslash = chunk.cmp_eq(backslash);
            masks.quote |= bits(is_quote, index);
            masks.backslash |= bits(is_backslash, index);
            masks.control |= bits(chunk.max(below_space).cmp_eq(below_space), index);
            let common = is_quote | is_backslash | chunk.cmp_eq(n) | chunk.cmp_eq(t);
            masks.common_letter |= bits(common, index);
        }
        masks
    }

    /// The bytes that are the letter of an escape: those after an odd run of backslashes.
    /// `letter_first` says whether the first byte is one (the previous block ended the run)
    /// and becomes whether the first byte of the next block is. This is simdjson's escape
    /// scanner: subtracting the run starts carries through each run of backslashes.
    fn escape_letters(&self, letter_first: &mut bool) -> u64 {
        const ODD_BITS: u64 = 0xAAAA_AAAA_AAAA_AAAA;
        let carried = u64::from(*letter_first);
        let potential = self.backslash & !carried;
        let code = ((potential << 1 | ODD_BITS).wrapping_sub(potential)) ^ ODD_BITS;
        let escapes = code & self.backslash;
        *letter_first = escapes >> 63 == 1;
        code ^ (self.backslash | carried)
    }
}

/// Checks the escapes whose letters are at the bits of `letters`, in the block at `at`.
#[cold]
fn check_escapes(bytes: &[u8], at: usize, mut letters: u64) -> Result<(), Invalid> {
    while letters != 0 {
        skip_escape(bytes, at + letters.trailing_zeros() as usize)?;
        letters &= letters - 1;
    }
    Ok(())
}

/// The index just after the escape whose letter is at `at` (just after its `\`).
#[inline(always)]
fn skip_escape(bytes: &[u8], at: usize) -> Result<usize, Invalid> {
    match bytes.get(at) {
        Some(&letter) if SIMPLE_ESCAPES[usize::from(letter)] => Ok(at + 1),
        Some(b'u') => match bytes.get(at + 1..at + 5) {
            Some(digits) if digits.iter().all(u8::is_ascii_hexdigit) => Ok(at + 5),
            _ => Err(Invalid),
        },
        _ => Err(Invalid),
    }
}

/// The letters of the escapes that take no digits: `\" \\ \/ \b \f \n \r \t`.
const SIMPLE_ESCAPES: [bool; 256] = {
    let mut table = [false; 256];
    let letters = b"\"\\/bfnrt";
    let mut index = 0;
    while index < letters.len() {
        table[letters[index] as usize] = true;
        index += 1;
    }
    table
};

/// The offset of the first `"`, `\` or byte below 0x20 in `text`.
#[inline(always)]
fn special_offset(text: &[u8]) -> Option<usize> {
    let (words, tail) = text.as_chunks::<8>();
    for (index, word) in words.iter().enumerate() {
        let special = special_bytes(u64::from_le_bytes(*word));
        if special != 0 {
            return Some(index * 8 + special.trailing_zeros() as usize / 8);
        }
    }
    let in_tail = tail
        .iter()
        .position(|&byte| byte == b'"' || byte == b'\\' || byte < 0x20)?;
    Some(words.len() * 8 + in_tail)
}

fn skip_number(bytes: &[u8], mut at: usize) -> Result<usize, Invalid> {
    let digits_from = |at: usize| {
        at + bytes.get(at..).map_or(0, |rest| {
            rest.iter().take_while(|b| b.is_ascii_digit()).count()
        })
    };
    if bytes.get(at) == Some(&b'-') {
        at += 1;
    }
    match bytes.get(at) {
        // A digit after a leading zero (`01`) is left for the caller, which refuses it as it
        // refuses any byte that cannot follow a value.
        Some(b'0') => at += 1,
        Some(b'1'..=b'9') => at = digits_from(at + 1),
        _ => return Err(Invalid),
    }
    if bytes.get(at) == Some(&b'.') {
        let end = digits_from(at + 1);
        if end == at + 1 {
            return Err(Invalid);
        }
        at = end;
    }
    if let Some(b'e' | b'E') = bytes.get(at) {
        at += 1;
        if let Some(b'+' | b'-') = bytes.get(at) {
            at += 1;
        }
        let end = digits_from(at);
        if end == at {
            return Err(Invalid);
        }
        at = end;
    }
    Ok(at)
}

fn skip_literal(bytes: &[u8], at: usize, literal: &[u8]) -> Result<usize, Invalid> {
    match bytes.get(at..at + literal.len()) {
        Some(found) if found == literal => Ok(at + literal.len()),
        _ => Err(Invalid),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn serde_valid(text: &str) -> bool {
        serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok()
    }

    /// Each text gets serde_json's verdict.
    fn check(texts: &[&str]) {
        for text in texts {
            assert_eq!(is_valid(text), serde_valid(text), "{text:?}");
        }
    }

    /// Grammar edge cases, valid and invalid, against serde_json.
    #[test]
    fn validity_matches_serde() {
        check(&[
            "",
            " ",
            "{}",
            " {} ",
            "[]",
            "[ ]",
            "{ }",
            "[1,]",
            "{,}",
            "{\"a\":1,}",
            "[,1]",
            "{\"a\" 1}",
            "{\"a\":}",
            "{1:2}",
            "{\"a\":1 \"b\":2}",
            "[1 2]",
            "[[]",
            "[]]",
            "{}}",
            "{]",
            "[}",
            "\"x\"",
            "\"x",
            "x",
            "1",
            "-",
            "-0",
            "01",
            "-01",
            "0.",
            ".5",
            "1.5",
            "1.5e",
            "1e5",
            "1E+5",
            "1e-5",
            "1e+",
            "+1",
            "0x1",
            "1.e2",
            "00",
            "1 2",
            "123456789012345678901234567890e999999",
            "-1.0E-0",
            "true",
            "tru",
            "truex",
            "false",
            "null",
            "nul",
            "nulll",
            "True",
            "NaN",
            "Infinity",
            "\u{a0}1",
            "\u{c}1",
            "1\r\n\t ",
            "[\"\\u00e9\", \"\\uD83D\\uDE80\"]",
            "\"\\ud800\"",
            "\"\\udc00\"",
            "\"\\u12\"",
            "\"\\u12G4\"",
            "\"\\x\"",
            "\"\\\"",
            "\"\\\"\"",
            "\"a\u{1}b\"",
            "\"a\u{7f}b\"",
            "\"tab\there\"",
            "\"\u{1F680}\"",
            "{\"\\ud800\":1}",
            "{\"a\":{\"b\":[1,{\"c\":null}]}}",
            "[\"\\/\\b\\f\\n\\r\\t\"]",
        ]);
    }

    /// Strings of every length around the eight-byte words and the 64-byte blocks, with a
    /// special byte or a run of backslashes at every place (runs straddle block boundaries).
    #[test]
    fn strings_of_every_length() {
        let specials = [
            "\"",
            "\\n",
            "\\u0041",
            "\\u00\"1",
            "\u{1}",
            "\\",
            "\\q",
            "é",
            "\\\\",
            "\\\"",
            "\\\\\"",
            "\\\\\\",
            "\\/\\r\\b\\f",
        ];
        let lengths = (0..20).chain(52..76).chain(116..140);
        for len in lengths {
            for at in 0..=len {
                for special in specials {
                    let mut body = "x".repeat(len);
                    body.insert_str(at, special);
                    for text in [
                        format!("\"{body}\""),
                        format!("[\"{body}\",1]"),
                        format!("[\"{body}\",\"{}\"]", "y".repeat(70)),
                        format!("\"{body}"),
                    ] {
                        assert_eq!(is_valid(&text), serde_valid(&text), "{text:?}");
                    }
                }
            }
        }
    }

    /// Nesting far beyond serde_json's recursion limit, and past the 64 levels kept in a word.
    #[test]
    fn deep_nesting() {
        for depth in [63, 64, 65, 128, 129, 10_000, 100_000] {
            let arrays = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
            assert!(is_valid(&arrays), "{depth}");
            let mixed = format!("{}1{}", "{\"a\":[".repeat(depth), "]}".repeat(depth));
            assert!(is_valid(&mixed), "{depth}");
            let wrong = format!("{}1{}", "{\"a\":[".repeat(depth), "}]".repeat(depth));
            assert!(!is_valid(&wrong), "{depth}");
            assert!(!is_valid(&arrays[1..]), "{depth}");
        }
    }

    /// Fields are found by their decoded key, the last occurrence winning, top level only.
    #[test]
    fn fields() {
        let names = ["type", "id", "message", "x"];
        let found = scan(
            r#" { "typ\u0065" : "a" , "id":1, "message":{"id":2}, "type":[1, {"x":3}], "\u0069d" : null } "#,
            &names,
        )
        .expect("valid");
        assert!(found.is_object);
        assert_eq!(
            found.fields,
            [
                Some(r#"[1, {"x":3}]"#),
                Some("null"),
                Some(r#"{"id":2}"#),
                None
            ]
        );
        let found = scan(r#"{"\ud83d\ude80":1,"x":2}"#, &names).expect("valid");
        assert_eq!(found.fields, [None, None, None, Some("2")]);
        // Keys with unpaired surrogates are keys, as in JSON.parse, and none of the names.
        for key in [
            r"\ud800",
            r"\udc00",
            r"\ud800\u0041",
            r"\ud800\ud800",
            r"a\ud800\n",
        ] {
            let text = format!(r#"{{"{key}":1,"x":2}}"#);
            let found = scan(&text, &names).expect("valid");
            assert!(found.is_object, "{text}");
            assert_eq!(found.fields, [None, None, None, Some("2")], "{text}");
        }
        let found = scan("[1]", &names).expect("valid");
        assert!(!found.is_object && found.fields == [None; 4]);
        assert_eq!(scan(r#"{"x":1"#, &names), Err(Invalid));
    }
}
