//! The one error type of the data layer. Every message begins with the name of
//! the input it concerns, then says what was wrong and what was expected, so a
//! user can fix the file without reading code.

use std::fmt;

/// The most characters of a piece of input that an error message quotes.
pub const QUOTED_CHARS: usize = 60;

/// The most characters of a message from another library (a JSON or TOML parser) that an
/// error repeats; such messages quote the input themselves.
pub const FOREIGN_MESSAGE_CHARS: usize = 300;

/// A piece of input as an error message shows it: in double quotes, with control and
/// invisible formatting characters escaped (`\u{1b}`), and cut after [`QUOTED_CHARS`]
/// characters with "…" and the full length. A file must not be able to send escape
/// sequences to the user's terminal, or a 30 MB token into an error line.
pub fn quote(text: &str) -> String {
    let mut quoted = String::from("\"");
    let length = text.chars().count();
    for c in text.chars().take(QUOTED_CHARS) {
        push_escaped(&mut quoted, c);
    }
    quoted.push('"');
    if length > QUOTED_CHARS {
        quoted.insert(quoted.len() - 1, '…');
        quoted.push_str(&format!(" ({length} characters)"));
    }
    quoted
}

/// A message that may quote input (another library's error, a file name) made safe to
/// print: escaped as [`quote`] does, and cut after `max_chars` characters with "…".
pub fn sanitise(text: &str, max_chars: usize) -> String {
    let mut clean = String::new();
    for c in text.chars().take(max_chars) {
        push_escaped(&mut clean, c);
    }
    if text.chars().nth(max_chars).is_some() {
        clean.push('…');
    }
    clean
}

/// Whether `text` shows as itself in a message: short enough to quote whole, and nothing to
/// escape (for names read from files and printed in reports).
pub fn is_plain(text: &str) -> bool {
    text.chars().count() <= QUOTED_CHARS && !text.chars().any(needs_escape)
}

/// Control characters (C0, DEL, C1) drive terminals; the formatting ones (bidirectional
/// overrides, zero-width characters, byte-order mark) make text display as something else.
fn needs_escape(c: char) -> bool {
    c.is_control() || matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2060}'..='\u{2069}' | '\u{feff}')
}

fn push_escaped(out: &mut String, c: char) {
    if needs_escape(c) {
        out.push_str(&format!("\\u{{{:x}}}", c as u32));
    } else {
        out.push(c);
    }
}

/// The largest image the DEEP program accepts, in pixels (rows × columns).
pub const MAX_IMAGE_PIXELS: usize = 4086;

#[derive(Debug, Clone, PartialEq)]
pub struct DataError {
    /// The file name (or other label) of the input the error concerns.
    pub source_name: String,
    pub kind: DataErrorKind,
}

#[derive(Debug, Clone, PartialEq)]
pub enum DataErrorKind {
    /// The IDX magic number is not the one for the kind of file being read.
    BadMagic {
        found: u32,
        expected: u32,
    },
    /// The input ends inside the fixed-size IDX header.
    HeaderTooShort {
        expected_bytes: u64,
        found_bytes: u64,
    },
    /// The header is plausible but the payload stops before the declared size.
    Truncated {
        expected_bytes: u64,
        found_bytes: u64,
    },
    /// The data go on past the size the header declares.
    TrailingData {
        declared_bytes: u64,
    },
    /// The header declares more data than this input could ever hold.
    DeclaredSizeTooLarge {
        declared_bytes: u64,
        available_bytes: u64,
    },
    /// The label file does not hold one label per image.
    CountMismatch {
        images: usize,
        labels: usize,
    },
    /// Training labels that cannot define a classifier's classes.
    Labels(String),
    /// rows × cols exceeds [`MAX_IMAGE_PIXELS`].
    ImageTooLarge {
        rows: usize,
        cols: usize,
    },
    /// rows or cols is zero, so a case would have no inputs.
    EmptyImage {
        rows: usize,
        cols: usize,
    },
    Gzip(String),
    Io(String),
    /// A data line of a database is malformed; line and column are 1-based.
    Parse {
        line: usize,
        column: usize,
        message: String,
    },
    /// The variable-name line of a database is malformed; 1-based position.
    BadHeader {
        line: usize,
        column: usize,
        message: String,
    },
    UnknownVariable {
        name: String,
        available: Vec<String>,
    },
    /// The input holds no cases at all.
    Empty,
    Preprocess(String),
}

impl DataError {
    pub fn new(source_name: &str, kind: DataErrorKind) -> Self {
        DataError {
            source_name: source_name.to_string(),
            kind,
        }
    }
}

impl fmt::Display for DataError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // File names are not cut: a long path is still the user's own.
        write!(f, "{}: {}", sanitise(&self.source_name, usize::MAX), self.kind)
    }
}

impl std::error::Error for DataError {}

fn idx_file_description(magic: u32) -> Option<&'static str> {
    match magic {
        crate::data::idx::IMAGES_MAGIC => Some("an IDX image file"),
        crate::data::idx::LABELS_MAGIC => Some("an IDX label file"),
        _ => None,
    }
}

impl fmt::Display for DataErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use DataErrorKind::*;
        match self {
            BadMagic { found, expected } => {
                write!(f, "not an IDX file of this kind: bad magic number {found:#010x} (expected {expected:#010x}")?;
                if let Some(what) = idx_file_description(*expected) {
                    write!(f, " for {what}")?;
                }
                write!(f, ")")?;
                if let Some(what) = idx_file_description(*found) {
                    write!(f, "; this looks like {what}")?;
                }
                Ok(())
            }
            HeaderTooShort { expected_bytes, found_bytes } => write!(
                f,
                "the input is only {found_bytes} bytes long (expected an IDX header of {expected_bytes} bytes)"
            ),
            Truncated { expected_bytes, found_bytes } => write!(
                f,
                "truncated: the header declares {expected_bytes} bytes of data but only {found_bytes} follow it"
            ),
            TrailingData { declared_bytes } => write!(
                f,
                "more data than the header declares: it declares {declared_bytes} bytes after the header, \
                 and the file goes on past them (expected the file to end there; is this one file appended to another?)"
            ),
            DeclaredSizeTooLarge { declared_bytes, available_bytes } => write!(
                f,
                "the header declares {declared_bytes} bytes of data, more than this input could ever hold \
                 ({available_bytes} bytes at most); the header is corrupt or most of the file is missing"
            ),
            CountMismatch { images, labels } => write!(
                f,
                "{labels} labels for {images} images (expected exactly one label per image)"
            ),
            ImageTooLarge { rows, cols } => write!(
                f,
                "images of {rows}x{cols} = {} pixels are too large (expected at most {MAX_IMAGE_PIXELS} pixels, the DEEP program's limit)",
                (*rows as u64).saturating_mul(*cols as u64)
            ),
            EmptyImage { rows, cols } => write!(
                f,
                "images of {rows}x{cols} have no pixels (expected at least one row and one column)"
            ),
            Gzip(message) => write!(f, "cannot decompress (expected a valid gzip file): {message}"),
            Io(message) => write!(f, "{message}"),
            Parse { line, column, message } | BadHeader { line, column, message } => {
                write!(f, "line {line}, column {column}: {message}")
            }
            UnknownVariable { name, available } => {
                write!(f, "no variable named {} (expected one of: ", quote(name))?;
                const LISTED: usize = 20;
                for (i, known) in available.iter().take(LISTED).enumerate() {
                    if i > 0 {
                        write!(f, ", ")?;
                    }
                    write!(f, "{}", sanitise(known, QUOTED_CHARS))?;
                }
                if available.len() > LISTED {
                    write!(f, ", and {} more", available.len() - LISTED)?;
                }
                write!(f, ")")
            }
            Empty => write!(f, "no cases found (expected at least one case)"),
            Preprocess(message) | Labels(message) => write!(f, "{message}"),
        }
    }
}
