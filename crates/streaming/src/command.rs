//! Turning a `-mapper`/`-reducer` string into a program and its arguments, as Hadoop Streaming
//! does: no shell is involved.

use std::path::{Path, PathBuf};

/// Splits a command into arguments the way Hadoop Streaming does: spaces separate arguments
/// outside quotes; a single- or double-quoted part is one argument (the quotes are removed, and
/// a quote also ends the argument before it). There are no escapes, and tabs do not separate.
///
/// `awk '{print $1}'` gives `["awk", "{print $1}"]`.
pub fn split_command(command: &str) -> Vec<String> {
    #[derive(PartialEq, Clone, Copy)]
    enum State {
        Outside,
        Single,
        Double,
    }
    let mut args = Vec::new();
    let mut state = State::Outside;
    let mut current = String::new();
    for c in command.chars() {
        let before = state;
        let boundary = match (c, state) {
            ('\'', State::Outside) => {
                state = State::Single;
                true
            }
            ('\'', State::Single) => {
                state = State::Outside;
                true
            }
            ('"', State::Outside) => {
                state = State::Double;
                true
            }
            ('"', State::Double) => {
                state = State::Outside;
                true
            }
            (' ', State::Outside) => true,
            _ => false,
        };
        if boundary {
            // A quote or a space ends the current argument; an empty one is dropped (so `''`
            // gives no argument, as in Hadoop).
            if !current.is_empty() {
                args.push(std::mem::take(&mut current));
            }
            debug_assert!(before != state || c == ' ');
        } else {
            current.push(c);
        }
    }
    if !current.is_empty() {
        args.push(current);
    }
    args
}

/// Shell operators that, outside quotes, show that a command was written for a shell.
const SHELL_OPERATORS: &[&str] = &[
    "|", "||", "&&", "&", ";", ">", ">>", "<", "<<", "2>", "2>>", "2>&1", "1>&2", ">&2", "|&",
];

/// The first shell operator (`|`, `&&`, `>`, ...) that stands as a word of its own outside
/// quotes in `command`, if any. Hadoop Streaming runs commands without a shell, so such an
/// operator would reach the program as an argument; `awk -F '|'` (quoted) is not one.
pub fn shell_operator(command: &str) -> Option<&'static str> {
    let mut quote: Option<char> = None;
    let mut word = String::new();
    let mut quoted_word = false;
    let mut found = None;
    let mut end_word = |word: &mut String, quoted: &mut bool| {
        if found.is_none() && !*quoted {
            found = SHELL_OPERATORS
                .iter()
                .copied()
                .find(|op| *op == word.as_str());
        }
        word.clear();
        *quoted = false;
    };
    for c in command.chars() {
        match (quote, c) {
            (None, '\'' | '"') => {
                quote = Some(c);
                quoted_word = true;
            }
            (Some(q), _) if c == q => quote = None,
            (None, ' ' | '\t') => end_word(&mut word, &mut quoted_word),
            _ => word.push(c),
        }
    }
    end_word(&mut word, &mut quoted_word);
    found
}

/// Finds the program of a command. The directories searched, in order: `dirs` (the task's
/// working directory, where `-files` entries are, then the directory sluice was started in —
/// where Hadoop's local mode runs programs), then `PATH`. A name with a `/` is taken relative to
/// the first of `dirs` that has it. Returns `None` if it is found nowhere.
pub fn resolve_program(program: &str, dirs: &[&Path], path_var: Option<&str>) -> Option<PathBuf> {
    let p = Path::new(program);
    if p.is_absolute() {
        return Some(p.to_path_buf());
    }
    if program.contains('/') {
        return dirs
            .iter()
            .map(|dir| dir.join(p))
            .find(|candidate| candidate.exists());
    }
    let path_dirs = path_var.unwrap_or("").split(':').filter(|d| !d.is_empty());
    dirs.iter()
        .map(|dir| dir.join(program))
        .chain(path_dirs.map(|dir| Path::new(dir).join(program)))
        .find(|candidate| is_executable_file(candidate))
}

fn is_executable_file(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Whether a `-mapper`/`-reducer` value names a Java class rather than a command: one word of
/// dot-separated identifiers whose last part starts with a capital letter
/// (`org.apache.hadoop.mapred.lib.IdentityMapper`), as opposed to `python3.11` or `map.py`.
pub fn looks_like_java_class(spec: &str) -> bool {
    let spec = spec.trim();
    if spec.contains(char::is_whitespace) || spec.contains('/') {
        return false;
    }
    let parts: Vec<&str> = spec.split('.').collect();
    let identifier = |p: &&str| {
        let mut chars = p.chars();
        chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
    };
    parts.iter().all(identifier)
        && parts
            .last()
            .and_then(|p| p.chars().next())
            .is_some_and(|c| c.is_ascii_uppercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(s: &str) -> Vec<String> {
        split_command(s)
    }

    #[test]
    fn shell_operators_outside_quotes_are_found() {
        assert_eq!(shell_operator("cat | wc -l"), Some("|"));
        assert_eq!(shell_operator("sort -k2 > out.txt"), Some(">"));
        assert_eq!(shell_operator("a && b"), Some("&&"));
        assert_eq!(shell_operator("python3 m.py 2>&1"), Some("2>&1"));
        assert_eq!(shell_operator("awk -F '|' '{print $1}'"), None);
        assert_eq!(shell_operator("grep 'a | b'"), None);
        assert_eq!(shell_operator("grep -E a|b"), None);
        assert_eq!(shell_operator("bash -c 'cat | wc -l'"), None);
        assert_eq!(shell_operator("cat"), None);
    }

    #[test]
    fn spaces_separate_and_quotes_group() {
        assert_eq!(split("cat"), vec!["cat"]);
        assert_eq!(split("  wc   -l "), vec!["wc", "-l"]);
        assert_eq!(split("awk '{print $1}'"), vec!["awk", "{print $1}"]);
        assert_eq!(
            split("python3 -c \"print('a b')\""),
            vec!["python3", "-c", "print('a b')"]
        );
        assert_eq!(split("a'b c'd"), vec!["a", "b c", "d"]);
        assert_eq!(split("x '' y"), vec!["x", "y"]);
        assert_eq!(split("cut\t-f1"), vec!["cut\t-f1"]);
        assert!(split("").is_empty());
    }

    #[test]
    fn programs_are_found_in_the_work_dir_then_path() {
        use std::os::unix::fs::PermissionsExt;
        let work = tempfile::tempdir().unwrap();
        let start = tempfile::tempdir().unwrap();
        let bin = tempfile::tempdir().unwrap();
        let make = |dir: &Path, name: &str, mode: u32| {
            let p = dir.join(name);
            std::fs::write(&p, "#!/bin/sh\n").unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
            p
        };
        let local = make(work.path(), "tool", 0o755);
        let started_here = make(start.path(), "own", 0o755);
        let in_path = make(bin.path(), "other", 0o755);
        make(bin.path(), "tool", 0o755);
        make(bin.path(), "own", 0o755);
        make(work.path(), "plain", 0o644);
        let dirs = [work.path(), start.path()];
        let path_var = bin.path().to_str().unwrap().to_string();
        let find = |name: &str| resolve_program(name, &dirs, Some(&path_var));
        assert_eq!(find("tool"), Some(local));
        assert_eq!(find("own"), Some(started_here.clone()));
        assert_eq!(find("other"), Some(in_path));
        assert_eq!(find("plain"), None);
        assert_eq!(find("missing"), None);
        assert_eq!(find("./own"), Some(start.path().join("./own")));
        assert_eq!(find("./nowhere"), None);
        assert_eq!(find("/bin/sh"), Some(PathBuf::from("/bin/sh")));
    }

    #[test]
    fn java_class_names_are_told_from_commands() {
        assert!(looks_like_java_class(
            "org.apache.hadoop.mapred.lib.IdentityMapper"
        ));
        assert!(looks_like_java_class("IdentityReducer"));
        assert!(!looks_like_java_class("python3.11"));
        assert!(!looks_like_java_class("mapper.py"));
        assert!(!looks_like_java_class("cat"));
        assert!(!looks_like_java_class("./Mapper"));
        assert!(!looks_like_java_class("java Foo"));
    }
}
