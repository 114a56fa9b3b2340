//! Java's regular expressions (`java.util.regex`, which Hadoop's `grep` example compiles its
//! pattern with) written in the syntax of Rust's `regex` crate, meaning what they mean in Java.
//!
//! Most of the two syntaxes agree, but some of what they share means different things, and a
//! pattern written for Hadoop would match other text, with no error. [`translate`] rewrites
//! those parts and refuses what the `regex` crate cannot do:
//!
//! * `\w \d \s` (and `\W \D \S`) and the POSIX classes `\p{Alpha}`, `\p{Digit}`, `\p{Upper}`,
//!   ... are ASCII in Java, Unicode in Rust: written as ASCII classes.
//! * `\h \v \R` are Java's horizontal and vertical whitespace and line break (Rust's `\v` is one
//!   character): written out.
//! * `.` does not match Java's line terminators (`\r`, U+0085, U+2028, U+2029 as well as
//!   `\n`) unless `(?s)` is on: written as a class without them.
//! * `[:alpha:]` inside brackets is a nested class of the characters `:alph` in Java, a POSIX
//!   class in Rust; `--` and `~~` inside brackets are Rust's set operators: escaped.
//! * `\Q...\E` quotes, `\uXXXX`, `\0ooo`, `\cX`, `\e`, `\a`: written as Rust writes them.
//! * Refused: possessive quantifiers (`a*+`), atomic groups, lookaround, back references,
//!   `\G`, `\Z`, `\X`, `\N{...}`, Unicode blocks (`\p{InGreek}`), the `java*` classes, and the
//!   `d` and `U` flags.
//!
//! Not reproduced: `(?i)` folds case over all of Unicode in Rust (the Kelvin sign matches `k`),
//! over ASCII only in Java unless `(?u)`; `\b` takes Unicode's word characters in both, which
//! differ in a few marks.

use std::fmt::Write as _;

/// Java's ASCII word characters.
const WORD: &str = "0-9A-Za-z_";
/// Java's `\s`: ASCII whitespace.
const SPACE: &str = "\\t\\n\\x0B\\f\\r ";
/// Java's `\h`: horizontal whitespace.
const HORIZONTAL: &str =
    " \\t\\x{A0}\\x{1680}\\x{180e}\\x{2000}-\\x{200a}\\x{202f}\\x{205f}\\x{3000}";
/// Java's `\v`: vertical whitespace.
const VERTICAL: &str = "\\n\\x0B\\f\\r\\x{85}\\x{2028}\\x{2029}";
/// What Java's `.` does not match without `(?s)`: its line terminators.
const LINE_TERMINATORS: &str = "\\n\\r\\x{85}\\x{2028}\\x{2029}";

/// A pattern [`translate`] cannot write for the `regex` crate.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what} at character {at} of the pattern is not supported (Java regex syntax)")]
pub struct Unsupported {
    /// What was found.
    pub what: String,
    /// Where, counting characters from 1.
    pub at: usize,
}

/// `pattern` in Java's syntax, written in the `regex` crate's syntax with Java's meaning.
///
/// # Errors
/// [`Unsupported`] for what the `regex` crate cannot do (see the module's documentation). A
/// pattern that is not valid in Java may be translated anyway; the `regex` crate then refuses
/// it, or takes it as Java would not.
pub fn translate(pattern: &str) -> Result<String, Unsupported> {
    let chars: Vec<char> = pattern.chars().collect();
    let dot_all = has_flag(&chars, 's');
    for flag in ['d', 'U'] {
        if has_flag(&chars, flag) {
            return Err(Unsupported {
                what: format!("the flag {flag}"),
                at: 1,
            });
        }
    }
    let mut out = String::with_capacity(pattern.len() * 2);
    let mut depth = 0usize;
    let mut i = 0;
    // Whether the last thing written was a quantifier (`*`, `+`, `?`, `{n,m}`): a `?` after
    // it makes it lazy, a `+` possessive.
    let mut after_quantifier = false;
    let unsupported = |what: &str, at: usize| Unsupported {
        what: what.to_string(),
        at: at + 1,
    };
    while i < chars.len() {
        let c = chars[i];
        let quantified = std::mem::take(&mut after_quantifier);
        match c {
            '\\' => {
                let Some(&next) = chars.get(i + 1) else {
                    // A pattern ending in `\`: the regex crate refuses it as Java does.
                    out.push('\\');
                    i += 1;
                    continue;
                };
                i += 2;
                match next {
                    'w' => class(&mut out, WORD, false),
                    'W' => class(&mut out, WORD, true),
                    'd' => class(&mut out, "0-9", false),
                    'D' => class(&mut out, "0-9", true),
                    's' => class(&mut out, SPACE, false),
                    'S' => class(&mut out, SPACE, true),
                    'h' => class(&mut out, HORIZONTAL, false),
                    'H' => class(&mut out, HORIZONTAL, true),
                    'v' => class(&mut out, VERTICAL, false),
                    'V' => class(&mut out, VERTICAL, true),
                    'R' if depth == 0 => {
                        out.push_str("(?:\\r\\n|[\\n\\x0B\\f\\r\\x{85}\\x{2028}\\x{2029}])")
                    }
                    'Q' => {
                        let end = (i..chars.len().saturating_sub(1))
                            .find(|&k| chars[k] == '\\' && chars[k + 1] == 'E');
                        let quoted: String = chars[i..end.unwrap_or(chars.len())].iter().collect();
                        for q in quoted.chars() {
                            literal(&mut out, q);
                        }
                        i = end.map_or(chars.len(), |k| k + 2);
                    }
                    // A stray `\E` ends nothing, as in Java.
                    'E' => {}
                    'p' | 'P' => {
                        let (name, len) = property_name(&chars[i..])
                            .ok_or_else(|| unsupported("a malformed \\p", i - 2))?;
                        let negated = next == 'P';
                        property(&mut out, &name, negated)
                            .ok_or_else(|| unsupported(&format!("\\{next}{{{name}}}"), i - 2))?;
                        i += len;
                    }
                    'u' => {
                        let hex: String = chars.get(i..i + 4).unwrap_or_default().iter().collect();
                        let code = u32::from_str_radix(&hex, 16)
                            .ok()
                            .filter(|_| hex.len() == 4)
                            .ok_or_else(|| unsupported("a malformed \\u", i - 2))?;
                        let _ = write!(out, "\\x{{{code:X}}}");
                        i += 4;
                    }
                    '0' => {
                        let digits: String = chars[i..]
                            .iter()
                            .take(3)
                            .take_while(|d| ('0'..='7').contains(d))
                            .collect();
                        let code = u32::from_str_radix(&digits, 8)
                            .ok()
                            .filter(|&c| c <= 0o377)
                            .ok_or_else(|| unsupported("a malformed octal escape", i - 2))?;
                        let _ = write!(out, "\\x{{{code:X}}}");
                        i += digits.len();
                    }
                    'c' => {
                        let Some(&control) = chars.get(i) else {
                            return Err(unsupported("a malformed \\c", i - 2));
                        };
                        let _ = write!(out, "\\x{{{:X}}}", u32::from(control) ^ 64);
                        i += 1;
                    }
                    'e' => out.push_str("\\x1B"),
                    'a' => out.push_str("\\x07"),
                    'x' | 't' | 'n' | 'r' | 'f' | 'A' | 'z' | 'b' | 'B' => {
                        out.push('\\');
                        out.push(next);
                    }
                    '1'..='9' | 'k' => return Err(unsupported("a back reference", i - 2)),
                    'G' | 'Z' | 'X' | 'N' => return Err(unsupported(&format!("\\{next}"), i - 2)),
                    other if other.is_ascii_alphanumeric() => {
                        return Err(unsupported(&format!("\\{other}"), i - 2))
                    }
                    other => literal(&mut out, other),
                }
            }
            '[' => {
                if depth > 0 && chars.get(i + 1) == Some(&':') {
                    // Java's nested class of `:` and what follows, not a POSIX class.
                    out.push_str("[\\:");
                    i += 2;
                } else {
                    out.push('[');
                    i += 1;
                    if chars.get(i) == Some(&'^') {
                        out.push('^');
                        i += 1;
                    }
                }
                depth += 1;
            }
            ']' if depth > 0 => {
                depth -= 1;
                out.push(']');
                i += 1;
            }
            '-' if depth > 0 && chars.get(i + 1) == Some(&'-') => {
                out.push_str("-\\");
                i += 1;
            }
            '~' if depth > 0 => {
                out.push_str("\\~");
                i += 1;
            }
            '.' if depth == 0 && !dot_all => {
                let _ = write!(out, "[^{LINE_TERMINATORS}]");
                i += 1;
            }
            '(' if depth == 0 && chars.get(i + 1) == Some(&'?') => {
                let kind = chars.get(i + 2).copied();
                let lookbehind = kind == Some('<') && matches!(chars.get(i + 3), Some('=' | '!'));
                if matches!(kind, Some('=' | '!' | '>')) || lookbehind {
                    return Err(unsupported("a lookaround or atomic group", i));
                }
                out.push('(');
                i += 1;
            }
            '+' if depth == 0 && quantified => {
                return Err(unsupported("a possessive quantifier", i));
            }
            // Lazy, or the flags of a group (`(?i)`): no quantifier.
            '?' if depth == 0 && (quantified || out.ends_with('(')) => {
                out.push('?');
                i += 1;
            }
            '*' | '+' | '?' | '}' if depth == 0 => {
                out.push(c);
                i += 1;
                after_quantifier = true;
            }
            _ => {
                out.push(c);
                i += 1;
            }
        }
    }
    Ok(out)
}

/// Whether an inline flag group (`(?s)`, `(?is:`, ...) turns `flag` on anywhere.
fn has_flag(chars: &[char], flag: char) -> bool {
    let mut i = 0;
    while i + 2 < chars.len() {
        if chars[i] == '\\' {
            i += 2;
            continue;
        }
        if chars[i] == '(' && chars[i + 1] == '?' {
            let flags: String = chars[i + 2..]
                .iter()
                .take_while(|c| c.is_ascii_alphabetic() || **c == '-')
                .collect();
            let on = flags.split('-').next().unwrap_or_default();
            if on.contains(flag) {
                return true;
            }
        }
        i += 1;
    }
    false
}

/// Writes the class of `members` (class syntax without brackets), negated or not: as a class
/// of its own outside brackets, nested inside them.
fn class(out: &mut String, members: &str, negated: bool) {
    out.push('[');
    if negated {
        out.push('^');
    }
    out.push_str(members);
    out.push(']');
}

/// Writes `c` to match itself.
fn literal(out: &mut String, c: char) {
    if c.is_ascii_punctuation() || c == ' ' {
        if c == ' ' {
            out.push_str("\\x20");
        } else {
            out.push('\\');
            out.push(c);
        }
    } else {
        out.push(c);
    }
}

/// The name of `\p{Name}` or `\pL` (what follows the `p`), and how many characters it took.
fn property_name(rest: &[char]) -> Option<(String, usize)> {
    match rest.first()? {
        '{' => {
            let end = rest.iter().position(|&c| c == '}')?;
            Some((rest[1..end].iter().collect(), end + 1))
        }
        &c => Some((c.to_string(), 1)),
    }
}

/// Writes Java's property class `name`; `None` for one the `regex` crate has no equivalent
/// of.
fn property(out: &mut String, name: &str, negated: bool) -> Option<()> {
    let posix = match name {
        "Lower" => Some("a-z"),
        "Upper" => Some("A-Z"),
        "ASCII" => Some("\\x00-\\x7F"),
        "Alpha" => Some("A-Za-z"),
        "Digit" => Some("0-9"),
        "Alnum" => Some("0-9A-Za-z"),
        "Punct" => Some("!-/:-@\\[-`{-~"),
        "Graph" => Some("!-~"),
        "Print" => Some("\\x20-~"),
        "Blank" => Some("\\x20\\t"),
        "Cntrl" => Some("\\x00-\\x1F\\x7F"),
        "XDigit" => Some("0-9A-Fa-f"),
        "Space" => Some(SPACE),
        _ => None,
    };
    if let Some(members) = posix {
        class(out, members, negated);
        return Some(());
    }
    if name.starts_with("In") || name.starts_with("java") || name.contains('=') {
        return None;
    }
    // `IsLatin`, `IsL`, `IsAlphabetic`: the script, category or property itself.
    let name = name.strip_prefix("Is").unwrap_or(name);
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return None;
    }
    let _ = write!(out, "\\{}{{{name}}}", if negated { 'P' } else { 'p' });
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(pattern: &str) -> String {
        translate(pattern).unwrap()
    }

    #[test]
    fn classes_mean_what_they_mean_in_java() {
        assert_eq!(t("\\w+"), "[0-9A-Za-z_]+");
        assert_eq!(t("\\d\\D"), "[0-9][^0-9]");
        assert_eq!(t("[\\w.]"), "[[0-9A-Za-z_].]");
        assert_eq!(t("\\p{Alpha}\\P{Upper}"), "[A-Za-z][^A-Z]");
        assert_eq!(t("\\p{L}\\pL\\p{IsLatin}"), "\\p{L}\\p{L}\\p{Latin}");
        assert_eq!(t("[[:alpha:]]"), "[[\\:alpha:]]");
        assert_eq!(t("a.b"), "a[^\\n\\r\\x{85}\\x{2028}\\x{2029}]b");
        assert_eq!(t("(?s)a.b"), "(?s)a.b");
        assert_eq!(t("[a.]"), "[a.]");
        assert_eq!(t("\\Qa.b*\\E+"), "a\\.b\\*+");
        assert_eq!(t("\\u00e9\\0101\\cA\\e"), "\\x{E9}\\x{41}\\x{1}\\x1B");
        assert_eq!(t("a*?b+?c??"), "a*?b+?c??");
        assert_eq!(t("(?i)abc(?:d)"), "(?i)abc(?:d)");
        assert_eq!(t("(?<year>\\d{4})"), "(?<year>[0-9]{4})");
        assert_eq!(t("[a-z&&[^aeiou]]"), "[a-z&&[^aeiou]]");
    }

    #[test]
    fn what_the_regex_crate_cannot_do_is_refused() {
        for pattern in [
            "a++",
            "a*+",
            "a?+",
            "a{2}+",
            "(?=a)",
            "(?!a)",
            "(?<=a)b",
            "(?<!a)b",
            "(?>a)",
            "(a)\\1",
            "\\k<x>",
            "\\G",
            "a\\Z",
            "\\p{InGreek}",
            "\\p{javaLowerCase}",
            "(?d)a",
            "(?U)\\w",
        ] {
            assert!(translate(pattern).is_err(), "{pattern}");
        }
        // A lazy quantifier, and a `+` quantifying a group, are not possessive.
        assert!(translate("a+?").is_ok());
        assert!(translate("(a)+").is_ok());
        assert!(translate("\\++").is_ok());
    }

    #[test]
    fn translations_compile() {
        for pattern in [
            "\\w+",
            "\\s\\S\\h\\H\\v\\V\\R",
            "[\\d\\s]+",
            "[^\\W]",
            "\\p{Punct}+",
            "[+--]",
            "[~]",
            "\\Q[]\\E",
            "x{2,3}",
            "[[:alpha:]]+",
            "\\p{IsAlphabetic}",
            "(?x) a b # c",
            "\\Qa b\\E",
            "[\\p{Alpha}\\d]",
            "(?i)k",
            "a.b",
            "(?<n>x)",
        ] {
            let rust = t(pattern);
            assert!(regex::Regex::new(&rust).is_ok(), "{pattern} -> {rust}");
        }
    }
}
