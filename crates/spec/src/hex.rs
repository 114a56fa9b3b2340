//! Byte strings in a spec's JSON: arbitrary bytes as lower-case hex, so that they survive
//! exactly (JSON strings are Unicode text); paths as text when they are UTF-8, as
//! `{"hex": "..."}` when not.

use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// `bytes` as lower-case hex digits, two per byte.
fn encode(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut text = String::with_capacity(bytes.len() * 2);
    for &b in bytes {
        text.push(char::from(DIGITS[usize::from(b >> 4)]));
        text.push(char::from(DIGITS[usize::from(b & 0xf)]));
    }
    text
}

/// The bytes hex digits (either case) spell.
fn decode(text: &str) -> Result<Vec<u8>, String> {
    fn digit(c: u8) -> Option<u8> {
        match c {
            b'0'..=b'9' => Some(c - b'0'),
            b'a'..=b'f' => Some(c - b'a' + 10),
            b'A'..=b'F' => Some(c - b'A' + 10),
            _ => None,
        }
    }
    if !text.len().is_multiple_of(2) {
        return Err(format!("hex string of odd length {}", text.len()));
    }
    text.as_bytes()
        .chunks_exact(2)
        .enumerate()
        .map(|(i, pair)| match (digit(pair[0]), digit(pair[1])) {
            (Some(high), Some(low)) => Ok(high << 4 | low),
            _ => Err(format!("not a hex digit at offset {} of {text:?}", 2 * i)),
        })
        .collect()
}

/// A list of byte strings as a list of hex strings (`#[serde(with = "hex::list")]`).
pub(crate) mod list {
    use super::*;

    pub(crate) fn serialize<S: Serializer>(list: &[Vec<u8>], s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(list.iter().map(|bytes| encode(bytes)))
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Vec<u8>>, D::Error> {
        Vec::<String>::deserialize(d)?
            .iter()
            .map(|text| decode(text).map_err(D::Error::custom))
            .collect()
    }
}

/// A path as its text, or `{"hex": "..."}` when it is not UTF-8
/// (`#[serde(with = "hex::path")]`).
pub(crate) mod path {
    use super::*;

    #[derive(Serialize, Deserialize)]
    #[serde(untagged)]
    enum Repr {
        Text(String),
        Bytes(Hex),
    }

    #[derive(Serialize, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Hex {
        hex: String,
    }

    pub(crate) fn serialize<S: Serializer>(path: &Path, s: S) -> Result<S::Ok, S::Error> {
        match path.to_str() {
            Some(text) => Repr::Text(text.to_string()),
            None => Repr::Bytes(Hex {
                hex: encode(path.as_os_str().as_bytes()),
            }),
        }
        .serialize(s)
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<PathBuf, D::Error> {
        let repr = Repr::deserialize(d).map_err(|_| {
            D::Error::custom("expected a path: a string, or {\"hex\": \"...\"} for other bytes")
        })?;
        Ok(match repr {
            Repr::Text(text) => PathBuf::from(text),
            Repr::Bytes(Hex { hex }) => {
                PathBuf::from(OsString::from_vec(decode(&hex).map_err(D::Error::custom)?))
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_byte_survives() {
        let all: Vec<u8> = (0..=255).collect();
        assert_eq!(decode(&encode(&all)).unwrap(), all);
        assert_eq!(encode(b"\x00\xff\x10"), "00ff10");
        assert_eq!(decode("00FFab").unwrap(), b"\x00\xff\xab");
        assert_eq!(decode("").unwrap(), b"");
    }

    #[test]
    fn malformed_hex_is_refused() {
        assert!(decode("abc").unwrap_err().contains("odd length"));
        assert!(decode("0g").unwrap_err().contains("offset 0"));
        assert!(decode("00é0").is_err());
    }
}
