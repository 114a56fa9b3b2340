use sluice_format::{record, FormatError, RunReader};

/// Why a [`SortedCursor`] could not move on: what a merge passes through from its sources
/// unchanged, so that a cancelled job or a failed fetch is reported as what it is.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CursorError {
    /// A run is corrupt or unreadable.
    #[error(transparent)]
    Format(#[from] FormatError),
    /// The job was cancelled while the cursor was read.
    #[error("the job was cancelled")]
    Cancelled,
    /// Any other source's failure (a segment fetched from another process, for instance).
    #[error(transparent)]
    Source(Box<dyn std::error::Error + Send + Sync>),
}

/// Records in key order, read one at a time: `advance()`, then `key()` / `value()`.
///
/// Before the first successful `advance` and after it returned `false`, `key` and `value` return
/// unspecified (but valid) slices.
pub trait SortedCursor {
    /// Moves to the next record; `false` when there are no more.
    ///
    /// # Errors
    /// Whatever the underlying source reports (a corrupt block, an I/O error, cancellation).
    fn advance(&mut self) -> Result<bool, CursorError>;
    /// The current record's key.
    fn key(&self) -> &[u8];
    /// The current record's value.
    fn value(&self) -> &[u8];
}

impl<R: std::io::Read> SortedCursor for RunReader<R> {
    fn advance(&mut self) -> Result<bool, CursorError> {
        Ok(RunReader::advance(self)?)
    }
    fn key(&self) -> &[u8] {
        RunReader::key(self)
    }
    fn value(&self) -> &[u8] {
        RunReader::value(self)
    }
}

impl<C: SortedCursor + ?Sized> SortedCursor for Box<C> {
    fn advance(&mut self) -> Result<bool, CursorError> {
        (**self).advance()
    }
    fn key(&self) -> &[u8] {
        (**self).key()
    }
    fn value(&self) -> &[u8] {
        (**self).value()
    }
}

/// A cursor over records encoded back to back (see [`sluice_format::record`]) in memory — an
/// in-memory run. `B` owns or shares the bytes (`Vec<u8>`, `Arc<[u8]>`, ...).
#[derive(Debug)]
pub struct BytesCursor<B> {
    bytes: B,
    next: usize,
    key_start: usize,
    key_len: usize,
    value_len: usize,
}

impl<B: AsRef<[u8]>> BytesCursor<B> {
    /// A cursor positioned before the first record of `bytes`.
    pub fn new(bytes: B) -> Self {
        BytesCursor {
            bytes,
            next: 0,
            key_start: 0,
            key_len: 0,
            value_len: 0,
        }
    }
}

impl<B: AsRef<[u8]>> SortedCursor for BytesCursor<B> {
    fn advance(&mut self) -> Result<bool, CursorError> {
        let bytes = self.bytes.as_ref();
        if self.next >= bytes.len() {
            return Ok(false);
        }
        let span = record::decode(bytes, self.next)?;
        self.key_start = span.key_start;
        self.key_len = span.key_len;
        self.value_len = span.value_len;
        self.next = span.next;
        Ok(true)
    }

    fn key(&self) -> &[u8] {
        &self.bytes.as_ref()[self.key_start..self.key_start + self.key_len]
    }

    fn value(&self) -> &[u8] {
        let start = self.key_start + self.key_len;
        &self.bytes.as_ref()[start..start + self.value_len]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_cursor_reads_encoded_records() {
        let mut buf = Vec::new();
        record::encode(&mut buf, b"a", b"1").unwrap();
        record::encode(&mut buf, b"", b"").unwrap();
        record::encode(&mut buf, b"ccc", b"value").unwrap();
        let mut c = BytesCursor::new(buf);
        let mut got = Vec::new();
        while c.advance().unwrap() {
            got.push((c.key().to_vec(), c.value().to_vec()));
        }
        assert_eq!(
            got,
            vec![
                (b"a".to_vec(), b"1".to_vec()),
                (vec![], vec![]),
                (b"ccc".to_vec(), b"value".to_vec())
            ]
        );
    }
}
