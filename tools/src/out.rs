//! Buffered standard output that turns a closed pipe into [`CliError::StdoutClosed`].

use std::io::{BufWriter, IsTerminal, Stdout, Write};

use crate::exit::CliError;

/// Standard output for one command. Every write error becomes a [`CliError`]; callers flush
/// explicitly where a line must be seen before the next step (e.g. `append` ids).
/// On a terminal, control characters in what is written are escaped
/// ([`crate::terminal::escape_controls`]); to a pipe or a file, every byte is written as given.
pub struct Out {
    inner: BufWriter<Stdout>,
    terminal: bool,
}

impl Out {
    pub fn new() -> Out {
        let stdout = std::io::stdout();
        Out {
            terminal: stdout.is_terminal(),
            inner: BufWriter::with_capacity(64 * 1024, stdout),
        }
    }

    /// Writes `text` and a newline.
    pub fn line(&mut self, text: &str) -> Result<(), CliError> {
        let text = self.shown(text);
        self.write_line(&text)
    }

    /// Writes `text`, whose data parts the caller escaped, and a newline: for lines that
    /// hold the CLI's own escape sequences (search's highlight).
    pub fn styled_line(&mut self, text: &str) -> Result<(), CliError> {
        self.write_line(text)
    }

    /// Writes `text` followed by a newline unless it already ends with one.
    pub fn text_block(&mut self, text: &str) -> Result<(), CliError> {
        let text = self.shown(text);
        if text.ends_with('\n') {
            self.inner
                .write_all(text.as_bytes())
                .map_err(CliError::stdout)
        } else {
            self.write_line(&text)
        }
    }

    /// `text` as it is written: escaped on a terminal.
    fn shown<'a>(&self, text: &'a str) -> std::borrow::Cow<'a, str> {
        if self.terminal {
            crate::terminal::escape_controls(text)
        } else {
            std::borrow::Cow::Borrowed(text)
        }
    }

    fn write_line(&mut self, text: &str) -> Result<(), CliError> {
        self.inner
            .write_all(text.as_bytes())
            .and_then(|()| self.inner.write_all(b"\n"))
            .map_err(CliError::stdout)
    }

    pub fn flush(&mut self) -> Result<(), CliError> {
        self.inner.flush().map_err(CliError::stdout)
    }
}
