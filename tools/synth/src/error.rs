//! What can stop the generator: the library, a file operation, a file that exists already.

use std::fmt;
use std::io;
use std::path::PathBuf;

/// Why a transcript could not be generated.
#[derive(Debug)]
pub enum Error {
    /// A library call failed; its message names the file.
    Library(treelog::Error),
    /// A file operation outside the library failed.
    Io {
        path: PathBuf,
        operation: &'static str,
        source: io::Error,
    },
    /// The log to write exists already: the generator writes new files only.
    Exists(PathBuf),
    /// The generator built a line that is not JSON (a bug of the generator).
    InvalidJson(String),
}

impl Error {
    pub(crate) fn io(
        path: impl Into<PathBuf>,
        operation: &'static str,
        source: io::Error,
    ) -> Error {
        Error::Io {
            path: path.into(),
            operation,
            source,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Library(error) => write!(f, "{error}"),
            Error::Io {
                path,
                operation,
                source,
            } => write!(
                f,
                "{}: cannot {operation}: {}",
                path.display(),
                treelog::io_reason(source)
            ),
            Error::Exists(path) => write!(f, "{}: {}", path.display(), Error::EXISTS),
            Error::InvalidJson(error) => write!(f, "generated invalid JSON: {error}"),
        }
    }
}

impl std::error::Error for Error {}

impl Error {
    /// What [`Error::Exists`] says after the path.
    pub const EXISTS: &'static str = "already exists; the generator writes new files only";
}

impl From<treelog::Error> for Error {
    fn from(error: treelog::Error) -> Error {
        Error::Library(error)
    }
}
