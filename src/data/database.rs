//! DEEP database files (Masters, *Deep Belief Nets in C++ and CUDA C*, vol. 1,
//! ch. 5): plain text or CSV, a first line of variable names, then one case
//! per line. Fields are separated by runs of spaces/tabs, or by a comma with
//! optional whitespace around it; blank lines are skipped.
//!
//! Variable names are compared without regard to ASCII case, both when
//! checking for duplicates and when looking columns up by name.

use std::collections::HashMap;

use super::error::{quote, sanitise, DataError, DataErrorKind};

const MAX_NAME_CHARS: usize = 15;

#[derive(Debug, Clone, PartialEq)]
pub struct Database {
    pub source_name: String,
    pub names: Vec<String>,
    pub n_cases: usize,
    /// n_cases × names.len(), row-major.
    pub values: Vec<f64>,
}

impl Database {
    pub fn n_vars(&self) -> usize {
        self.names.len()
    }

    pub fn value(&self, case: usize, column: usize) -> f64 {
        self.values[case * self.n_vars() + column]
    }

    /// The column index of each name, in the order given.
    pub fn column_indices(&self, names: &[&str]) -> Result<Vec<usize>, DataError> {
        // One map for all the names: a search per name would make selecting every column of
        // a wide database quadratic.
        let columns = self.columns_by_name();
        names
            .iter()
            .map(|&wanted| {
                columns.get(&name_key(wanted)).copied().ok_or_else(|| {
                    DataError::new(
                        &self.source_name,
                        DataErrorKind::UnknownVariable {
                            name: wanted.to_string(),
                            available: self.names.clone(),
                        },
                    )
                })
            })
            .collect()
    }

    /// Each variable's column, by [`name_key`].
    pub fn columns_by_name(&self) -> HashMap<String, usize> {
        self.names.iter().enumerate().map(|(column, name)| (name_key(name), column)).collect()
    }
}

/// Names are compared without regard to ASCII case; this is the form they are compared in.
pub fn name_key(name: &str) -> String {
    name.to_ascii_lowercase()
}

pub fn parse_database(source_name: &str, text: &str) -> Result<Database, DataError> {
    let fail = |kind| DataError::new(source_name, kind);
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text
        .split('\n')
        .enumerate()
        .map(|(i, line)| (i + 1, line.strip_suffix('\r').unwrap_or(line)))
        .filter(|(_, line)| !line.trim().is_empty());

    let (header_line, header) = lines.next().ok_or_else(|| fail(DataErrorKind::Empty))?;
    let bad_header = |column, message| DataErrorKind::BadHeader {
        line: header_line,
        column,
        message,
    };
    let name_fields = split_fields(header).map_err(|e| fail(bad_header(e.column, e.message)))?;
    let mut names: Vec<String> = Vec::with_capacity(name_fields.len());
    // Character column of each name seen so far: a header of 400,000 names took minutes
    // when each name was compared with all the ones before it.
    let mut seen: HashMap<String, usize> = HashMap::with_capacity(name_fields.len());
    for field in &name_fields {
        check_name(field.text).map_err(|message| fail(bad_header(field.column, message)))?;
        if let Some(first_column) = seen.insert(name_key(field.text), field.column) {
            let message = format!(
                "variable name {} appears twice (first at column {first_column}; expected unique names)",
                quote(field.text)
            );
            return Err(fail(bad_header(field.column, message)));
        }
        names.push(field.text.to_string());
    }

    let mut values = Vec::new();
    let mut n_cases = 0;
    for (line, text) in lines {
        let parse_error = |column, message| {
            fail(DataErrorKind::Parse {
                line,
                column,
                message,
            })
        };
        let fields = split_fields(text).map_err(|e| parse_error(e.column, e.message))?;
        if fields.len() != names.len() {
            // Point at the first surplus value, or just past the end where a value is missing.
            let column = match fields.get(names.len()) {
                Some(surplus) => surplus.column,
                None => text.chars().count() + 1,
            };
            let message = format!(
                "expected {} values (one per variable), found {}",
                names.len(),
                fields.len()
            );
            return Err(parse_error(column, message));
        }
        for field in &fields {
            values.push(parse_number(field.text).map_err(|m| parse_error(field.column, m))?);
        }
        n_cases += 1;
    }
    if n_cases == 0 {
        return Err(fail(DataErrorKind::Empty));
    }
    Ok(Database {
        source_name: source_name.to_string(),
        names,
        n_cases,
        values,
    })
}

#[cfg(not(target_arch = "wasm32"))]
pub fn read_database(path: &std::path::Path) -> Result<Database, DataError> {
    let source_name = path.display().to_string();
    let bytes = super::idx::read_file(&source_name, path)?;
    let text = String::from_utf8(bytes).map_err(|e| {
        let start: String = e.as_bytes().iter().take(4).map(|b| format!("{b:02x}")).collect();
        let message = format!(
            "neither an IDX file nor a text database: it starts with the bytes 0x{start}, which are \
             not an IDX magic number (0x{:08x} for images, 0x{:08x} for labels, or 1f 8b for gzip), \
             and it is not UTF-8 text (an invalid byte at offset {})",
            super::idx::IMAGES_MAGIC,
            super::idx::LABELS_MAGIC,
            e.utf8_error().valid_up_to()
        );
        DataError::new(&source_name, DataErrorKind::Io(message))
    })?;
    parse_database(&source_name, &text)
}

struct Field<'a> {
    /// 1-based character position where the field starts.
    column: usize,
    text: &'a str,
}

struct FieldError {
    column: usize,
    message: String,
}

fn split_fields(line: &str) -> Result<Vec<Field<'_>>, FieldError> {
    let empty_field = |column| FieldError {
        column,
        message: "expected a value, found an empty field (missing values are not allowed)".into(),
    };
    // (1-based column, byte offset, character)
    let mut chars = line
        .char_indices()
        .enumerate()
        .map(|(i, (at, c))| (i + 1, at, c))
        .peekable();
    let skip_blanks = |chars: &mut std::iter::Peekable<_>| {
        while chars
            .next_if(|&(_, _, c): &(usize, usize, char)| c.is_whitespace())
            .is_some()
        {}
    };
    let mut fields = Vec::new();
    skip_blanks(&mut chars);
    let mut after_comma_column = None;
    while let Some(&(column, start, c)) = chars.peek() {
        if c == ',' {
            return Err(empty_field(column));
        }
        let mut end = line.len();
        while let Some(&(_, at, c)) = chars.peek() {
            if c == ',' || c.is_whitespace() {
                end = at;
                break;
            }
            chars.next();
        }
        fields.push(Field {
            column,
            text: &line[start..end],
        });
        after_comma_column = None;
        skip_blanks(&mut chars);
        if let Some((comma_column, _, _)) = chars.next_if(|&(_, _, c)| c == ',') {
            after_comma_column = Some(comma_column + 1);
            skip_blanks(&mut chars);
        }
    }
    match after_comma_column {
        // A trailing comma leaves an empty last field.
        Some(column) => Err(empty_field(column)),
        None => Ok(fields),
    }
}

fn check_name(name: &str) -> Result<(), String> {
    let rule = "a letter followed by letters, digits or '_'";
    let mut chars = name.chars();
    if !chars.next().is_some_and(|c| c.is_ascii_alphabetic()) {
        return Err(format!(
            "expected a variable name starting with a letter, found {}",
            quote(name)
        ));
    }
    if let Some(bad) = chars.find(|c| !(c.is_ascii_alphanumeric() || *c == '_')) {
        return Err(format!(
            "variable name {} contains '{}' (expected {rule})",
            quote(name),
            sanitise(&bad.to_string(), 1)
        ));
    }
    let length = name.chars().count();
    if length > MAX_NAME_CHARS {
        return Err(format!(
            "variable name {} is {length} characters long (expected at most {MAX_NAME_CHARS})",
            quote(name)
        ));
    }
    Ok(())
}

fn parse_number(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(value) if value.is_finite() => Ok(value),
        Ok(_) => Err(format!("expected a finite number, found {}", quote(text))),
        Err(_) => Err(format!("expected a number, found {}", quote(text))),
    }
}
