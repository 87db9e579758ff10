//! The rule file: credential shapes in the documented format of format-spec/secret-rules.md,
//! parsed and compiled. Pure: no I/O (the built-in rules are embedded with `include_str!`).

use regex::Regex;

/// The built-in rules, in the order a finding's rule is chosen when two overlap: specific
/// shapes first, the generic URL-with-password last.
pub const BUILT_IN: &str = include_str!("rules.txt");

/// A rule file could not be used: the line and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("rule file line {line}: {reason}")]
pub struct RuleError {
    /// 1-based line of the rule file.
    pub line: usize,
    pub reason: String,
}

/// One credential shape.
#[derive(Debug, Clone)]
pub struct Rule {
    /// The section name, `[id]`: letters, digits and `-`.
    pub id: String,
    pub description: String,
    /// Literal texts one of which every match contains: a string holding none is not searched
    /// with `regex`.
    pub keywords: Vec<String>,
    /// The shape. With a capture group, group 1 is the secret; otherwise the whole match.
    pub regex: Regex,
    /// The least Shannon entropy (bits per character) a secret must have, when set: filler
    /// such as `aaaa…` and `${VARIABLE}` is not a secret.
    pub entropy_min: Option<f64>,
    /// Texts that must match (the tests check them); `\n` stands for a line break.
    pub examples: Vec<String>,
    /// Texts that must not match.
    pub counterexamples: Vec<String>,
}

impl Rule {
    /// The secret spans in `text`, as byte ranges, in order.
    pub fn find(&self, text: &str, found: &mut Vec<std::ops::Range<usize>>) {
        if !self.keywords.iter().any(|keyword| text.contains(keyword)) {
            return;
        }
        for captures in self.regex.captures_iter(text) {
            let Some(secret) = captures.get(1).or_else(|| captures.get(0)) else {
                continue;
            };
            if let Some(floor) = self.entropy_min
                && entropy_bits(secret.as_str()) < floor
            {
                continue;
            }
            if !secret.is_empty() {
                found.push(secret.range());
            }
        }
    }
}

/// Shannon entropy of `text` in bits per character.
pub fn entropy_bits(text: &str) -> f64 {
    let mut counts = std::collections::HashMap::new();
    let mut total = 0usize;
    for character in text.chars() {
        *counts.entry(character).or_insert(0usize) += 1;
        total += 1;
    }
    if total == 0 {
        return 0.0;
    }
    counts
        .values()
        .map(|&count| {
            let share = count as f64 / total as f64;
            -share * share.log2()
        })
        .sum()
}

/// Parses and compiles a rule file.
pub fn parse(text: &str) -> Result<Vec<Rule>, RuleError> {
    let mut rules = Vec::new();
    let mut current: Option<(usize, Draft)> = None;
    for (index, raw) in text.lines().enumerate() {
        let line_number = index + 1;
        let line = raw.trim_end_matches('\r');
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(name) = line
            .strip_prefix('[')
            .and_then(|rest| rest.strip_suffix(']'))
        {
            if let Some((start, draft)) = current.take() {
                rules.push(draft.finish(start)?);
            }
            if name.is_empty()
                || !name
                    .bytes()
                    .all(|byte| byte.is_ascii_alphanumeric() || byte == b'-')
            {
                return Err(error(line_number, "a rule id is letters, digits and `-`"));
            }
            if rules.iter().any(|rule: &Rule| rule.id == name) {
                return Err(error(
                    line_number,
                    format!("rule `{name}` is defined twice"),
                ));
            }
            current = Some((
                line_number,
                Draft {
                    id: name.to_string(),
                    ..Draft::default()
                },
            ));
            continue;
        }
        let Some((_, draft)) = current.as_mut() else {
            return Err(error(
                line_number,
                "a `key = value` line before any `[rule]`",
            ));
        };
        let Some((key, value)) = line.split_once('=') else {
            return Err(error(line_number, "expected `key = value`"));
        };
        let (key, value) = (key.trim(), value.trim());
        match key {
            "description" => draft.description = value.to_string(),
            "keywords" => draft.keywords = value.split_whitespace().map(String::from).collect(),
            "regex" => {
                let regex =
                    Regex::new(value).map_err(|e| error(line_number, format!("bad regex: {e}")))?;
                draft.regex = Some(regex);
            }
            "entropy" => {
                let floor = value
                    .parse::<f64>()
                    .ok()
                    .filter(|floor| floor.is_finite() && *floor >= 0.0)
                    .ok_or_else(|| error(line_number, "entropy is a number of bits, >= 0"))?;
                draft.entropy_min = Some(floor);
            }
            "example" => draft.examples.push(value.replace("\\n", "\n")),
            "counterexample" => draft.counterexamples.push(value.replace("\\n", "\n")),
            other => return Err(error(line_number, format!("unknown key `{other}`"))),
        }
    }
    if let Some((start, draft)) = current.take() {
        rules.push(draft.finish(start)?);
    }
    Ok(rules)
}

/// The built-in rules, compiled.
pub fn built_in() -> Vec<Rule> {
    parse(BUILT_IN).expect("the built-in rules are checked by the tests")
}

fn error(line: usize, reason: impl Into<String>) -> RuleError {
    RuleError {
        line,
        reason: reason.into(),
    }
}

#[derive(Default)]
struct Draft {
    id: String,
    description: String,
    keywords: Vec<String>,
    regex: Option<Regex>,
    entropy_min: Option<f64>,
    examples: Vec<String>,
    counterexamples: Vec<String>,
}

impl Draft {
    fn finish(self, line: usize) -> Result<Rule, RuleError> {
        let Some(regex) = self.regex else {
            return Err(error(line, format!("rule `{}` has no regex", self.id)));
        };
        if self.keywords.is_empty() {
            return Err(error(line, format!("rule `{}` has no keywords", self.id)));
        }
        Ok(Rule {
            id: self.id,
            description: self.description,
            keywords: self.keywords,
            regex,
            entropy_min: self.entropy_min,
            examples: self.examples,
            counterexamples: self.counterexamples,
        })
    }
}
