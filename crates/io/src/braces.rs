//! Hadoop's alternation in input paths: `logs/2024-01-{01,02}` is `logs/2024-01-01` and
//! `logs/2024-01-02`, `{a,b{c,d}}` is `a`, `bc` and `bd`, and a group may hold `/`
//! (`{raw/x,clean/y}`). Hadoop reads such a path as a glob; [`expand`] turns it into the
//! plain paths and globs it stands for, which [`discover`](crate::discover) then looks up.

/// Most paths one input may expand to: `{0,1}{0,1}...` doubles with every group.
const MAX_EXPANSIONS: usize = 10_000;

/// Whether `path` holds a `{` not escaped by a `\` (and so is expanded; an unclosed one is an
/// error).
pub(crate) fn has_group(path: &str) -> bool {
    first_open(path).is_some()
}

/// The characters of `text` that no `\` escapes, with their positions (a `\` and the
/// character after it are left out): as in Hadoop's globs, `\{`, `\,` and `\}` open, cut and
/// close no group, and the escape stays in the alternatives for the glob to read.
fn unescaped(text: &str) -> impl Iterator<Item = (usize, char)> + '_ {
    let mut escaped = false;
    text.char_indices().filter(move |&(_, c)| {
        let plain = !escaped && c != '\\';
        escaped = !escaped && c == '\\';
        plain
    })
}

/// The position of the first unescaped `{`.
fn first_open(pattern: &str) -> Option<usize> {
    unescaped(pattern).find(|&(_, c)| c == '{').map(|(i, _)| i)
}

/// The paths `pattern` stands for, in the order of its alternatives, without duplicates.
/// A `}` that closes no group is taken as it is, as Hadoop does.
///
/// # Errors
/// A message for a `{` that is never closed, or a pattern of more than `MAX_EXPANSIONS` paths.
pub(crate) fn expand(pattern: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    expand_into(pattern, &mut out)?;
    let mut seen = std::collections::HashSet::new();
    out.retain(|p| seen.insert(p.clone()));
    Ok(out)
}

fn expand_into(pattern: &str, out: &mut Vec<String>) -> Result<(), String> {
    let Some(open) = first_open(pattern) else {
        out.push(pattern.to_string());
        return Ok(());
    };
    let (close, commas) = group_at(pattern, open)?;
    let prefix = &pattern[..open];
    let suffix = &pattern[close + 1..];
    let mut start = open + 1;
    for end in commas.into_iter().chain([close]) {
        let alternative = &pattern[start..end];
        // The alternative may hold groups of its own, and so may the rest of the pattern.
        expand_into(&format!("{prefix}{alternative}{suffix}"), out)?;
        if out.len() > MAX_EXPANSIONS {
            return Err(format!("stands for more than {MAX_EXPANSIONS} paths"));
        }
        start = end + 1;
    }
    Ok(())
}

/// The position of the `}` closing the group opened at `open`, and of the commas between
/// its alternatives (those not inside a nested group).
fn group_at(pattern: &str, open: usize) -> Result<(usize, Vec<usize>), String> {
    let mut depth = 0usize;
    let mut commas = Vec::new();
    for (i, c) in unescaped(pattern).skip_while(|(i, _)| *i < open) {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return Ok((i, commas));
                }
            }
            ',' if depth == 1 => commas.push(i),
            _ => {}
        }
    }
    Err(format!(
        "the group opened at character {} is not closed",
        open + 1
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(pattern: &str) -> Vec<String> {
        expand(pattern).unwrap()
    }

    #[test]
    fn alternatives_expand_in_order() {
        assert_eq!(ok("a/b"), ["a/b"]);
        assert_eq!(
            ok("logs/2024-01-{01,02}"),
            ["logs/2024-01-01", "logs/2024-01-02"]
        );
        assert_eq!(ok("{a,b}/{x,y}"), ["a/x", "a/y", "b/x", "b/y"]);
        assert_eq!(ok("d/{a,b{c,d}}e"), ["d/ae", "d/bce", "d/bde"]);
        assert_eq!(ok("{raw/x,clean/y}.txt"), ["raw/x.txt", "clean/y.txt"]);
        assert_eq!(ok("p{,s}"), ["p", "ps"]);
        assert_eq!(ok("p{a}"), ["pa"]);
        assert_eq!(ok("p{}"), ["p"]);
        // Globs stay globs, to be matched afterwards.
        assert_eq!(ok("d/{*.gz,x?}"), ["d/*.gz", "d/x?"]);
    }

    #[test]
    fn duplicates_go_and_a_stray_close_is_literal() {
        assert_eq!(ok("{a,a,b}"), ["a", "b"]);
        assert_eq!(ok("a}b"), ["a}b"]);
        assert_eq!(ok("{a,b}}"), ["a}", "b}"]);
    }

    /// Hadoop's escapes: `\{`, `\,` and `\}` do not open, cut or close a group, and stay in
    /// the alternatives for the glob to read.
    #[test]
    fn escaped_braces_and_commas_are_plain() {
        assert!(!has_group(r"a\{b"));
        assert_eq!(ok(r"a\{b"), [r"a\{b"]);
        assert_eq!(ok(r"{a\,b,c}"), [r"a\,b", "c"]);
        assert_eq!(ok(r"{a\}b,c}"), [r"a\}b", "c"]);
        assert_eq!(ok(r"\\{a,b}"), [r"\\a", r"\\b"]);
        assert!(expand(r"{a\}").is_err());
    }

    #[test]
    fn an_unclosed_group_or_too_many_paths_is_an_error() {
        assert!(expand("logs/{a,b").unwrap_err().contains("character 6"));
        assert!(expand("{a,{b}").is_err());
        let huge = "{0,1}".repeat(14);
        assert!(expand(&huge).unwrap_err().contains("more than"));
        assert_eq!(expand(&"{0,1}".repeat(13)).unwrap().len(), 8192);
    }

    /// Against an independent reference: every combination of the alternatives, built
    /// directly for two groups side by side.
    #[test]
    fn two_groups_give_every_combination() {
        let left = ["a", "bb", ""];
        let right = ["x", "yy"];
        let mut want = Vec::new();
        for l in left {
            for r in right {
                want.push(format!("p{l}q{r}s"));
            }
        }
        assert_eq!(ok("p{a,bb,}q{x,yy}s"), want);
    }
}
