//! Grouping of a sorted stream into (key, values) calls.

use sluice_sort::SortedCursor;

use crate::ExecError;

/// The values of one key, read lazily from the merge. Iterate with [`Values::next_value`].
pub struct Values<'a> {
    cursor: &'a mut dyn SortedCursor,
    key: &'a [u8],
    state: ValuesState,
    returned: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ValuesState {
    /// The cursor is on the group's first value, not yet returned.
    First,
    /// The last returned value is the cursor's current record.
    Inside,
    /// The cursor is on the first record of the next group.
    NextGroup,
    /// The cursor is exhausted.
    End,
}

impl<'a> Values<'a> {
    /// Values of `key`, with `cursor` positioned on the group's first record.
    pub(crate) fn new(cursor: &'a mut dyn SortedCursor, key: &'a [u8]) -> Values<'a> {
        Values {
            cursor,
            key,
            state: ValuesState::First,
            returned: 0,
        }
    }

    /// The next value of the group, or `None` when the group is done.
    ///
    /// # Errors
    /// A corrupt or unreadable run.
    pub fn next_value(&mut self) -> Result<Option<&[u8]>, ExecError> {
        match self.state {
            ValuesState::First => self.state = ValuesState::Inside,
            ValuesState::Inside => {
                if !self.cursor.advance()? {
                    self.state = ValuesState::End;
                    return Ok(None);
                }
                if self.cursor.key() != self.key {
                    self.state = ValuesState::NextGroup;
                    return Ok(None);
                }
            }
            ValuesState::NextGroup | ValuesState::End => return Ok(None),
        }
        self.returned += 1;
        Ok(Some(self.cursor.value()))
    }

    /// Skips the rest of the group; returns whether the cursor now holds the next group's first
    /// record (`false`: the input is exhausted) and how many values the group had.
    pub(crate) fn finish(mut self) -> Result<(bool, u64), ExecError> {
        while self.next_value()?.is_some() {}
        Ok((self.state == ValuesState::NextGroup, self.returned))
    }
}

/// Calls `f` once per distinct key of `cursor` (which must be positioned before its first
/// record), with the key and its values. Values the callback does not read are skipped.
/// Returns `(groups, records)` seen.
pub(crate) fn for_each_group(
    cursor: &mut dyn SortedCursor,
    mut f: impl FnMut(&[u8], &mut Values<'_>) -> Result<(), ExecError>,
) -> Result<(u64, u64), ExecError> {
    let mut key = Vec::new();
    let mut groups = 0;
    let mut records = 0;
    let mut has_record = cursor.advance()?;
    while has_record {
        key.clear();
        key.extend_from_slice(cursor.key());
        let mut values = Values::new(cursor, &key);
        f(&key, &mut values)?;
        groups += 1;
        let (more, seen) = values.finish()?;
        records += seen;
        has_record = more;
    }
    Ok((groups, records))
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_format::record;
    use sluice_sort::BytesCursor;

    #[test]
    fn groups_are_exact_even_when_values_are_not_read() {
        let mut buf = Vec::new();
        for (k, v) in [
            ("a", "1"),
            ("a", "2"),
            ("b", "3"),
            ("c", "4"),
            ("c", "5"),
            ("c", "6"),
        ] {
            record::encode(&mut buf, k.as_bytes(), v.as_bytes()).unwrap();
        }
        let mut cursor = BytesCursor::new(buf);
        let mut seen = Vec::new();
        let (groups, records) = for_each_group(&mut cursor, |key, values| {
            // Read only the first value of "c" to check the rest is skipped correctly.
            let mut got = Vec::new();
            while let Some(v) = values.next_value()? {
                got.push(String::from_utf8_lossy(v).into_owned());
                if key == b"c" {
                    break;
                }
            }
            seen.push((String::from_utf8_lossy(key).into_owned(), got));
            Ok(())
        })
        .unwrap();
        assert_eq!((groups, records), (3, 6));
        assert_eq!(
            seen,
            vec![
                ("a".into(), vec!["1".into(), "2".into()]),
                ("b".into(), vec!["3".into()]),
                ("c".into(), vec!["4".into()]),
            ]
        );
    }
}
