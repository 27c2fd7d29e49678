//! Positions on the wire: the encoding of `Position::character` agreed with the server
//! (UTF-8 when it can, UTF-16 otherwise) and conversions between byte offsets and LSP
//! positions.

use async_lsp::lsp_types::{Position, PositionEncodingKind};

/// The unit of `Position::character` agreed with the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    Utf8,
    Utf16,
    Utf32,
}

impl Encoding {
    /// The server's choice; a server that says nothing speaks UTF-16 (the LSP default).
    pub fn negotiated(kind: Option<&PositionEncodingKind>) -> Self {
        match kind.map(PositionEncodingKind::as_str) {
            Some("utf-8") => Encoding::Utf8,
            Some("utf-32") => Encoding::Utf32,
            _ => Encoding::Utf16,
        }
    }

    /// The column of byte offset `byte` in `line`, in this encoding's units.
    pub fn column(self, line: &str, byte: usize) -> u32 {
        let prefix = &line[..floor_char_boundary(line, byte)];
        let units = match self {
            Encoding::Utf8 => prefix.len(),
            Encoding::Utf16 => prefix.encode_utf16().count(),
            Encoding::Utf32 => prefix.chars().count(),
        };
        u32::try_from(units).unwrap_or(u32::MAX)
    }

    /// The byte offset in `line` of a column in this encoding's units, clamped to the line
    /// and to a character boundary (a column inside a surrogate pair lands on its character).
    pub fn byte(self, line: &str, column: u32) -> usize {
        let column = column as usize;
        match self {
            Encoding::Utf8 => floor_char_boundary(line, column.min(line.len())),
            Encoding::Utf16 => {
                let mut units = 0;
                for (index, ch) in line.char_indices() {
                    if units >= column {
                        return index;
                    }
                    units += ch.len_utf16();
                    if units > column {
                        return index;
                    }
                }
                line.len()
            }
            Encoding::Utf32 => line
                .char_indices()
                .nth(column)
                .map_or(line.len(), |(index, _)| index),
        }
    }
}

fn floor_char_boundary(text: &str, mut index: usize) -> usize {
    index = index.min(text.len());
    while !text.is_char_boundary(index) {
        index -= 1;
    }
    index
}

/// The lines of a text without their terminators (`\n` or `\r\n`).
pub fn lines(text: &str) -> Vec<&str> {
    text.split('\n')
        .map(|line| line.strip_suffix('\r').unwrap_or(line))
        .collect()
}

/// The byte offset in `text` of an LSP position.
pub fn offset(text: &str, position: Position, encoding: Encoding) -> usize {
    let mut start = 0;
    for (index, line) in text.split('\n').enumerate() {
        if index == position.line as usize {
            let content = line.strip_suffix('\r').unwrap_or(line);
            return start + encoding.byte(content, position.character);
        }
        start += line.len() + 1;
    }
    text.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf16_columns_count_surrogate_pairs_and_utf8_counts_bytes() {
        let line = "let s = \"𝄞é\"; call(s)";
        let byte = line.find("call").unwrap();
        assert_eq!(Encoding::Utf8.column(line, byte), byte as u32);
        // 𝄞 is 4 bytes and 2 UTF-16 units; é is 2 bytes and 1 unit.
        assert_eq!(Encoding::Utf16.column(line, byte), byte as u32 - 3);
        assert_eq!(Encoding::Utf32.column(line, byte), byte as u32 - 4);
        for encoding in [Encoding::Utf8, Encoding::Utf16, Encoding::Utf32] {
            let column = encoding.column(line, byte);
            assert_eq!(encoding.byte(line, column), byte, "{encoding:?}");
        }
        // A column inside a surrogate pair lands on the character's start.
        assert_eq!(Encoding::Utf16.byte(line, 10), 9);
    }

    #[test]
    fn offsets_convert_positions_across_crlf_lines() {
        let text = "ab\r\nc𝄞d\n";
        assert_eq!(
            offset(text, Position::new(1, 3), Encoding::Utf16),
            4 + 1 + 4
        );
        assert_eq!(offset(text, Position::new(1, 5), Encoding::Utf8), 4 + 5);
        assert_eq!(
            offset(text, Position::new(9, 0), Encoding::Utf8),
            text.len()
        );
    }
}
