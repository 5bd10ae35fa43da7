//! Reading one output stream of a seat command into a bounded buffer.

use tokio::io::{AsyncRead, AsyncReadExt};

/// The size of one read from a pipe.
const READ_CHUNK_BYTES: usize = 64 * 1024;

/// What one stream has produced so far: its first `max` bytes, and how many more were dropped.
#[derive(Debug)]
pub(super) struct Capture {
    kept: Vec<u8>,
    cut_bytes: u64,
    max: usize,
}

impl Capture {
    /// An empty capture keeping at most `max` bytes.
    pub(super) fn new(max: usize) -> Capture {
        Capture { kept: Vec::new(), cut_bytes: 0, max }
    }

    /// Adds bytes read from the stream: those that fit are kept, the rest counted and dropped.
    pub(super) fn push(&mut self, bytes: &[u8]) {
        let room = self.max.saturating_sub(self.kept.len());
        let (keep, cut) = bytes.split_at(room.min(bytes.len()));
        self.kept.extend_from_slice(keep);
        // A usize always fits in a u64 on the platforms we build for.
        self.cut_bytes = self.cut_bytes.saturating_add(cut.len() as u64);
        debug_assert!(self.kept.len() <= self.max);
    }

    /// Reads `reader` to its end into this capture. Cancel safe: bytes read before a drop are
    /// already in the capture, and nothing read is lost between reads.
    pub(super) async fn read_to_end<R>(&mut self, reader: &mut R) -> std::io::Result<()>
    where
        R: AsyncRead + Unpin,
    {
        let mut chunk = vec![0u8; READ_CHUNK_BYTES];
        loop {
            let read = reader.read(&mut chunk).await?;
            if read == 0 {
                return Ok(());
            }
            self.push(&chunk[..read]);
        }
    }

    /// The kept text, lossily decoded; if anything was cut, a marker line saying how much
    /// ends it.
    pub(super) fn into_text(self) -> String {
        let mut text = String::from_utf8_lossy(&self.kept).into_owned();
        if self.cut_bytes > 0 {
            text.push_str(&format!(
                "\n[output cut: {} more bytes past the {}-byte limit]",
                self.cut_bytes, self.max
            ));
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::Capture;

    #[test]
    fn keeps_everything_under_the_limit() {
        let mut capture = Capture::new(8);
        capture.push(b"abc");
        capture.push(b"de");
        assert_eq!(capture.into_text(), "abcde");
    }

    #[test]
    fn cuts_the_excess_and_says_how_much() {
        let mut capture = Capture::new(4);
        capture.push(b"abc");
        capture.push(b"defg");
        capture.push(b"hi");
        assert_eq!(capture.into_text(), "abcd\n[output cut: 5 more bytes past the 4-byte limit]");
    }

    #[tokio::test]
    async fn reads_a_stream_to_its_end() {
        let mut capture = Capture::new(3);
        let mut input: &[u8] = b"hello";
        capture.read_to_end(&mut input).await.expect("a slice reads without error");
        assert_eq!(capture.into_text(), "hel\n[output cut: 2 more bytes past the 3-byte limit]");
    }
}
