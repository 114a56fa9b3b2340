//! Hadoop XML configuration files (`-conf file.xml`). Mode 0: any text, which must be
//! accepted or refused without a panic. Mode 1: properties chosen by the fuzzer, written as
//! XML with every special character escaped, must read back as exactly those properties.
#![no_main]

use std::collections::BTreeMap;

use arbitrary::{Arbitrary, Unstructured};
use libfuzzer_sys::fuzz_target;
use sluice_streaming::conf::{current_name, JobConf};

fn escape(s: &str, out: &mut String) {
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c => out.push(c),
        }
    }
}

/// Characters XML 1.0 allows in a document.
fn xml_char(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r' | '\u{20}'..='\u{D7FF}' | '\u{E000}'..='\u{FFFD}' | '\u{10000}'..)
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, data)) = data.split_first() else {
        return;
    };
    if mode & 1 == 0 {
        if let Ok(text) = std::str::from_utf8(data) {
            let mut conf = JobConf::new();
            let _ = conf.load_xml_text(text);
        }
        return;
    }
    let mut u = Unstructured::new(data);
    let Ok(props) = Vec::<(String, String)>::arbitrary(&mut u) else {
        return;
    };
    // What the file says once read: names trimmed (of XML white space, which is all Rust
    // trims here: other Unicode spaces are kept out) and not empty, values as written; a
    // later property overrides an earlier one of the same (current) name, and an empty value
    // sets nothing.
    let mut expected = BTreeMap::new();
    let mut xml = String::from("<?xml version=\"1.0\"?>\n<configuration>\n");
    for (name, value) in &props {
        let keep = |s: &str| {
            s.chars()
                .filter(|&c| xml_char(c) && (!c.is_whitespace() || c.is_ascii()))
                .collect::<String>()
        };
        // A carriage return is read back as a newline (XML's end-of-line handling).
        let (name, value) = (keep(name).replace('\r', ""), keep(value).replace('\r', ""));
        let name_trim = name.trim();
        if name_trim.is_empty() {
            continue;
        }
        // An empty value sets nothing; blanks are a value.
        if !value.is_empty() {
            expected.insert(current_name(name_trim).to_string(), value.clone());
        }
        xml.push_str("  <property>\n    <name>");
        escape(&name, &mut xml);
        xml.push_str("</name>\n    <value>");
        escape(&value, &mut xml);
        xml.push_str("</value>\n  </property>\n");
    }
    xml.push_str("</configuration>\n");
    let mut conf = JobConf::new();
    conf.load_xml_text(&xml)
        .expect("a well-formed configuration is read");
    let got: BTreeMap<String, String> = conf
        .entries()
        .map(|(name, value)| (name.to_string(), value.to_string()))
        .collect();
    assert_eq!(got, expected, "{xml}");
});
