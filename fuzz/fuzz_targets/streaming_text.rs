//! A streaming program's text output split into records: lines (ending at `\n`, `\r\n` or a
//! lone `\r`) split at the N-th key/value separator (`stream.map.output.field.separator`,
//! `stream.num.map.output.key.fields`). `read` and `for_each` must both give what an
//! independent, naive splitter gives, whatever the reader's buffer size.
#![no_main]

use std::io::BufReader;

use libfuzzer_sys::fuzz_target;
use sluice_streaming::protocol::{Framing, RecordReader};

type Records = Vec<(Vec<u8>, Vec<u8>)>;

/// Lines as Hadoop's `LineReader` ends them.
fn lines(data: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let (mut start, mut i) = (0, 0);
    while i < data.len() {
        match data[i] {
            b'\n' => {
                out.push(&data[start..i]);
                start = i + 1;
            }
            b'\r' => {
                out.push(&data[start..i]);
                if data.get(i + 1) == Some(&b'\n') {
                    i += 1;
                }
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    if start < data.len() {
        out.push(&data[start..]);
    }
    out
}

/// Splits at the `n`-th separator by trying every position; the whole line is the key when
/// there are fewer separators.
fn split(line: &[u8], sep: &[u8], n: usize) -> (Vec<u8>, Vec<u8>) {
    if !sep.is_empty() {
        let mut seen = 0;
        let mut i = 0;
        while i + sep.len() <= line.len() {
            if &line[i..i + sep.len()] == sep {
                seen += 1;
                if seen == n.max(1) {
                    return (line[..i].to_vec(), line[i + sep.len()..].to_vec());
                }
                i += sep.len();
            } else {
                i += 1;
            }
        }
    }
    (line.to_vec(), Vec::new())
}

fuzz_target!(|data: &[u8]| {
    let [config, cap_a, cap_b, rest @ ..] = data else {
        return;
    };
    // Separator: up to 3 bytes taken from the input; fields: 0 to 4.
    let sep_len = usize::from(config & 3).min(rest.len());
    let (sep, data) = rest.split_at(sep_len);
    let key_fields = usize::from(config >> 2 & 7) % 5;
    let key_only = config & 0x80 != 0;
    let reader = RecordReader {
        framing: if key_only {
            Framing::KeyOnlyText
        } else {
            Framing::Text
        },
        separator: sep.to_vec(),
        key_fields,
    };
    let expected: Records = lines(data)
        .into_iter()
        .map(|line| {
            if key_only {
                (line.to_vec(), Vec::new())
            } else {
                split(line, sep, key_fields)
            }
        })
        .collect();

    let mut input = BufReader::with_capacity(usize::from(*cap_a) + 1, data);
    let mut buf = Vec::new();
    let mut by_read = Records::new();
    while let Some(record) = reader.read(&mut input, &mut buf).expect("text never fails") {
        by_read.push((record.key(&buf).to_vec(), record.value(&buf).to_vec()));
    }
    assert_eq!(by_read, expected);

    let mut input = BufReader::with_capacity(usize::from(*cap_b) + 1, data);
    let mut by_each = Records::new();
    reader
        .for_each(&mut input, &mut buf, |k, v| {
            by_each.push((k.to_vec(), v.to_vec()));
            Ok(())
        })
        .expect("text never fails");
    assert_eq!(by_each, expected);
});
