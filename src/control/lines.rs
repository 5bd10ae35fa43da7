//! Bounded JSON lines over an async byte stream, for the control socket and the MCP stdio
//! front.

use serde::Serialize;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt};

/// Why a line could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LineError {
    /// The line is longer than the bound; the rest of it was not read.
    #[error("the line is longer than {max} bytes")]
    TooLong {
        /// The bound.
        max: usize,
    },
    /// The stream failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// Reads one line without its `\n` (and a `\r` before it); `None` at the end of the stream.
/// A last line without `\n` is returned as a line.
///
/// Cancel safety: not cancel safe; bytes of a partly read line are lost if the future is
/// dropped.
pub async fn read_line<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    max: usize,
) -> Result<Option<Vec<u8>>, LineError> {
    let mut line = Vec::new();
    loop {
        let buf = reader.fill_buf().await?;
        if buf.is_empty() {
            return Ok((!line.is_empty()).then_some(line));
        }
        match buf.iter().position(|b| *b == b'\n') {
            Some(i) => {
                line.extend_from_slice(&buf[..i]);
                reader.consume(i + 1);
                if line.len() > max {
                    return Err(LineError::TooLong { max });
                }
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                return Ok(Some(line));
            }
            None => {
                let n = buf.len();
                line.extend_from_slice(buf);
                reader.consume(n);
                if line.len() > max {
                    return Err(LineError::TooLong { max });
                }
            }
        }
    }
}

/// Writes `value` as one JSON line and flushes.
pub async fn write_json<W: AsyncWrite + Unpin, T: Serialize>(
    writer: &mut W,
    value: &T,
) -> std::io::Result<()> {
    let mut bytes = serde_json::to_vec(value).map_err(std::io::Error::other)?;
    bytes.push(b'\n');
    writer.write_all(&bytes).await?;
    writer.flush().await
}
