//! `${name}` in configuration values, substituted as Hadoop's `Configuration.get` does.
//!
//! A value such as `${hadoop.tmp.dir}/cache/${user.name}` reaches Hadoop's clients and tasks
//! (and the streaming programs' environment) with its variables replaced. The rules, measured
//! against Hadoop 3.4 (the streaming case `conf-variables-substituted` compares the two):
//!
//! - A variable is `${` then one or more characters other than `}`, `$` and space, then `}`;
//!   the leftmost one is replaced first, and the text is scanned again from the start, so a
//!   replacement may itself hold variables.
//! - `${env.NAME}` is the environment variable `NAME`; `${env.NAME:-word}` is `word` when it
//!   is unset or empty, `${env.NAME-word}` when it is unset.
//! - Otherwise the name is looked up as one of the JVM's system properties Hadoop jobs use
//!   (`user.name`, `user.home`, `user.dir`, `java.io.tmpdir`, the separators), then as a
//!   configuration key, then among the few defaults of Hadoop's that jobs refer to
//!   (`hadoop.tmp.dir`).
//! - An unknown name stops the substitution: the value keeps that variable and everything
//!   after it as written. A value whose replacement would contain the variable itself is
//!   left as written. After [`MAX_SUBSTITUTIONS`] rounds the value is refused.

/// Rounds of substitution in one value before it is refused (Hadoop's `MAX_SUBST`).
pub const MAX_SUBSTITUTIONS: usize = 20;

/// `expr` with its variables substituted; `conf` looks up a configuration key.
///
/// # Errors
/// The expression as written when it needs [`MAX_SUBSTITUTIONS`] rounds or more (a chain of
/// variables that does not end, in practice).
pub fn substitute(expr: &str, conf: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut eval = expr.to_string();
    for _ in 0..MAX_SUBSTITUTIONS {
        let Some((dollar, close)) = find_variable(&eval) else {
            return Ok(eval);
        };
        let name = &eval[dollar + 2..close];
        let value = match name.strip_prefix("env.").filter(|n| !n.is_empty()) {
            Some(var) => env_value(var),
            None => system_property(name),
        }
        .or_else(|| conf(name))
        .or_else(|| default_value(name));
        let Some(value) = value else {
            return Ok(eval);
        };
        if value.contains(&eval[dollar..=close]) {
            return Ok(expr.to_string());
        }
        eval = format!("{}{value}{}", &eval[..dollar], &eval[close + 1..]);
    }
    Err(format!(
        "variable substitution depth too large: {MAX_SUBSTITUTIONS} {expr}"
    ))
}

/// The byte positions of the `$` and the `}` of the leftmost variable in `text`. The
/// characters that matter are ASCII, so the positions are character boundaries.
fn find_variable(text: &str) -> Option<(usize, usize)> {
    let bytes = text.as_bytes();
    let mut from = 0;
    while let Some(offset) = text.get(from..)?.find("${") {
        let dollar = from + offset;
        let name_start = dollar + 2;
        let name_len = bytes[name_start..]
            .iter()
            .position(|b| matches!(b, b'}' | b'$' | b' '))?;
        let close = name_start + name_len;
        if name_len > 0 && bytes[close] == b'}' {
            return Some((dollar, close));
        }
        from = dollar + 1;
    }
    None
}

/// `${env.SPEC}`: the variable `SPEC` names, or the default it gives (`NAME:-word` when unset
/// or empty, `NAME-word` when unset); the first `:-` or `-` separates them.
fn env_value(spec: &str) -> Option<String> {
    let get = |name: &str| std::env::var(name).ok();
    if let Some(at) = spec.find('-') {
        if at > 0 && spec.as_bytes()[at - 1] == b':' {
            let value = get(&spec[..at - 1]).filter(|v| !v.is_empty());
            return Some(value.unwrap_or_else(|| spec[at + 1..].to_string()));
        }
        return Some(get(&spec[..at]).unwrap_or_else(|| spec[at + 1..].to_string()));
    }
    get(spec)
}

/// The JVM system properties a job's settings refer to, with the values a JVM started by this
/// user here would have.
fn system_property(name: &str) -> Option<String> {
    let user = || {
        nix::unistd::User::from_uid(nix::unistd::getuid())
            .ok()
            .flatten()
    };
    match name {
        "user.name" => user()
            .map(|u| u.name)
            .or_else(|| std::env::var("USER").ok()),
        "user.home" => user()
            .map(|u| u.dir.to_string_lossy().into_owned())
            .or_else(|| std::env::var("HOME").ok()),
        "user.dir" => std::env::current_dir()
            .ok()
            .map(|d| d.to_string_lossy().into_owned()),
        "java.io.tmpdir" => Some("/tmp".to_string()),
        "file.separator" => Some("/".to_string()),
        "path.separator" => Some(":".to_string()),
        "line.separator" => Some("\n".to_string()),
        _ => None,
    }
}

/// Hadoop's defaults (`core-default.xml`) that settings refer to.
fn default_value(name: &str) -> Option<String> {
    match name {
        "hadoop.tmp.dir" => Some("/tmp/hadoop-${user.name}".to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        }
    }

    fn sub(expr: &str, pairs: &'static [(&'static str, &'static str)]) -> String {
        substitute(expr, &with(pairs)).expect("substitutes")
    }

    #[test]
    fn variables_are_found_as_hadoop_finds_them() {
        assert_eq!(find_variable("${a}"), Some((0, 3)));
        assert_eq!(find_variable("x${ab}y"), Some((1, 5)));
        assert_eq!(find_variable("${}${b}"), Some((3, 6)));
        assert_eq!(find_variable("${a b}${c}"), Some((6, 9)));
        assert_eq!(find_variable("${a$${b}"), Some((4, 7)));
        assert_eq!(find_variable("${a{b}"), Some((0, 5)));
        assert_eq!(find_variable("${abc"), None);
        assert_eq!(find_variable("$"), None);
        assert_eq!(find_variable("é${é}"), Some((2, 6)));
    }

    #[test]
    fn keys_nest_and_rescan() {
        let conf: &[(&str, &str)] = &[("a", "A"), ("b", "${a}/b"), ("c", "${")];
        assert_eq!(sub("${b}/c", conf), "A/b/c");
        assert_eq!(sub("$${a}", conf), "$A");
        // The replacement is scanned again: `${` + `c}` ... only once whole.
        assert_eq!(sub("${c}a}", conf), "A");
    }

    #[test]
    fn an_unknown_name_stops_the_substitution() {
        let conf: &[(&str, &str)] = &[("a", "A")];
        assert_eq!(sub("${a}${nope}${a}", conf), "A${nope}${a}");
    }

    #[test]
    fn a_value_holding_its_own_variable_is_left_as_written() {
        let conf: &[(&str, &str)] = &[("a", "A"), ("self", "x${self}")];
        assert_eq!(sub("${a}${self}", conf), "${a}${self}");
    }

    #[test]
    fn too_many_rounds_are_refused() {
        let conf: &[(&str, &str)] = &[("a", "${a1}"), ("a1", "${a2}"), ("a2", "x")];
        assert_eq!(sub("${a}", conf), "x");
        let nineteen = "${a2}".repeat(19);
        assert_eq!(sub(&nineteen, conf), "x".repeat(19));
        let twenty = "${a2}".repeat(20);
        assert!(substitute(&twenty, &with(conf)).is_err());
    }

    #[test]
    fn environment_variables_and_their_defaults() {
        let path = std::env::var("PATH").expect("PATH is set");
        assert_eq!(sub("${env.PATH}", &[]), path);
        assert_eq!(sub("${env.PATH:-x}", &[]), path);
        assert_eq!(sub("${env.PATH-x}", &[]), path);
        assert_eq!(sub("${env.SLUICE_UNSET_VAR:-dflt}", &[]), "dflt");
        assert_eq!(sub("${env.SLUICE_UNSET_VAR-a-b}", &[]), "a-b");
        assert_eq!(
            sub("${env.SLUICE_UNSET_VAR}!", &[]),
            "${env.SLUICE_UNSET_VAR}!"
        );
        assert_eq!(sub("${env.}", &[]), "${env.}");
    }

    #[test]
    fn system_properties_come_before_keys_and_defaults_last() {
        let conf: &[(&str, &str)] = &[("user.name", "someone-else")];
        let name = sub("${user.name}", conf);
        assert_ne!(name, "someone-else");
        assert_eq!(sub("${hadoop.tmp.dir}", &[]), format!("/tmp/hadoop-{name}"));
        let conf: &[(&str, &str)] = &[("hadoop.tmp.dir", "/big")];
        assert_eq!(sub("${hadoop.tmp.dir}/x", conf), "/big/x");
    }
}
